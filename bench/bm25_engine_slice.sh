#!/usr/bin/env bash
# The accuracy check an engine switch needs: rag and chr with the embedded model under the fast protocol at B = 4,
# BM25 over the local corpus, on MedQA-US dev questions (a tuning split), once on a bm25s index and once on a
# tantivy index of the same corpus. The slice grows STEP questions at a time on both engines, so a stop at any point
# leaves paired results on the same questions; every eval resumes its own rows. Ends with the paired table
# (bench/bm25_engine_slice_table.py).
# Usage: bash bench/bm25_engine_slice.sh [OUT_ROOT=runs/bm25-engine-slice] [MAX=60] [STEP=10]
set -euo pipefail
out_root=${1:-runs/bm25-engine-slice}
max=${2:-60}
step=${3:-10}
hyporag=${HYPORAG:-.venv/bin/hyporag}
for engine in bm25s tantivy; do  # one index per engine, same corpus (built once; a finished one is reused)
  "$hyporag" index build --corpus medcorp-local --index-dir "$out_root/index-$engine" --bm25-engine "$engine" >&2
done
for ((limit = step; limit <= max; limit += step)); do
  for engine in bm25s tantivy; do
    echo "== $(date -u +%FT%TZ) $engine limit=$limit"
    "$hyporag" eval --dataset medqa-dev --methods rag,chr --limit "$limit" --seed 0 --budget 4 --retriever bm25 \
      --protocol fast --index-dir "$out_root/index-$engine" --bm25-engine "$engine" \
      --out "$out_root/$engine" > /dev/null
  done
done
echo "== $(date -u +%FT%TZ) done"
"${PYTHON:-.venv/bin/python}" bench/bm25_engine_slice_table.py "$out_root"
