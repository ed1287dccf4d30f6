"""The study's pruner on confidence sequences: a trial that ends better than the best but starts badly is never
stopped; a trial surely worse is stopped, early; over many seeded orders a trial that in fact ties the best is
stopped in at most alpha of them."""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from hyporag.optimizers.sequential_pruner import VALUES_ATTR, SequentialPruner

optuna.logging.set_verbosity(optuna.logging.WARNING)


def study_with_best(values: list[float], pruner: SequentialPruner) -> optuna.Study:
    study = optuna.create_study(direction="maximize", pruner=pruner)
    study.add_trial(optuna.trial.create_trial(value=float(np.mean(values)), user_attrs={VALUES_ATTR: values}))
    return study


def run_trial(study: optuna.Study, values: list[float], every: int = 5) -> int | None:
    """Report `values` `every` at a time as score_trial does; the question count it was stopped at, else None."""
    trial = study.ask()
    for done in range(every, len(values), every):
        trial.set_user_attr(VALUES_ATTR, values[:done])
        trial.report(float(np.mean(values[:done])), step=done)
        if trial.should_prune():
            study.tell(trial, state=optuna.trial.TrialState.PRUNED)
            return done
    study.tell(trial, float(np.mean(values)))
    return None


def test_a_better_trial_that_starts_badly_is_not_stopped_and_a_surely_worse_one_is():
    best = [1.0, 0.0] * 40  # 50% on 80 questions
    pruner = SequentialPruner()
    study = study_with_best(best, pruner)
    late_bloomer = [0.0] * 12 + [1.0] * 68  # wrong on the first 12 (where the best is right on 6): 85% in the end
    assert run_trial(study, late_bloomer) is None
    study = study_with_best(best, SequentialPruner())
    hopeless = [0.0] * 80
    stopped = run_trial(study, hopeless)
    assert stopped is not None and stopped <= 40
    reason = study.pruner.reasons[1]
    assert reason["behind"] == 0 and reason["question"] == stopped and reason["upper"] < 0
    # the median rule this replaces would have stopped the late bloomer after its first 5 questions
    median = optuna.create_study(direction="maximize", pruner=optuna.pruners.MedianPruner(n_startup_trials=1))
    median.add_trial(optuna.trial.create_trial(value=0.5, intermediate_values={5: 0.6, 10: 0.5}))
    trial = median.ask()
    trial.report(0.0, step=5)
    assert trial.should_prune()


def test_a_trial_without_recorded_questions_or_a_best_with_them_is_never_stopped():
    study = optuna.create_study(direction="maximize", pruner=SequentialPruner())
    study.add_trial(optuna.trial.create_trial(value=0.9))  # an older study's trial: no per-question scores
    assert run_trial(study, [0.0] * 60) is None


@pytest.mark.parametrize("every", [1, 5])
def test_a_trial_that_ties_the_best_is_stopped_in_at_most_alpha_of_the_orders(every):
    """300 seeded orders of 60 validation questions; the trial and the best each right on 30, on different
    questions (the hardest case: every pair discordant). The trial is in fact not worse, so a stop is an error."""
    rng = np.random.default_rng(3)
    stopped = 0
    for _ in range(300):
        order = rng.permutation(60)
        best = [1.0 if i < 30 else 0.0 for i in order]
        trial = [0.0 if i < 30 else 1.0 for i in order]
        study = study_with_best(best, SequentialPruner(alpha=0.05))
        stopped += run_trial(study, trial, every) is not None
    assert stopped / 300 <= 0.05
