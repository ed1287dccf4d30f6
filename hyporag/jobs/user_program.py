"""A user's own `dspy.Module` evaluated beside hyporag's programs: run under the answer role's LM and adapter (as
every hyporag program's answer step is), its LM calls metered, so run.json's LMs are the ones that answered and
its cost per question is counted like any method's."""

from __future__ import annotations

from typing import Any

import dspy

from hyporag.lm.client import LMRoles
from hyporag.lm.cost import CostMeter


class UserProgram:
    """`module(question=..., options=...)` under `roles.answer`; the prediction gains the call's `cost`."""

    def __init__(self, module: Any, roles: LMRoles):
        self.module, self.roles = module, roles
        self.retriever = getattr(module, "retriever", None)

    def __call__(self, question: str, options: dict[str, str]) -> dspy.Prediction:
        meter = CostMeter()
        with meter.step("answer"), self.roles.answer.context():
            prediction = self.module(question=question, options=options)
        if getattr(prediction, "cost", None) is None:
            prediction.cost = meter.as_dict()
        return prediction

    def settings(self) -> dict[str, Any]:
        """What run.json can know of a user's module: its class, and the role it ran under."""
        kind = type(self.module)
        return {"method": "user", "class": f"{kind.__module__}.{kind.__qualname__}", "runs_under": "answer"}


def runs_as_is(program: Any) -> bool:
    """hyporag's programs (and anything that brings its own roles) run as given; any other module is wrapped."""
    return hasattr(program, "roles") and hasattr(program, "config")
