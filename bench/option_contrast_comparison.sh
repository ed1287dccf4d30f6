#!/usr/bin/env bash
# option-contrast against rag and chr with the embedded model under the fast protocol at B = 4, BM25 over the
# local corpus, on 60 MMLU-Med dev+val and 60 MedQA-US dev questions (tuning splits only). The slices grow STEP
# questions at a time across both datasets, so a stop at any point leaves paired results on the same questions;
# every eval resumes its own rows.
# Usage: bash bench/option_contrast_comparison.sh [OUT_ROOT=runs/option-contrast] [MAX=60] [STEP=10]
set -euo pipefail
out_root=${1:-runs/option-contrast}
max=${2:-60}
step=${3:-10}
hyporag=${HYPORAG:-.venv/bin/hyporag}
for ((limit = step; limit <= max; limit += step)); do
  for dataset in mmlu-med-dev,mmlu-med-val medqa-dev; do
    name=${dataset%%,*}; name=${name%-dev}
    echo "== $(date -u +%FT%TZ) $name limit=$limit"
    "$hyporag" eval --dataset "$dataset" --methods rag,chr,option-contrast --limit "$limit" --seed 0 --budget 4 \
      --retriever bm25 --protocol fast --out "$out_root/$name-b4" > /dev/null
  done
done
echo "== $(date -u +%FT%TZ) done"
