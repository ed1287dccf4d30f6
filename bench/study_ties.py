"""How many trials of an Optuna study tie for best under plain accuracy, under hyporag's default objective
(accuracy with the reader's mean log p(gold) as a tie-break worth at most 0.001 a question) and under log p(gold)
alone, read from study journals written with the default objective (docs/results/margin.md, "Optimisers").

    python bench/study_ties.py --questions 16 runs/fit-mmlu-methods/candidates/*/study.journal

A trial's value is correct/n + 0.001 × mean scaled log p(gold); the questions it got right are floor(value × n) and
the log p(gold) part is what remains, so one study gives all three rankings without another LM call."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

TIE_BREAK = 1e-3  # hyporag.eval.dspy_metrics.TIE_BREAK


def rankings(values: list[float], n: int) -> dict[str, int]:
    """Trials tied for best under each objective."""
    correct = [math.floor(v * n + 1e-9) for v in values]
    belief = [round((v - c / n) / TIE_BREAK, 9) for v, c in zip(values, correct, strict=True)]
    best_correct, best_value, best_belief = max(correct), max(values), max(belief)
    return {"accuracy": sum(c == best_correct for c in correct),
            "accuracy + log p tie-break": sum(v == best_value for v in values),
            "log p(gold)": sum(b == best_belief for b in belief)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("journals", nargs="+", type=Path)
    parser.add_argument("--questions", type=int, required=True, help="validation questions each trial scored")
    parser.add_argument("--study", default="fit")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print("| study | finished trials | tied for best: accuracy | accuracy + log p tie-break | log p(gold) alone |")
    print("|---|---:|---:|---:|---:|")
    for journal in args.journals:
        study = optuna.load_study(study_name=args.study, storage=JournalStorage(JournalFileBackend(str(journal))))
        values = [t.value for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
        tied = rankings(values, args.questions)
        print(f"| {journal.parent.name} | {len(values)} | {tied['accuracy']} | {tied['accuracy + log p tie-break']} | "
              f"{tied['log p(gold)']} |")


if __name__ == "__main__":
    main()
