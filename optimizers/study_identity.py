"""What a study's trial values mean, recorded on the study so a resume or a second worker cannot mix them.

A trial's value is only comparable with another's when both scored the same method, from the same untuned
settings, on the same validation questions, with the same LMs, metric and objective. The first run records that
identity on the study (a user attribute, so journal files and RDB storages alike keep it); every later open
compares, and a study holding trials scored otherwise is refused in one line naming what differs. Without this,
`tune --study s --objective log-p-gold` on a study first run under accuracy would pick its best trial across two
scales, and two fit candidates sharing one RDB study would pick a trial of the other method.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from hyporag.foundation.errors import ConfigError
from hyporag.optimizers.splits import questions_fingerprint

IDENTITY_ATTR = "hyporag_identity"


def study_identity(method: str, objective: str, metric: str, valset: Sequence, untuned: dict[str, Any],
                   modes: Sequence[str], lms: dict[str, Any]) -> dict[str, Any]:
    """The settings every trial value of a study depends on (JSON-shaped, as the storage returns it)."""
    record = {"method": method, "objective": objective, "metric": metric,
              "validation": questions_fingerprint(valset), "validation_questions": len(valset),
              "modes": list(modes), "lms": lms, **{f"setting {k}": v for k, v in untuned.items()}}
    return json.loads(json.dumps(record, sort_keys=True, default=str))


def identity_digest(identity: dict[str, Any]) -> str:
    """A short name for an identity: studies named by it never meet another identity's trials."""
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:12]


def check_study_identity(study, identity: dict[str, Any], where: str,
                         remedy: str = "give another --study (TuneSettings.study)") -> None:
    """Record `identity` on a study that has none; refuse a study whose trials were scored under another one."""
    recorded = study.user_attrs.get(IDENTITY_ATTR)
    if recorded is None:
        earlier = study.user_attrs.get("method")  # studies from before the identity recorded their method only
        if earlier and earlier != identity["method"] and study.trials:
            raise ConfigError(f"{where}: study {study.study_name!r} holds trials of {earlier}, not "
                              f"{identity['method']}; {remedy} (trial values must not mix)")
        study.set_user_attr(IDENTITY_ATTR, identity)
        return
    differs = sorted(k for k in recorded.keys() | identity.keys() if recorded.get(k) != identity.get(k))
    if differs:
        shown = ", ".join(f"{k} {_short(recorded.get(k))} then, {_short(identity.get(k))} now" for k in differs[:3])
        raise ConfigError(f"{where}: study {study.study_name!r} holds trials scored with other settings ({shown}); "
                          f"{remedy} (trial values from different settings must not mix)")


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= 40 else f"{text[:37]}..."
