"""Metric functions shared by evaluation and optimization (DSPy metric signature: example, prediction, trace).

`accuracy` is exact match on the option letter; `dur` asks the context judge whether the retrieved context is
decision-useful; `combined` averages the two. `gepa_feedback` turns both into the textual feedback GEPA reflects on.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import dspy

from hyporag.eval.belief import decision_measures
from hyporag.eval.decision import LOG_P_FLOOR  # the optimisers clip log p(gold) where the reports do
from hyporag.eval.pulls import passage_pulls, pull_score
from hyporag.foundation.errors import ConfigError
from hyporag.foundation.judge_labels import DECISION_USEFUL

METRICS = ("accuracy", "dur", "combined")
OBJECTIVES = ("accuracy", "p-gold", "log-p-gold", "margin", "pull")
TIE_BREAK = 1e-3  # accuracy's tie-break weight: the continuous part never outweighs one question right or wrong


def accuracy(example: dspy.Example, prediction: dspy.Prediction, trace=None) -> float:
    return float(getattr(prediction, "answer", None) == example.answer)


def make_metric(name: str, judge: Callable | None = None) -> Callable:
    """The metric by name; `dur` and `combined` need a ContextJudge (one call per question, cached)."""
    if name not in METRICS:
        raise ConfigError(f"unknown metric {name!r}: use one of {', '.join(METRICS)}")
    if name == "accuracy":
        return accuracy
    if judge is None:
        raise ConfigError(f"metric {name!r} needs a judge LM")

    def utility(example: dspy.Example, prediction: dspy.Prediction) -> tuple[float, str, str]:
        passages = getattr(prediction, "passages", None) or []
        if not passages:
            return 0.0, "NotUseful", "no passages were retrieved"
        verdict = judge(question=example.question, options=example.options, answer=example.answer, passages=passages)
        return float(verdict.label in DECISION_USEFUL), verdict.label, verdict.reason

    def dur(example, prediction, trace=None) -> float:
        return utility(example, prediction)[0]

    def combined(example, prediction, trace=None) -> float:
        return 0.5 * accuracy(example, prediction) + 0.5 * utility(example, prediction)[0]

    metric = dur if name == "dur" else combined
    metric.utility = utility  # type: ignore[attr-defined]
    return metric


def gepa_feedback(metric: Callable) -> Callable:
    """GEPA's metric: a score plus feedback naming what went wrong (answer and, when judged, the context)."""

    def feedback_metric(gold, pred, trace=None, pred_name=None, pred_trace=None) -> dspy.Prediction:
        score = metric(gold, pred)
        right = accuracy(gold, pred) == 1.0
        verdict = "was correct" if right else f"was {pred.answer!r}; the correct option is {gold.answer}"
        parts = [f"The answer {verdict}."]
        if hasattr(metric, "utility"):
            _, label, reason = metric.utility(gold, pred)
            parts.append(f"The retrieved context was judged {label}: {reason}")
        if getattr(pred, "queries", None):
            parts.append("Queries issued: " + " | ".join(q[:120] for q in pred.queries))
        return dspy.Prediction(score=score, feedback=" ".join(parts))

    return feedback_metric


def objective_metric(objective: str, metric: Callable) -> Callable:
    """What an Optuna study maximises: `accuracy` (the metric, with the reader's mean log p_gold, clipped at
    −5 and scaled to [0, 1], as a tie-break worth at most 0.001 a question), `p-gold` (the reader's probability of
    the correct option: the deciding measure reports decide on by default), `log-p-gold` (that scaled log p_gold
    alone), `margin` (a logistic of log p_gold − the best other option's) or `pull` (the share of the question's
    passages that, read alone, pull the reader toward the gold option: eval.pulls; per-passage answers only). A
    question without option probabilities adds nothing continuous; so a backend without logprobs makes `accuracy`
    plain accuracy."""
    if objective not in OBJECTIVES:
        raise ConfigError(f"unknown objective {objective!r}: use one of {', '.join(OBJECTIVES)}")

    def belief(example: dspy.Example, prediction: dspy.Prediction) -> dict:
        return decision_measures(getattr(prediction, "option_logprobs", None),
                                 getattr(prediction, "option_logprob_status", None), example.answer)

    def scaled(log_p: float | None) -> float:
        return 0.0 if log_p is None else (max(log_p, LOG_P_FLOOR) - LOG_P_FLOOR) / -LOG_P_FLOOR

    def score(example: dspy.Example, prediction: dspy.Prediction, trace=None) -> float:
        measures = belief(example, prediction)
        if objective == "p-gold":
            return 0.0 if measures["p_gold"] is None else measures["p_gold"]
        if objective == "log-p-gold":
            return scaled(measures["log_p_gold"])
        if objective == "pull":
            pulls = passage_pulls(getattr(prediction, "passage_readings", None) or [],
                                  getattr(prediction, "closed_book", None), example.answer)
            return pull_score(pulls) or 0.0
        if objective == "margin":
            return 0.0 if measures["margin"] is None else 1.0 / (1.0 + math.exp(-measures["margin"]))
        return metric(example, prediction) + TIE_BREAK * scaled(measures["log_p_gold"])

    def tie_break(log_p_gold: float | None) -> float:
        """The continuous part of an `accuracy` score: a pruner comparing unfinished trials leaves it out, so a
        trial that ties the others on accuracy after a few questions is not stopped by a hair of belief."""
        return TIE_BREAK * scaled(log_p_gold) if objective == "accuracy" else 0.0

    score.objective = objective  # type: ignore[attr-defined]
    score.tie_break = tie_break  # type: ignore[attr-defined]
    return score
