"""A program's own diagnostics reach the rows and the summary without code outside the program: a fallback kind
it names is counted, its row fields are kept; rows written before fallbacks had kinds still count."""

from __future__ import annotations

import json

from hyporag.eval.row import ResultRow
from hyporag.eval.summary import fallback_counts
from hyporag.jobs.evaluate import run_evaluation
from hyporag.programs.baselines import SimpleRAG
from tests.conftest import dummy_roles


class ShortQueryRAG(SimpleRAG):
    """A new method defined in a test: falls back to the first ten words of a long question."""

    method = "short-rag"
    row_fields = {"query_words": 0}

    def retrieve(self, question, options, meter, trace):
        words = question.split()
        if len(words) > 3:
            trace.fell_back("short_query", f"{len(words)} words cut to 3")
        trace.extra["query_words"] = min(3, len(words))
        trace.queries.append(" ".join(words[:3]))
        return self.retriever.search(trace.queries[-1], self.budget)


def test_a_new_programs_fallback_and_fields_are_counted_and_kept(tiny_retriever, tiny_questions, tmp_path):
    program = ShortQueryRAG(retriever=tiny_retriever, roles=dummy_roles([{"answer": "A"}] * 9),
                            budget=2)
    report = run_evaluation({"short-rag": program}, tiny_questions, tmp_path / "run", {"dataset": "t"},
                            progress=False)
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").open()]
    long_ones = sum(len(q.question.split()) > 3 for q in tiny_questions)
    assert long_ones > 0
    assert report["methods"][0]["fallbacks"] == {"short_query": long_ones}
    assert all(r["details"]["query_words"] <= 3 for r in rows)
    assert f"| short_query {long_ones} |" in (tmp_path / "run" / "summary.md").read_text()


def test_rows_from_before_fallback_kinds_still_count():
    old = [{"question_id": "q1", "method": "chr", "answer": "A", "gold": "A", "correct": True,
            "query_parse_failures": 0, "contrast_fallback": "H- equals H+"},
           {"question_id": "q2", "method": "hcqr", "answer": "B", "gold": "A", "correct": False,
            "query_parse_failures": 2, "contrast_fallback": None}]
    assert fallback_counts(map(ResultRow.of, old)) == {"contrast": 1, "query": 1}
