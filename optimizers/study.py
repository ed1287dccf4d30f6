"""Numeric tuning with our own Optuna study: λ or its schedule, per-query k, merge policy, retriever mode.

DSPy's BootstrapFewShotWithOptuna keeps an in-memory, unseeded study that cannot resume; this study is seeded
(TPE), stops a trial once it is surely worse than the best (optimizers.sequential_pruner), and lives in a journal
file by default (any RDB URL for several machines). A trial left RUNNING by a killed worker on this host is marked
failed and its parameters are queued again, so a re-run of the same command finishes the study.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from pathlib import Path

from hyporag.eval.decision import LOG_P_FLOOR
from hyporag.eval.engine import answer_all
from hyporag.foundation.errors import HyporagError
from hyporag.optimizers.sequential_pruner import VALUES_ATTR
from hyporag.optimizers.study_storage import (
    claim,
    heartbeat,
    open_study,
    quiet_optuna,
    recover_stale_trials,
    worker_id,
)
from hyporag.programs.config import ProgramConfig
from hyporag.programs.registry import make_program

__all__ = ["best_program", "best_trial", "open_study", "recover_stale_trials", "run_study", "score_trial",
           "study_report", "variant"]


def variant(base, roles, config: ProgramConfig):
    """`base` with another config, keeping its tuned prompts and demos (one per Optuna trial)."""

    program = make_program(base.method, retriever=base.retriever, roles=roles, config=config)
    program.load_state(base.dump_state())
    return program


def best_program(study, base, roles, modes: list[str]):
    """The best finished trial and `base` rebuilt with its parameters (through the config's own search space,
    so the parameters map back exactly as they were suggested)."""
    import optuna

    best = best_trial(study)
    return best, variant(base, roles, base.config.suggest(optuna.trial.FixedTrial(best.params), modes))


def best_trial(study):
    """The highest-scoring finished trial, the earliest winning ties (trial 0 is the untuned program)."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    if not complete:
        failed = [t for t in trials if t.state == TrialState.FAIL and t.user_attrs.get("error")]
        why = f"; {len(failed)} failed, first error: {failed[0].user_attrs['error']}" if failed else ""
        raise HyporagError(f"study {study.study_name!r} has no finished trial yet{why}")
    return max(complete, key=lambda t: (t.value, -t.number))


class TrialFailed(Exception):
    """Every validation question of a trial errored: a program bug, not a 0 score. The trial is FAIL, with the
    first error in its `error` attribute and printed, and the study goes on."""



def score_trial(program: Callable, valset: list, metric, trial, threads: int = 1, report_every: int = 5,
                progress: bool = False) -> float:
    """Mean metric over `valset`, run `report_every` questions at a time (in `threads`) so the pruner can stop a
    hopeless trial between chunks; it reads each question's score without accuracy's tie-break (which is for
    choosing among finished trials), in `valset`'s order. Errors score 0 and are counted in the trial's `errors`
    attribute."""
    import optuna
    from tqdm import tqdm

    total, errors, done, correct, beliefs = 0.0, [], 0, 0, []
    scored: dict[str, float] = {}  # question id -> its score without the tie-break
    tie_break = getattr(metric, "tie_break", lambda _: 0.0)
    primary = 0.0  # the score without accuracy's tie-break: what the pruner compares
    with tqdm(total=len(valset), desc=f"trial {trial.number}", unit="answer", leave=False,
              disable=not progress) as bar:
        for start in range(0, len(valset), report_every):
            for row in answer_all({"trial": program}, valset[start:start + report_every], threads, metric=metric,
                                sink=lambda _: bar.update(1)):
                total += row["score"]
                primary += row["score"] - tie_break(row.get("log_p_gold"))
                scored[row["question_id"]] = round(row["score"] - tie_break(row.get("log_p_gold")), 6)
                done += 1
                correct += bool(row.get("correct"))
                if row.get("log_p_gold") is not None:
                    beliefs.append(max(row["log_p_gold"], LOG_P_FLOOR))
                if row["error"]:
                    errors.append(row["error"])
            trial.set_user_attr("errors", len(errors))
            trial.set_user_attr(VALUES_ATTR, [scored[e.id] for e in valset[:done]])
            if errors and len(errors) == done:
                trial.set_user_attr("error", errors[0])
            if done < len(valset):
                trial.report(round(primary / done, 9), step=done)
                if trial.should_prune():
                    reason = getattr(trial.study.pruner, "reasons", {}).get(trial.number)
                    if reason:
                        trial.set_user_attr("pruned", reason)
                    raise optuna.TrialPruned()
    if errors and len(errors) == len(valset):
        raise TrialFailed(f"trial {trial.number}: all {len(valset)} questions errored; first: {errors[0]}")
    # whatever the objective, each trial keeps its accuracy and the reader's belief: a study reads under any of them
    trial.set_user_attr("accuracy", correct / len(valset))
    trial.set_user_attr("log_p_gold_clipped", sum(beliefs) / len(beliefs) if beliefs else None)
    trial.set_user_attr("with_probabilities", len(beliefs))
    return total / len(valset)


def run_study(study, base: ProgramConfig, make: Callable[[ProgramConfig], Callable], valset: list, metric,
              modes: list[str], trials: int, threads: int = 1, report_every: int = 5, log=print,
              default_mode: str | None = None, poll_seconds: float = 1.0, progress: bool = False) -> int:
    """Run trials until the study holds `trials` finished ones; returns how many failed in this worker.

    Several workers may run this on one study at once: each claims a trial only while finished + running trials
    are fewer than `trials` (under `claim`), and waits while the rest are running elsewhere, taking over a dead
    worker's trial when it is re-queued. The search space is `base.suggest` (the method's config); `base` itself,
    the untuned program, is queued once as the first trial.
    A worker whose own trials failed `trials` times stops: a broken program fails every trial alike."""
    import optuna
    from optuna.trial import TrialState

    failed = 0
    while True:
        with claim(study):
            recovered = recover_stale_trials(study)
            if recovered:
                log(f"hyporag: re-queued {recovered} trial(s) left running by a dead worker")
            if not study.trials:
                study.enqueue_trial(base.trial_params(default_mode or modes[0], modes))
            states = [t.state for t in study.get_trials(deepcopy=False)]
            finished = states.count(TrialState.COMPLETE) + states.count(TrialState.PRUNED)
            if finished >= trials or failed >= trials:  # done, or as broken as it is going to get
                return failed
            busy = finished + states.count(TrialState.RUNNING) >= trials
            with quiet_optuna():
                trial = None if busy else study.ask()
        if trial is None:  # the last trials are running in other workers: wait for them (or for their retry)
            time.sleep(poll_seconds)
            continue
        trial.set_user_attr("worker", worker_id())
        with heartbeat(study, trial):
            try:
                value = score_trial(make(base.suggest(trial, modes)), valset, metric, trial, threads, report_every,
                                    progress)
            except optuna.TrialPruned:
                study.tell(trial, state=TrialState.PRUNED)
                continue
            except TrialFailed as exc:
                failed += 1
                log(f"hyporag: {exc}")
                study.tell(trial, state=TrialState.FAIL)
                continue
            except BaseException:
                study.tell(trial, state=TrialState.FAIL)
                raise
        study.tell(trial, value)
        log(f"trial {trial.number}: {value:.3f} with {trial.params}")


def study_report(study, out_dir: Path, top: int = 5) -> list[dict]:
    """Best trials as dicts, plus optimization history and parameter importance PNGs when plotting works."""
    from optuna.trial import TrialState

    complete = [t for t in study.get_trials(deepcopy=False) if t.state == TrialState.COMPLETE]
    best = sorted(complete, key=lambda t: -(t.value or 0.0))[:top]
    rows = [{"trial": t.number, "value": t.value, "params": t.params} for t in best]
    out_dir.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(Exception):  # plots are a convenience; the table is the report
        _save_plots(study, out_dir, with_importance=len(complete) >= 2)
    return rows


def _save_plots(study, out_dir: Path, with_importance: bool) -> None:
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization.matplotlib import plot_optimization_history, plot_param_importances

    with warnings.catch_warnings():  # Optuna's experimental-API and small-sample notices say nothing to act on
        warnings.simplefilter("ignore")
        plot_optimization_history(study)
        plt.gcf().savefig(out_dir / f"{study.study_name}-history.png", dpi=110, bbox_inches="tight")
        plt.close("all")
        if with_importance:
            plot_param_importances(study)
            plt.gcf().savefig(out_dir / f"{study.study_name}-importance.png", dpi=110, bbox_inches="tight")
            plt.close("all")
