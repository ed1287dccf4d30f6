#!/usr/bin/env bash
# The paper protocol against fast with the embedded model, B = 3 and B = 5, on 60 MMLU-Med dev+val
# and 60 MedQA-US dev questions (tuning splits only). The slices grow ten questions at a time across all eight
# settings, so a stop at any point leaves paired results on the same questions; every eval resumes its own rows.
# Usage: bash bench/protocol_comparison.sh [OUT_ROOT=runs/protocols] [MAX=60] [STEP=10]
set -euo pipefail
out_root=${1:-runs/protocols}
max=${2:-60}
step=${3:-10}
hyporag=${HYPORAG:-.venv/bin/hyporag}
methods=cot,rag,rewrite,hcqr,chr
for ((limit = step; limit <= max; limit += step)); do
  for dataset in mmlu-med-dev,mmlu-med-val medqa-dev; do
    name=${dataset%%,*}; name=${name%-dev}
    for protocol in paper fast; do
      for budget in 3 5; do
        echo "== $(date -u +%FT%TZ) $name $protocol B=$budget limit=$limit"
        "$hyporag" eval --dataset "$dataset" --methods "$methods" --limit "$limit" --seed 0 --budget "$budget" \
          --retriever bm25 --protocol "$protocol" --out "$out_root/$name-$protocol-b$budget" > /dev/null
      done
    done
  done
done
echo "== $(date -u +%FT%TZ) done"
