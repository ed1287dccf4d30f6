"""`hyporag fit --methods rag,hcqr,chr,option-contrast`: which retrieval program to ship for your questions, corpus
and model, and how sure that is.

Stages (each recorded in `<out>/fit.json`, so a killed fit resumes): race (every candidate's untuned program on
the validation questions, one the betting test finds worse than another dropped there: hyporag.jobs.fit_race) →
candidates (each survivor's own fit through freeze in `<out>/candidates/<method>/`: the
same seeded split, tuned numbers, compiled prompts) → validate (every survivor and cot on the validation questions;
one chosen by the rule in `optimizers.selection`, on the same sequences) → evaluate (the chosen program, rag, cot
and the runner-up on held-out, paired) → freeze (`<out>/artifact`, recording every candidate's scores and the rule)
→ report. Before the first LM call the whole job's cost is printed; `max_minutes` stops it at a stage boundary.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

from hyporag.eval.results_store import read_results
from hyporag.foundation.errors import BackendError, ConfigError, HyporagError
from hyporag.jobs.builders import build_program, build_retriever
from hyporag.jobs.evaluate import as_roles, run_evaluation, run_record
from hyporag.jobs.fit_plan import Deadline, FitPlan, FitResult, FitState, fit_questions, run_stage
from hyporag.jobs.fit_race import race, race_is_possible
from hyporag.jobs.fit_report import confirmation, write_candidates_report
from hyporag.jobs.optimizing import refuse_unreadable_objective, tune_modes
from hyporag.jobs.run_config import RunConfig
from hyporag.jobs.settings import FitSettings
from hyporag.jobs.speed import record_run_speed, seconds_per_call
from hyporag.optimizers.artifact import frozen_config, load_artifact, read_artifact_manifest, save_artifact
from hyporag.optimizers.selection import SelectionRule, select
from hyporag.optimizers.splits import questions_fingerprint, refuse_test_split, three_way_split
from hyporag.programs.base import expected_calls
from hyporag.programs.registry import method_entry

DEFAULT_CANDIDATES = ("rag", "hcqr", "chr", "option-contrast")
STAGES = ("race", "candidates", "validate", "evaluate", "freeze", "report")
REFERENCE = "cot"  # always measured: the same reader without retrieval


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def cost_estimate(methods: list[str], sizes: dict[str, int], settings: FitSettings,
                  speed: tuple[float, int] | None, budget: int | None = None,
                  per_question: dict[str, float] | None = None) -> dict:
    """LM calls the whole job will make (each method's calls per question under its config, else its declared
    count, × questions × passes), and the time at this machine's measured seconds per call for the model, when one
    was measured before."""
    per_question = {m: (per_question or {}).get(m, method_entry(m).program.estimated_calls) for m in methods}
    calls: dict[str, dict[str, float]] = {}
    for method in methods:  # at most: the race may stop a candidate early, and spare its tuning
        each = per_question[method]
        calls[method] = {"race": sizes["val"] * each, "tune": max(0, settings.trials - 1) * sizes["val"] * each,
                         "compile": 0.0 if settings.optimizer is None else sizes["train"] * each,
                         "validate": sizes["val"] * each}
    most = max(per_question.values())
    shared = {"validate cot": float(sizes["val"]), "held-out (chosen, rag, cot, runner-up)": sizes["heldout"] * (
        2 + 2 * most)}
    total = sum(sum(c.values()) for c in calls.values()) + sum(shared.values())
    per_call, measured_at = speed or (None, None)
    minutes = total * per_call / 60 if per_call else None
    where = "" if measured_at == budget else f" (measured at B = {measured_at}, this fit runs B = {budget})"
    text = (f"fit plan: {len(methods)} candidates ({', '.join(methods)}) + {REFERENCE} on {sizes['train']} train / "
            f"{sizes['val']} validation / {sizes['heldout']} held-out questions; {settings.trials} trials each"
            f"{'' if settings.optimizer is None else f', prompts by {settings.optimizer}'}: at most {total:,.0f} LM "
            "calls (" + ", ".join(f"{m} {sum(c.values()):,.0f}" for m, c in calls.items()) + ", shared "
            f"{sum(shared.values()):,.0f}); " + (f"about {minutes:,.0f} min at {per_call:.1f} s per call, measured for "
                                                  f"this model on this machine{where}" if minutes is not None else
                                                  "time unknown until this model has run here once (each stage's time "
                                                  "is printed as it ends)") + " (cached calls cost nothing)")
    if settings.max_minutes is not None and minutes is not None and minutes > settings.max_minutes:
        text += (f"; --max-minutes {settings.max_minutes:g} cannot be met: the fit will stop at a stage boundary "
                 "after it, and the same command resumes it")
    elif settings.max_minutes is not None and minutes is None:
        text += f"; whether --max-minutes {settings.max_minutes:g} can be met is unknown until the model has run here"
    return {"calls": round(total), "per_candidate": calls, "shared": shared, "minutes": minutes, "text": text}


def too_few_hint(rule: SelectionRule, splits: tuple[float, float, float], n: int, candidates: int = 2) -> str:
    """What would let the rule decide: a larger validation share of these questions, or a dev set of the size that
    gives the split its decisive minimum."""
    needed = rule.smallest_decisive(candidates)
    share = min(0.6, needed / n + 1e-9) if n else 0.6
    train = round((1 - share) * splits[0] / (splits[0] + splits[2]), 2)
    hint = f"a dev set of at least {math.ceil(needed / splits[1])} questions at these splits"
    if n * share >= needed:
        hint = f"--splits {train:g},{share:.2f},{1 - train - share:.2f}, or " + hint
    return f"Give {hint}."


def fit_candidates(settings: FitSettings, run: RunConfig, roles, fit_one: Callable, deadline: Deadline) -> FitResult:
    methods = list(dict.fromkeys(settings.methods))
    for method in methods:  # an unknown candidate is refused before anything is built or called
        method_entry(method)
    if run.control.program:
        raise ConfigError("fit: --program starts one method's fit; give it with --method, not --methods")
    if not run.data.dataset or not settings.out:
        raise HyporagError("fit needs --dataset (your dev set) and --out (the fit directory to write)")
    refuse_test_split(run.data.dataset, settings.allow_test)
    roles = as_roles(roles, run)
    _, examples, out = fit_questions(settings, run)
    plan = FitPlan.of(settings, run, ",".join(methods), questions_fingerprint(examples))
    state = FitState(out, plan)
    parts = three_way_split(examples, settings.splits, run.data.seed)
    budget = run.config_for(methods[0]).budget
    per_question = {m: expected_calls(method_entry(m).program, run.config_for(m)) for m in methods}
    estimate = cost_estimate(methods, {k: len(v) for k, v in parts.items()}, settings,
                             seconds_per_call(roles, budget), budget, per_question)
    _log(estimate["text"])
    rule = SelectionRule(simplest=run.control.baseline, max_calls_per_question=settings.max_calls_per_question)
    blind = rule.undecidable(len(parts["val"]), len(methods))
    if blind:
        _log(f"fit: warning: {blind}; so only {rule.simplest} is tuned (no other candidate could be chosen). "
             + too_few_hint(rule, settings.splits, len(examples), len(methods)))
    state.data["estimate"] = {k: v for k, v in estimate.items() if k != "text"}
    state.data.pop("stopped", None)
    retriever = build_retriever(run, any(method_entry(m).program.uses_retrieval for m in (*methods, rule.simplest)))
    for method in methods:  # an objective a candidate's study cannot move is refused before the race, not mid-fit
        probe = build_program(method, run, retriever if method_entry(method).program.uses_retrieval else None, roles)
        refuse_unreadable_objective(settings.objective, probe, tune_modes(probe, settings.modes))
    chosen_before = state.done("validate")
    if chosen_before is not None and chosen_before.get("rule") != rule.to_dict():  # a rule given on resume applies
        then = SelectionRule(**{k: v for k, v in chosen_before.get("rule", {}).items() if k != "text"})
        changed = ", ".join(f"{k} {getattr(then, k)!r} then, {getattr(rule, k)!r} now" for k in
                            ("simplest", "alpha", "max_calls_per_question") if getattr(then, k) != getattr(rule, k))
        _log(f"fit: the selection rule changed ({changed}): racing and choosing again (the answers are kept), then "
             "held-out, freeze and report again")
        state.forget(("race", "candidates", "validate", "evaluate", "freeze", "report"))
    capped = [m for m in methods if m != rule.simplest and rule.max_calls_per_question is not None
              and per_question[m] > rule.max_calls_per_question]  # never shippable: not raced
    racing = [m for m in methods if m not in capped] or [rule.simplest]
    simplest = rule.simplest if rule.simplest in racing else min(
        racing, key=lambda m: (per_question[m], racing.index(m)))
    if blind:  # the pick cannot leave the simplest: tuning the others would buy nothing
        racing = [simplest]
    pointless = race_is_possible(len(racing), len(parts["val"]), rule.alpha) if len(racing) > 1 else None
    if pointless:
        _log(f"fit: {pointless}")
    # validation alone races: its untuned answers are each study's trial 0, so a race costs no extra call
    raced = run_stage(state, "race", lambda: {**({"summary": f"skipped: {pointless}", "survivors": racing,
                                                  "dropped": {}, "questions": {}, "calls": {}, "alpha": rule.alpha,
                                                  "pairs": 0, "race_questions": 0, "skipped": pointless}
                                                 if pointless else
                                                 race(racing, parts["val"], out / "race", run, roles, retriever,
                                                      rule.alpha, run.control.threads, simplest)),
                                              "capped": capped, "not_tuned_too_few": blind is not None},
                      _log, STAGES, deadline)
    failed = {} if state.done("candidates") else fit_each(raced["survivors"], simplest, settings, run, roles, fit_one,
                                                          deadline, out)
    cost = run_stage(state, "candidates", lambda: _candidates_record(out, raced["survivors"], failed), _log, STAGES)
    survivors = [m for m in raced["survivors"] if m not in (cost.get("failed") or {})]
    val, heldout = parts["val"], parts["heldout"]

    def frozen(method: str):
        return load_artifact(out / "candidates" / method / "artifact", retriever, roles)

    def evaluated(programs: dict, questions: list, where: Path) -> list[dict]:
        configs = {m: frozen_config(out / "candidates" / m / "artifact") if m in survivors else run.config_for(m)
                   for m in programs}
        recorded = {"dataset": run.data.dataset, "n": len(questions), "seed": run.data.seed,
                    **run_record(programs, roles, retriever, configs), "fit": str(out)}
        report = run_evaluation(programs, questions, where, recorded, threads=run.control.threads, progress=True)
        record_run_speed(roles, report, recorded)  # the next fit's estimate learns from this one
        return read_results(where)

    def validate() -> dict:
        programs = {m: frozen(m) for m in survivors}
        programs[REFERENCE] = build_program(REFERENCE, run, None, roles)
        chosen = select([r for r in evaluated(programs, val, out / "validation") if r["method"] in survivors],
                        survivors, rule, run.data.seed,
                        {m: per_question[m] for m in survivors}, [e.id for e in val])
        chosen["verdicts"].update(dict.fromkeys(raced.get("capped") or [], "over the LM-call cap"))
        return {"summary": f"chosen {chosen['chosen']} (runner-up {chosen['runner_up']}) on {len(val)} validation "
                           "questions", **chosen}

    selection = run_stage(state, "validate", validate, _log, STAGES, deadline)
    chosen, runner_up = selection["chosen"], selection["runner_up"]

    def confirm_on_heldout() -> dict:
        names = list(dict.fromkeys([chosen, rule.simplest, REFERENCE, *([runner_up] if runner_up else [])]))
        programs = {m: frozen(m) if m in survivors else build_program(
            m, run, retriever if method_entry(m).program.uses_retrieval else None, roles) for m in names}
        rows = evaluated(programs, heldout, out / "heldout")
        return {"summary": f"held-out {len(heldout)}: " + ", ".join(
            f"{m} {sum(r['correct'] for r in rows if r['method'] == m) / len(heldout):.3f}" for m in names),
                "accuracy": {m: sum(r["correct"] for r in rows if r["method"] == m) / len(heldout) for m in names},
                "confirmation": confirmation(rows, chosen, rule.simplest, run.data.seed, alone=len(survivors) == 1)}

    run_stage(state, "evaluate", confirm_on_heldout, _log, STAGES, deadline)

    def freeze_choice() -> dict:
        program = frozen(chosen)
        earlier = read_artifact_manifest(out / "candidates" / chosen / "artifact")
        keep = {k: earlier[k] for k in ("optimizer", "metric", "objective", "splits", "validation", "cost")
                if k in earlier}
        record = {"candidates": methods, "survivors": survivors, "race": {k: raced[k] for k in (
            "dropped", "questions", "calls", "alpha")}, "chosen": chosen, "runner_up": runner_up,
                  "rule": rule.to_dict(), "validation": selection["scores"], "verdicts": selection["verdicts"]}
        save_artifact(out / "artifact", program, retriever, roles.specs(), {**keep, "selection": record})
        return {"summary": f"{chosen} frozen to {out / 'artifact'}", "artifact": str(out / "artifact")}

    run_stage(state, "freeze", freeze_choice, _log, STAGES)
    run_stage(state, "report", lambda: write_candidates_report(out, state, methods), _log, STAGES)
    return FitResult(out, state.data)


def fit_each(methods: list[str], simplest: str, settings: FitSettings, run: RunConfig, roles, fit_one: Callable,
             deadline: Deadline, out: Path) -> dict[str, str]:
    """Each candidate's own fit through freeze; the candidates whose fit failed, with why. One candidate's failure
    (every trial errored) costs the fit that candidate, not the others' work."""
    failed: dict[str, str] = {}
    for number, method in enumerate(methods, start=1):
        deadline.check(f"candidate {method}")
        _log(f"fit: candidate {method} ({number} of {len(methods)} left after the race)")
        try:
            fit_one(settings.replace(method=method, methods=(), out=str(out / "candidates" / method)), run, roles,
                    through="freeze", deadline=deadline)
        except HyporagError as exc:
            if method == simplest or isinstance(exc, (ConfigError, BackendError)):
                raise  # the pick is measured against the simplest; a setting or a dead backend fails every one
            failed[method] = str(exc).splitlines()[0][:300]
            _log(f"fit: candidate {method} dropped: its fit failed ({failed[method]}); the fit goes on without it")
    return failed


def _candidates_record(out: Path, methods: list[str], failed: dict[str, str]) -> dict:
    """Each candidate's stages (seconds and LM calls), read from its own fit.json: the cost split; and the
    candidates whose fit failed, with why (they are not validated, chosen or frozen)."""
    cost = {}
    for method in methods:
        stages = json.loads((out / "candidates" / method / "fit.json").read_text(encoding="utf-8"))["stages"]
        cost[method] = {name: {"seconds": s.get("seconds", 0), "lm_calls": s.get("lm_calls", 0)}
                        for name, s in stages.items()}
    done = len(methods) - len(failed)
    return {"summary": f"{done} tuned and frozen" + "".join(f"; {m} failed ({why})" for m, why in failed.items()),
            "cost": cost, "failed": failed}
