#!/bin/bash
# The before/after-optimization measurement in README, for one method (chr or hcqr); bench/optimizer_table.py
# prints the table. Held-out: 20 mmlu-med-dev questions no optimizer sees; tuning: mmlu-med-val (30 train / 10 val).
# Re-running the script redoes only what is missing: an existing artifact is kept (its manifest holds what the
# optimization cost), evaluations resume, and LM calls come from DSPy's cache.
#     HYPORAG_LLAMA_THREADS=1 bench/optimizer_pipeline.sh chr & HYPORAG_LLAMA_THREADS=1 bench/optimizer_pipeline.sh hcqr
set -eu
M=$1
H=${HYPORAG:-.venv/bin/hyporag}
RUNS=${RUNS:-runs/opt}
ART=${ARTIFACTS:-artifacts}
SPLIT="--dataset mmlu-med-val --limit 40 --val-fraction 0.25 --seed 0"
HELD="--dataset mmlu-med-dev --limit 20 --seed 0"
step() { echo "=== $(date +%T) $*"; /usr/bin/time -f "=== wall %e s" "$@"; }
held_out() { step $H eval $HELD "$@"; }
once() { local out=${@: -1}; if [ -d "$out" ]; then echo "=== keep $out"; else step "$@"; fi; }
# BM25 throughout: the uncompiled program, Optuna over λ/schedule (CHR) or k/merge (HCQR), bootstrap, GEPA.
held_out --methods $M --budget 3 --retriever bm25 --out $RUNS/$M-before
once $H tune --method $M --study $M-val --trials 6 $SPLIT --budget 3 --retriever bm25 --out $ART/$M-optuna
held_out --program $ART/$M-optuna --budget 3 --retriever bm25 --out $RUNS/$M-optuna
once $H compile --method $M $SPLIT --budget 3 --retriever bm25 --optimizer bootstrap --max-demos 2 \
    --out $ART/$M-bootstrap
held_out --program $ART/$M-bootstrap --budget 3 --retriever bm25 --out $RUNS/$M-bootstrap
once $H compile --method $M $SPLIT --budget 3 --retriever bm25 --optimizer gepa --max-metric-calls 20 \
    --out $ART/$M-gepa
held_out --program $ART/$M-gepa --budget 3 --retriever bm25 --out $RUNS/$M-gepa
# Second Optuna pass: the study may also choose the retriever (BM25, MiniLM dense, hybrid RRF).
once $H tune --method $M --study $M-val-modes --trials 8 $SPLIT --budget 3 --modes bm25,dense,hybrid \
    --out $ART/$M-optuna-modes
held_out --program $ART/$M-optuna-modes --budget 3 --out $RUNS/$M-optuna-modes
