"""The lean adapter (issue 18): JSONAdapter's parsing and schema with short prompts whose question prefix every step
of a question shares, and the processed-versus-sent token accounting of a backend that reports its prompt cache."""

from __future__ import annotations

import json

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage
from dspy.utils import DummyLM

from hyporag.lm.client import LMRoles, RoleLM
from hyporag.lm.engine_rules import engine_kwargs
from hyporag.lm.lean_adapter import SYSTEM, LeanAdapter
from hyporag.programs import make_program
from hyporag.programs.protocol import PAPER
from tests.programs.test_programs import SCRIPTS

QUESTION = "Which cells secrete insulin?"
OPTIONS = {"A": "Alpha cells", "B": "Beta cells", "C": "Hepatocytes", "D": "Osteoclasts"}
PREFIX = f"Question:\n{QUESTION}\n\nOptions:\nA. Alpha cells\nB. Beta cells\nC. Hepatocytes\nD. Osteoclasts\n\n"


def lean_roles(lm) -> LMRoles:
    role = RoleLM("dummy", lm, LeanAdapter())
    return LMRoles(role, role, role)


def prompts(method: str, retriever) -> tuple[dspy.Prediction, list[list[dict]]]:
    lm = DummyLM(SCRIPTS[method], adapter=LeanAdapter())
    program = make_program(method, retriever=retriever, roles=lean_roles(lm), budget=3)
    prediction = program(question=QUESTION, options=OPTIONS)
    return prediction, [entry["messages"] for entry in lm.history]


def test_every_step_of_every_method_shares_the_system_message_and_the_question_prefix(tiny_retriever):
    answer_prompts = []
    for method in ("cot", "rag", "hcqr", "chr"):
        prediction, calls = prompts(method, tiny_retriever)
        assert prediction.answer == "B" and not prediction.parse_failure
        assert len(calls) == len(SCRIPTS[method])
        for messages in calls:
            assert [m["role"] for m in messages] == ["system", "user"] and messages[0]["content"] == SYSTEM
            assert messages[1]["content"].startswith(PREFIX)  # the step's own text comes after the shared prefix
        answer = calls[-1][1]["content"]
        assert "ZEBRA-RATIONALE" not in answer  # the hypothesis steers retrieval only
        instruction, context = answer.index("Answer the multiple-choice"), answer.index("Context:\n")
        assert len(PREFIX) == instruction < context < answer.index("Reply with JSON fields answer (one of A, B, C, D)")
        answer_prompts.append(answer[:context])
        if method == "hcqr":  # parsed from JSON: the list field and the hypothesis kept for analysis
            assert prediction.hypothesis["discriminating_features"] == ["beta cells", "islets"]
            assert len(prediction.queries) == 3
    # the answer steps of all methods share everything before their passages
    assert len(set(answer_prompts)) == 1


def test_lean_prompts_are_far_shorter_than_json_adapters(tiny_retriever):
    signature = make_program("rag", retriever=tiny_retriever).answer.predict.signature
    inputs = {"question": QUESTION, "options": PREFIX.split("Options:\n")[1].strip(), "context": "[1] Beta cells."}
    lean = sum(len(m["content"]) for m in LeanAdapter().format(signature, [], inputs))
    standard = sum(len(m["content"]) for m in dspy.JSONAdapter().format(signature, [], inputs))
    assert lean < 0.6 * standard


class CachingEngine:
    """A backend that reports, per call, how many prompt tokens its own cache served (as llama.cpp does)."""

    supports_response_schema = True
    supported_params = frozenset({"temperature", "max_tokens", "response_format"})

    def __init__(self, replies: list[dict], cached: list[int | None]):
        self.replies, self.cached, self.requests = iter(replies), iter(cached), []

    def __deepcopy__(self, memo):
        return self

    def complete(self, request):
        self.requests.append(request)
        return Response(id=None, model=request.model, finish_reason="stop",
                        message=Message.assistant([TextPart(json.dumps(next(self.replies)))]),
                        usage=Usage(input_tokens=100, output_tokens=5, cache_read_tokens=next(self.cached)))


def test_schema_is_sent_and_processed_tokens_are_sent_minus_cached(tiny_retriever):
    from hyporag.eval.engine import result_row
    from hyporag.eval.summary import format_table, summarize

    engine = CachingEngine([SCRIPTS["hcqr"][0], SCRIPTS["hcqr"][1], {"answer": "B"}], [0, 60, 70])
    program = make_program("hcqr", retriever=tiny_retriever, budget=3,
                           roles=lean_roles(dspy.LM("local/fake", engine=engine, cache=False)))
    prediction = program(question=QUESTION, options=OPTIONS)
    assert prediction.answer == "B"
    schema = engine.requests[-1].config.response_format["schema"]
    assert schema["properties"]["answer"]["enum"] == ["A", "B", "C", "D"]  # JSONAdapter's constraint, kept
    cost = prediction.cost
    assert cost["input_tokens"] == 300 and cost["processed_tokens"] == 300 - 130
    assert cost["by_role"]["hypothesis"]["processed_tokens"] == 200 - 60
    assert cost["by_role"]["answer"]["processed_tokens"] == 100 - 70

    unreported = CachingEngine([{"answer": "B"}], [None])
    cot = make_program("cot", roles=lean_roles(dspy.LM("local/fake2", engine=unreported, cache=False)))
    blind = cot(question=QUESTION, options=OPTIONS).cost
    assert blind["processed_tokens"] is None  # unknown is never reported as zero

    example = dspy.Example(id="q1", question=QUESTION, options=OPTIONS, answer="B")
    rows = [result_row(example, "hcqr", prediction, 1.0)]
    assert rows[0]["processed_tokens"] == 170
    assert summarize(rows)[0].processed_tokens_per_q == 170
    blind_rows = [result_row(example, "cot", dspy.Prediction(answer="B", cost=blind, passages=[]), 1.0)]
    assert summarize(blind_rows)[0].processed_tokens_per_q is None
    assert "| 100 | – |" in format_table(summarize(blind_rows))


def test_adapter_choice_follows_the_protocol_and_a_frozen_artifacts_record():
    roles = LMRoles.from_specs(cache=False)  # the embedded model (not loaded until called)
    assert roles.adapters()["answer"] == "LeanAdapter"
    paper = LMRoles.from_specs(cache=False, **engine_kwargs(PAPER.name))
    assert paper.adapters()["answer"] == "JSONAdapter"  # the prompts a server gets: served and in-process agree
    roles.use_adapters({"hypothesis": "JSONAdapter", "answer": "LeanAdapter", "judge": "ChatAdapter"})
    assert roles.adapters() == {"hypothesis": "JSONAdapter", "answer": "LeanAdapter", "judge": "ChatAdapter"}
    roles.use_adapters(None)  # an artifact from before adapters were recorded was compiled on JSONAdapter
    assert set(roles.adapters().values()) == {"JSONAdapter"}
