"""The study's pruner: a trial is stopped when it is surely worse than the best finished trial on the validation
questions, read as a confidence sequence (hyporag.eval.sequential), not when its running score dips under a median.

Every trial answers the same validation questions in the same seeded order and records each question's score (the
objective without accuracy's tie-break, in [0, 1]) in its `per_question` attribute. At each report the pruner pairs
the trial's scores with those of the best finished trial on the questions answered so far; the differences are
N values read without replacement from the N validation questions, so their sequence bounds the difference of
the two trials' final scores on exactly those questions, which is what the study compares. The trial is stopped
once the upper bound is below 0. The best trial a trial is compared with is fixed at its first report (a later best
is only higher), so each trial meets one sequence: a trial whose final score would be at least the best's is
stopped with probability at most alpha.

Optuna calls a pruner's `prune(study, trial)` and nothing else, so this one needs no import of Optuna (half a second)
where a study is not opened.
"""

from __future__ import annotations

from typing import Any

from hyporag.eval.sequential import BettingCS

VALUES_ATTR = "per_question"  # a trial's score on each validation question answered so far, in order


class SequentialPruner:
    def __init__(self, alpha: float = 0.05):
        self.alpha = alpha
        self._against: dict[int, int] = {}  # trial number -> the best trial it is compared with
        self._sequences: dict[int, tuple[BettingCS, int]] = {}  # trial number -> (its sequence, values read)
        self.reasons: dict[int, dict[str, Any]] = {}  # trial number -> why it was stopped

    def _best(self, study: Any, number: int) -> Any:
        from optuna.trial import TrialState

        if number in self._against:
            return study.get_trials(deepcopy=False)[self._against[number]]
        complete = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                    if t.user_attrs.get(VALUES_ATTR)]
        if not complete:
            return None
        best = max(complete, key=lambda t: (t.value, -t.number))
        self._against[number] = best.number
        return best

    def prune(self, study: Any, trial: Any) -> bool:
        """Optuna's question after each report: stop this trial (an optuna.Study's optuna.trial.FrozenTrial)?"""
        mine = trial.user_attrs.get(VALUES_ATTR) or []
        best = self._best(study, trial.number) if mine else None
        if best is None:
            return False
        theirs = best.user_attrs[VALUES_ATTR]
        if len(mine) > len(theirs):  # not the same validation questions: nothing to pair
            return False
        sequence, read = self._sequences.get(trial.number) or (
            BettingCS(-1.0, 1.0, self.alpha, population=len(theirs)), 0)
        for a, b in zip(mine[read:], theirs[read:len(mine)], strict=True):
            sequence.update(max(-1.0, min(1.0, a - b)))
        self._sequences[trial.number] = (sequence, len(mine))
        if sequence.upper >= 0:
            return False
        self.reasons[trial.number] = {"behind": best.number, "question": len(mine), "upper": round(sequence.upper, 4),
                                      "alpha": self.alpha}
        return True
