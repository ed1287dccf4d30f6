"""How a program's answer step reads its passages: one class per answer mode, chosen in one place (`answer_mode_for`
from the program's config), each owning its calls, its search space, the row fields it fills and the cost note a run
prints. A program's `forward` is the same for every mode: the closed-book reading when the mode or the retrieval
needs it, then retrieve, then read.

- `joint`: one answer call with every passage (the papers' reader).
- `per-passage`: each passage read alone beside the closed-book answer, the readings mixed into one distribution
  (programs.per_passage, programs.mixture).
- closed-book first (`retrieve_below` P, around either): the closed-book answer stands where the reader's top option
  probability is at least P; below it the inner mode reads the passages.

A new mode is a subclass registered in ANSWER_MODES (and, should it add a row field, that field in eval.row): the
programs, the engine, the study and the reports need no change.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from hyporag.programs.answer_step import format_context
from hyporag.programs.mixture import MIX_RULES
from hyporag.programs.per_passage import Reading, combine, read_each
from hyporag.retrieval.hit import Hit

Result = dict[str, Any]  # the answer step's fields: answer, parse_failure, reply, reasoning, option probabilities


def answer_fields(answer: str | None, parse_failure: bool, option_logprobs: dict | None, status: str | None,
                  reply: str | None = None, reasoning: str | None = None) -> Result:
    """The answer step's fields, whichever reading answered (joint, mixed readings or the closed-book reading)."""
    return {"answer": answer, "parse_failure": parse_failure, "reply": reply, "reasoning": reasoning,
            "option_logprobs": option_logprobs, "option_logprob_status": status}


def closed_book_answer(reading: Reading) -> Result:
    return answer_fields(reading.answer, reading.parse_failure, reading.option_logprobs, reading.status)


class AnswerMode:
    """One way to read a question's passages. `needs_closed_book`: the program reads the closed-book answer before
    retrieval and hands it over (it is then read once, shared with the retrieval side)."""

    name: ClassVar[str] = "base"
    needs_closed_book: ClassVar[bool] = False

    def __init__(self, config: Any):
        self.config = config

    def calls(self, budget: int) -> float:
        """Answer-step calls a question that retrieves costs under this mode (the closed-book reading included)."""
        raise NotImplementedError

    def retrieves(self, closed_book: Reading | None, trace: Any) -> bool:
        """Whether this question reads passages at all (closed-book first may say no)."""
        return True

    def read(self, step: Any, question: str, options: dict[str, str], passages: Sequence[Hit],
             closed_book: Reading | None, preface: str, trace: Any) -> tuple[Result, dict[str, Any]]:
        """(the answer step's fields, this mode's own row fields)."""
        raise NotImplementedError

    def suggest(self, config: Any, trial: Any) -> Any:
        """The config with the trial's choices for this mode's own numbers (none by default)."""
        return config

    def trial_params(self, config: Any) -> dict[str, Any]:
        return {}

    def note(self, name: str, joint_calls: float, calls: float) -> str | None:
        """What this mode costs a question against the joint answer, said before a run (None: nothing to say)."""
        return None


class Joint(AnswerMode):
    name = "joint"

    def calls(self, budget: int) -> float:
        return 1.0

    def read(self, step, question, options, passages, closed_book, preface, trace):
        answered = step(question=question, options=options, context=format_context(passages, preface))
        return answer_fields(answered.answer, answered.parse_failure, getattr(answered, "option_logprobs", None),
                             getattr(answered, "option_logprob_status", None), getattr(answered, "reply", None),
                             getattr(answered, "reasoning", None)), {}


class PerPassage(AnswerMode):
    """Each passage read alone; the closed-book reading is the mixture's prior."""

    name = "per-passage"
    needs_closed_book = True

    def calls(self, budget: int) -> float:
        return 1.0 + budget

    def read(self, step, question, options, passages, closed_book, preface, trace):
        if not passages:  # nothing to read apart: the joint answer over no passages
            return Joint(self.config).read(step, question, options, passages, closed_book, preface, trace)
        readings = read_each(step, question, options, passages, preface)
        mixed = combine(closed_book, readings, list(options), self.config.prior_weight, self.config.mix_temperature,
                        self.config.mix)
        if mixed["voted"]:
            trace.fell_back("vote")
        return (answer_fields(mixed["answer"], mixed["answer"] is None, mixed["option_logprobs"], mixed["status"]),
                {"passage_readings": [r.to_dict() for r in readings], "mixture_weights": mixed["weights"]})

    def suggest(self, config, trial):
        return config.replace(mix=trial.suggest_categorical("mix", list(MIX_RULES)),
                              mix_temperature=trial.suggest_float("mix_temperature", 0.25, 8.0, log=True),
                              prior_weight=trial.suggest_float("prior_weight", 0.0, 0.8))

    def trial_params(self, config):
        return {"mix": config.mix, "mix_temperature": config.mix_temperature, "prior_weight": config.prior_weight}

    def note(self, name, joint_calls, calls):
        return (f"{name}: per passage, {calls:g} LM calls a question (the closed-book answer and "
                f"{self.config.budget} readings, their prompts shared up to the passage) where the joint answer makes "
                f"{joint_calls:g}")


class ClosedBookFirst(AnswerMode):
    """The closed-book answer first; `inner` reads the passages only where the reader's top option probability is
    below `retrieve_below` (or where there is no distribution to judge it by: counted as a fallback)."""

    needs_closed_book = True

    def __init__(self, config: Any, inner: AnswerMode):
        super().__init__(config)
        self.inner = inner
        self.name = f"{inner.name}, closed-book first"

    def calls(self, budget: int) -> float:
        return self.inner.calls(budget) + (0.0 if self.inner.needs_closed_book else 1.0)

    def retrieves(self, closed_book, trace):
        top = closed_book.top_probability if closed_book else None
        if top is None:
            trace.fell_back("on_demand", "no option probabilities to judge the closed-book answer by: retrieved")
            return True
        return top < self.config.retrieve_below

    def read(self, step, question, options, passages, closed_book, preface, trace):
        result, fields = self.inner.read(step, question, options, passages, closed_book, preface, trace)
        return result, {**fields, "retrieved": True}

    def suggest(self, config, trial):  # the threshold itself is the study's choice (ProgramConfig.suggest)
        return self.inner.suggest(config, trial)

    def trial_params(self, config):
        return self.inner.trial_params(config)

    def note(self, name, joint_calls, calls):
        floor = 1.0
        return (f"{name}: closed-book first, {floor:g} to {calls:g} LM calls a question (it reads "
                f"{self.inner.name} only below a top probability of {self.config.retrieve_below:g})")


ANSWER_MODES: dict[str, type[AnswerMode]] = {"joint": Joint, "per-passage": PerPassage}


def answer_mode_for(config: Any) -> AnswerMode:
    """The answer mode a config asks for: its `answer_mode`, read closed-book first when `retrieve_below` is set."""
    mode = ANSWER_MODES[config.answer_mode](config)
    return ClosedBookFirst(config, mode) if config.retrieve_below is not None else mode
