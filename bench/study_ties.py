"""How many trials of an Optuna study tie for best under plain accuracy, under hyporag's default objective
(accuracy with the reader's mean log p(gold) as a tie-break worth at most 0.001 a question) and under log p(gold)
alone, read from study journals written with the default objective (docs/results/margin.md, "Optimisers").

    python bench/study_ties.py --questions 16 runs/fit-mmlu-methods/candidates/*/study.journal

Trials keep their accuracy and mean clipped log p(gold) as attributes, whatever objective the study ran under. For
older journals without them, a default-objective trial's value is correct/n + 0.001 × mean scaled log p(gold): the
questions it got right are floor(value × n) and the log p(gold) part is what remains; a journal of another
objective without the attributes is refused rather than misread."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

from hyporag.eval import TIE_BREAK


def decoded(values: list[float], n: int) -> list[tuple[float, float]]:
    """(accuracy, belief) of default-objective trials, from their values alone."""
    correct = [math.floor(v * n + 1e-9) for v in values]
    return [(c / n, round((v - c / n) / TIE_BREAK, 9)) for v, c in zip(values, correct, strict=True)]


def rankings(scores: list[tuple[float, float]]) -> dict[str, int]:
    """Trials tied for best under each objective, from each trial's (accuracy, belief)."""
    best_accuracy, best_pair, best_belief = max(a for a, _ in scores), max(scores), max(b for _, b in scores)
    return {"accuracy": sum(a == best_accuracy for a, _ in scores),
            "accuracy + log p tie-break": sum(pair == best_pair for pair in scores),
            "log p(gold)": sum(b == best_belief for _, b in scores)}


def plan_objective(journal: Path) -> str:
    """A fit candidate's objective from the fit.json beside its journal (journals from before studies recorded it)."""
    plan = journal.parent / "fit.json"
    return json.loads(plan.read_text()).get("plan", {}).get("objective", "accuracy") if plan.is_file() else "accuracy"


def trial_scores(study, journal: Path, n: int) -> list[tuple[float, float]]:
    trials = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    if trials and all("accuracy" in t.user_attrs for t in trials):
        return [(t.user_attrs["accuracy"], t.user_attrs["log_p_gold_clipped"] or -math.inf) for t in trials]
    objective = (study.user_attrs.get("hyporag_identity") or {}).get("objective") or plan_objective(journal)
    if objective != "accuracy":
        raise SystemExit(f"study {study.study_name!r} ran under {objective} and its trials keep no accuracy: "
                         "its values cannot be read back as accuracy")
    return decoded([t.value for t in trials], n)


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
        if not journal.is_file():
            raise SystemExit(f"{journal}: no such study journal")
        storage = JournalStorage(JournalFileBackend(str(journal)))
        names = optuna.get_all_study_names(storage)
        if args.study not in names:
            raise SystemExit(f"{journal}: no study named {args.study!r} (it holds: {', '.join(sorted(names))}); "
                             "give --study")
        study = optuna.load_study(study_name=args.study, storage=storage)
        scores = trial_scores(study, journal, args.questions)
        tied = rankings(scores)
        label = journal.parent.name if journal.stem == "study" else journal.stem  # fit's candidates: the folder
        print(f"| {label} | {len(scores)} | {tied['accuracy']} | {tied['accuracy + log p tie-break']} | "
              f"{tied['log p(gold)']} |")


if __name__ == "__main__":
    main()
