"""What the author of a method needs to test it, as DSPy's `dspy.utils.dummies` is for DSPy: a DummyLM in every
role, a tiny corpus and its index, a few questions, and `check_method`, the contract every method of hyporag keeps
(its answer calls under the answer role as its reader settings say: one joint answer, or the closed-book answer and
one reading per passage; at most its budget of distinct passages; a result row every reader can read; its config's
round trip). hyporag's own tests use these same ones.

    from hyporag.testing import check_method, tiny_retriever
    check_method("title-first", [{"answer": "B"}], tiny_retriever(tmp_path))
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import dspy
from dspy.utils import DummyLM

from hyporag.eval.engine import run_one
from hyporag.eval.row import ResultRow, row_problem
from hyporag.lm.client import LMRoles
from hyporag.programs.registry import make_program, method_entry
from hyporag.questions.records import examples_from_python
from hyporag.retrieval import build_index, load_corpus, open_index

# ten passages on endocrine organs and bone: enough for BM25 and a dense index to rank something real
PASSAGES = [
    ("p1", "Pancreas", "Beta cells of the pancreatic islets secrete insulin in response to high blood glucose."),
    ("p2", "Pancreas", "Alpha cells of the pancreas secrete glucagon when blood glucose falls."),
    ("p3", "Liver", "The liver stores glycogen and releases glucose; it does not secrete insulin."),
    ("p4", "Kidney", "The kidney filters blood and produces erythropoietin in response to hypoxia."),
    ("p5", "Heart", "The heart pumps blood; cardiac myocytes are connected by intercalated discs."),
    ("p6", "Thyroid", "Follicular cells of the thyroid produce thyroxine; parafollicular C cells secrete calcitonin."),
    ("p7", "Adrenal", "The adrenal medulla secretes epinephrine; the cortex secretes cortisol and aldosterone."),
    ("p8", "Pituitary", "The anterior pituitary secretes growth hormone, prolactin, ACTH, TSH, LH and FSH."),
    ("p9", "Diabetes", "Type 1 diabetes results from autoimmune destruction of insulin-producing beta cells."),
    ("p10", "Bone", "Osteoclasts resorb bone; osteoblasts lay down new bone matrix."),
]
QUESTIONS = [
    {"id": "q1", "question": "Which cells secrete insulin?",
     "options": {"A": "Alpha cells", "B": "Beta cells", "C": "Hepatocytes", "D": "Osteoclasts"}, "answer": "B"},
    {"id": "q2", "question": "Which organ produces erythropoietin?",
     "options": {"A": "Heart", "B": "Liver", "C": "Kidney", "D": "Bone"}, "answer": "C"},
    {"id": "q3", "question": "What do osteoclasts do?",
     "options": {"A": "Resorb bone", "B": "Secrete insulin", "C": "Pump blood"}, "answer": "A"},
]


def dummy_roles(replies: Sequence[dict] | dict) -> LMRoles:
    """One DummyLM in every role (hypothesis, answer, judge): a list of replies in order, or a dict keyed by the
    output field a prompt asks for (`{"[[ ## answer ## ]]": {"answer": "B"}}`)."""
    return LMRoles.from_lms(DummyLM(list(replies) if not isinstance(replies, dict) else dict(replies)))


def write_jsonl(path: Path, records: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def tiny_corpus(directory: str | Path) -> Path:
    """The ten passages as a corpus folder of two JSONL files (what `--corpus` takes)."""
    directory = Path(directory)
    write_jsonl(directory / "a.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES[:6]])
    write_jsonl(directory / "b.jsonl", [{"id": i, "title": t, "contents": c} for i, t, c in PASSAGES[6:]])
    return directory


def tiny_retriever(directory: str | Path, bm25_engine: str = "bm25s"):
    """BM25 and a dense part (a hashing embedder: no model to load) over the tiny corpus, built under
    `directory`."""
    corpus = load_corpus(str(tiny_corpus(Path(directory) / "corpus")))
    index = build_index(corpus, Path(directory) / f"index-{bm25_engine}", retriever="both",
                        embedder_name="hashing-64", progress=False, log=lambda m: None, bm25_engine=bm25_engine)
    return open_index(index, corpus=corpus)


def tiny_questions() -> list[dspy.Example]:
    """The three questions as the examples every job takes."""
    return examples_from_python(QUESTIONS).examples


def answer_calls_expected(program: Any, row: dict[str, Any]) -> tuple[int, str]:
    """The answer calls a question costs under the program's reader settings, and why: one joint answer; per passage,
    the closed-book answer and one reading per passage; closed-book first, that answer alone when the reader was
    sure, else it and what the answer step then makes (the closed-book reading is shared with per-passage)."""
    config = program.config
    readings = len(row.get("passage_readings") or [])
    if program.uses_retrieval and config.retrieve_below is not None and row.get("retrieved") is False:
        return 1, "answering closed-book first, a sure reader makes exactly one (it retrieved nothing)"
    if program.uses_retrieval and config.answer_mode == "per-passage" and row.get("passage_ids"):
        return 1 + readings, (f"per passage it makes the closed-book answer and one reading per passage "
                              f"({1 + readings})")
    if program.uses_retrieval and config.retrieve_below is not None:
        return 2, "answering closed-book first, a reader unsure of it makes that answer and the joint one (2)"
    return 1, "it makes exactly one"


def check_method(method: str, replies: Sequence[dict] | dict, retriever=None, budget: int = 2,
                 **settings: Any) -> dict[str, Any]:
    """Run `method` (a registered name) on the first tiny question with `replies` and check the contract every
    method keeps; return its result row. An AssertionError names the broken promise."""
    roles = dummy_roles(replies)
    entry = method_entry(method)
    program = make_program(method, retriever=retriever if entry.program.uses_retrieval else None, roles=roles,
                           budget=budget, **settings)
    config = program.config
    assert type(config).from_dict(config.to_dict()) == config, f"{method}: its config does not round-trip"
    assert program.settings().get("method") == entry.program.method, f"{method}: settings() must name its method"
    row = run_one(program, tiny_questions()[0], method)
    assert not row["error"], f"{method}: the question errored: {row['error']}"
    ResultRow.check(row)
    assert row_problem(json.loads(json.dumps(row))) is None, f"{method}: {row_problem(row)}"
    answer_calls = (row["cost_by_role"].get("answer") or {}).get("calls")
    expected, how = answer_calls_expected(program, row)
    assert answer_calls == expected, f"{method}: the answer step made {answer_calls} calls; {how}"
    assert row["answer"] in QUESTIONS[0]["options"], f"{method}: answered {row['answer']!r}, not an option letter"
    ids = row["passage_ids"]
    assert len(ids) <= budget and len(set(ids)) == len(ids), f"{method}: {len(ids)} passages for a budget of {budget}"
    if entry.program.uses_retrieval:
        assert ids, f"{method}: a retrieval method found no passage for a question the tiny corpus answers"
        assert row["retrieval_sees_options"] is not None, f"{method}: must record whether retrieval saw the options"
    else:
        assert not ids, f"{method}: declares uses_retrieval = False but read passages"
    return row
