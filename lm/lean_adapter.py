"""A lean JSON adapter for the embedded engine: JSONAdapter's structured output and schema, a fraction of its text,
and a layout in which one question's calls share a cached prefix.

JSONAdapter spends 250-400 tokens of every call describing its own format and puts each step's instruction in the
system message, so no two steps of a question share a prefix; on a CPU reading ~75 prompt tokens/s that prefill is
the cost. Here the system message is one sentence common to every step, and the user message starts with what all
of a question's steps share (question, options), then the step's instruction, then its other inputs (passages last)
and a one-line reply format. llama.cpp then reuses the question's prefix from its slot or its host prompt cache.
The JSON schema still constrains the reply, so parsing is JSONAdapter's own.
"""

from __future__ import annotations

import json
from typing import Any, get_args, get_origin

from dspy.adapters.json_adapter import JSONAdapter
from dspy.adapters.utils import format_field_value, get_annotation_name, serialize_for_json
from dspy.signatures.signature import Signature

SYSTEM = "You are a careful expert. Reply with one JSON object that has exactly the fields asked for."
SHARED_FIELDS = ("question", "options")  # every step of a question starts with these, in this order


def field_label(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _type_hint(annotation: Any) -> str:
    """A short type note for a reply field: none for text, the allowed values for a Literal, else the type."""
    if annotation is str:
        return ""
    if get_origin(annotation) is not None and get_args(annotation) and all(
            isinstance(a, str) for a in get_args(annotation)):
        return " (one of " + ", ".join(get_args(annotation)) + ")"
    return f" ({get_annotation_name(annotation)})"


def input_order(signature: type[Signature]) -> list[str]:
    """Shared fields first, then the signature's other inputs in its own order (the programs put passages last)."""
    names = list(signature.input_fields)
    return [n for n in SHARED_FIELDS if n in names] + [n for n in names if n not in SHARED_FIELDS]


class LeanAdapter(JSONAdapter):
    """JSONAdapter with a one-sentence system message shared by every step and the instruction after the
    question and options. Conversation-history signatures keep JSONAdapter's layout."""

    def format(self, signature: type[Signature], demos: list[dict[str, Any]],
               inputs: dict[str, Any]) -> list[dict[str, Any]]:
        if self._get_history_field_name(signature):
            return super().format(signature, demos, inputs)
        return [{"role": "system", "content": SYSTEM}, *self.format_demos(signature, demos),
                {"role": "user", "content": self.format_user_message_content(signature, inputs, main_request=True)}]

    def format_user_message_content(self, signature: type[Signature], inputs: dict[str, Any], prefix: str = "",
                                    suffix: str = "", main_request: bool = False) -> str:
        parts = [prefix] if prefix else []
        order = input_order(signature)
        shared = [n for n in order if n in SHARED_FIELDS]
        for position, name in enumerate(order):
            if main_request and position == len(shared):  # the step's own instruction follows the shared prefix
                parts.append(signature.instructions.strip())
            if name in inputs:
                value = format_field_value(field_info=signature.input_fields[name], value=inputs[name])
                parts.append(f"{field_label(name)}:\n{value}")
        if main_request:
            if len(shared) == len(order):
                parts.append(signature.instructions.strip())
            parts.append(self.user_message_output_requirements(signature))
        if suffix:
            parts.append(suffix)
        return "\n\n".join(parts).strip()

    def user_message_output_requirements(self, signature: type[Signature]) -> str:
        described = []
        for name, field in signature.output_fields.items():
            desc = (field.json_schema_extra or {}).get("desc", "")
            desc = "" if desc.startswith("${") else f": {desc}"
            described.append(f"{name}{_type_hint(field.annotation)}{desc}")
        return "Reply with JSON fields " + "; ".join(described) + "."

    def format_field_with_value(self, fields_with_values: dict, role: str = "user") -> str:
        """Demo replies as compact JSON, as the grammar makes the model write them."""
        if role == "user":
            return super().format_field_with_value(fields_with_values, role)
        return json.dumps(serialize_for_json({k.name: v for k, v in fields_with_values.items()}), ensure_ascii=False)
