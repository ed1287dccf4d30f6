"""Every report reads its comparisons as confidence sequences too (the question each was decided at, and what a
fixed-n test would have cost), splits its error budget across them (Holm for the fixed-n p-values, Bonferroni for
the sequences), and clusters its intervals by dataset when questions come from several."""

from __future__ import annotations

import hyporag
from hyporag.eval.decision import holm
from hyporag.eval.run_report import markdown
from hyporag.jobs.run_config import RunConfig
from hyporag.testing import fake_openai, write_jsonl


def questions(prefix: str, n: int, gold: str) -> list[dict]:
    return [{"id": f"{prefix}{i}", "question": f"{prefix}: which organ makes hormone {i}?",
             "options": {"A": "Pancreas", "B": "Kidney", "C": "Liver"}, "answer": gold} for i in range(n)]


def test_the_report_holds_sequences_holm_and_grouped_intervals(tiny_corpus_dir, tmp_path):
    first = write_jsonl(tmp_path / "first.jsonl", questions("f", 12, "A"))
    second = write_jsonl(tmp_path / "second.jsonl", questions("s", 12, "B"))
    with fake_openai(["m"], letter_logprobs={"A": -0.2, "B": -1.9, "C": -3.0}) as server:
        report = hyporag.evaluate(RunConfig(dataset=f"{first},{second}", methods="cot,rag,chr", budget=2,
                                            corpus=str(tiny_corpus_dir), out=str(tmp_path / "run"), lm="openai/m",
                                            api_base=server.base(), api_key="k", no_cache=True), progress=False)
    summary = report.report
    sequences = summary["sequential"]
    assert sequences["baseline"] == "rag" and set(sequences["comparisons"]) == {"cot", "chr"}
    assert sequences["alpha_each"] == 0.05 / 2  # two comparisons, one deciding measure each
    cot = sequences["comparisons"]["cot"]
    assert cot["outcome"] in ("better", "worse", "equivalent", "undecided") and cot["paired"] == 24
    assert cot["by"] == "p_gold" and set(cot["beside"]) == {"accuracy", "log_p_gold_clipped", "margin", "brier"}
    # the fake reader answers A with the same belief whatever it reads: every method agrees on every question, so
    # no test can say better or worse (0 difference throughout); 24 questions are too few to fit inside +-0.05
    assert cot["mean"] == 0.0 and cot["beside"]["accuracy"]["mean"] == 0.0 and cot["outcome"] == "undecided"
    assert cot["log_wealth"] == 0.0 and -0.5 < cot["lower"] < 0 < cot["upper"] < 0.5
    assert summary["grouped_by"] == sorted([str(first), str(second)]) and summary["grouping"] == "stratified"
    lead = summary["decision"]["paired_vs_rag"]["chr"]["p_gold"]
    assert lead["grouping"] == "stratified"
    assert "mcnemar_p_holm" in summary["decision"]["paired_vs_rag"]["chr"]["accuracy"]
    text = markdown(summary)
    assert "Anytime-valid comparison with rag" in text and "stratified by dataset" in text and "(Holm)" in text
    assert report.summary("chr").sequence_outcome == sequences["comparisons"]["chr"]["outcome"]


def test_holm_adjusts_a_family_of_p_values():
    adjusted = holm({"a": 0.01, "b": 0.04, "c": 0.03, "d": None})
    assert adjusted == {"a": 0.03, "b": 0.06, "c": 0.06, "d": None}
