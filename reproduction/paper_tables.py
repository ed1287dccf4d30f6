"""The papers' tables as grids hyporag can rerun: datasets × methods × settings, at the paper's budget.

A table says what it measures (`kind`), which of our methods stand for the paper's rows, and what it needs beyond
the defaults (a judge LM, an encoder hyporag does not carry yet). The papers' own figures live in
`paper_figures.json`, with where each is stated; `hyporag.reproduction.report` puts them beside ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from hyporag.foundation.errors import ConfigError
from hyporag.programs.protocol import PAPER

KINDS = ("accuracy", "dur", "utility", "overlap", "cost")


@dataclass(frozen=True)
class Variant:
    """One setting of a table's grid: a label, run settings (e.g. the retriever) and program settings."""

    label: str
    run: dict[str, Any] = field(default_factory=dict)
    program: dict[str, Any] = field(default_factory=dict)


PAPER_SETTING = (Variant(PAPER.name),)


@dataclass(frozen=True)
class PaperTable:
    name: str
    paper: str
    title: str
    kind: str
    datasets: tuple[str, ...]
    methods: tuple[str, ...]
    baseline: str = "rag"
    variants: tuple[Variant, ...] = PAPER_SETTING
    needs: tuple[str, ...] = ()
    note: str = ""

    @property
    def dur(self) -> bool:
        return self.kind in ("dur", "utility")

    def program_settings(self) -> dict[str, Any]:
        """The paper's budget and protocol (a user's own flags override them)."""
        budget = paper(self.paper)["settings"].get("budget") or CHR_BUDGET
        return {"budget": budget, "protocol": PAPER.name}


# The CHR paper's context size is not among the figures we could read; its overlap analysis reads the top 5.
CHR_BUDGET = 5
HCQR_DATASETS = ("medqa", "mmlu-med")
CHR_DATASETS = ("medqa", "medmcqa", "mmlu-med")
JUDGE = "a judge LM for the DUR labels (--judge-lm; default: --lm)"
ENCODERS = "MedCPT, BGE-large-en-v1.5 and E5-large-v2 encoders (not carried yet: dense here is all-MiniLM-L6-v2)"

TABLES = {t.name: t for t in (
    PaperTable("hcqr-table1", "hcqr", "Accuracy: HCQR against no retrieval, simple RAG and query rewriting",
               "accuracy", HCQR_DATASETS, ("cot", "rag", "rewrite", "rerank", "hyde", "hcqr"),
               note="Rewriting is the authors' multi-query rewrite; Rerank-RAG reranks with a cross-encoder when "
                    "--cross-encoder names one, else with the LM's judgment."),
    PaperTable("hcqr-table2", "hcqr", "Decision-useful rate (DUR = Entailed + Useful) of the retrieved context",
               "dur", HCQR_DATASETS, ("rag", "rewrite", "rerank", "hyde", "hcqr"), needs=(JUDGE,)),
    PaperTable("hcqr-table3", "hcqr", "Utility distribution of the context and accuracy within each label",
               "utility", HCQR_DATASETS, ("cot", "rag", "rewrite", "hcqr"), needs=(JUDGE,),
               note="Accuracy within a label is compared with no-retrieval CoT on the same questions."),
    PaperTable("hcqr-table5", "hcqr", "Option exposure: hypothesis from the options, without them, or shown to "
               "the answer step", "accuracy", HCQR_DATASETS,
               ("rag", "hcqr", "hcqr-no-options", "hcqr-show-hypothesis")),
    PaperTable("hcqr-table6", "hcqr", "Query ablation: HCQR without one of its three queries", "accuracy",
               HCQR_DATASETS, ("rag", "hcqr", "hcqr-no-support", "hcqr-no-distinction", "hcqr-no-key-features")),
    PaperTable("chr-table1", "chr", "Accuracy: CHR against five baselines", "accuracy", CHR_DATASETS,
               ("cot", "rag", "rewrite-single", "hyde", "q2d", "chr"),
               note="Baselines as we read the paper: no retrieval, the question as query, one rewritten query, "
                    "HyDE and Query2doc."),
    PaperTable("chr-table2", "chr", "Retrievers: the methods over each retriever", "accuracy", ("medqa",),
               ("rag", "hyde", "chr"), variants=(Variant("bm25", {"retriever": "bm25"}),
                                                 Variant("dense", {"retriever": "dense"})),
               needs=("an index with dense vectors (hyporag index build --retriever both)", ENCODERS)),
    PaperTable("chr-table3", "chr", "Lambda: fixed (lambda = 1) against the adaptive schedules", "accuracy",
               ("medqa",), ("rag", "chr", "chr-linear", "chr-threshold", "chr-sigmoid"),
               note="The paper names the adaptive schedules but publishes no formulas: ours are our own "
                    "(README, 'CHR schedules')."),
    PaperTable("chr-table4", "chr", "Redirection: top-5 overlap where CHR is right and the baseline is wrong",
               "overlap", CHR_DATASETS, ("rag", "hyde", "q2d", "chr"), baseline="hyde"),
    PaperTable("chr-table5", "chr", "Cost per question: LM calls and tokens", "cost", ("medqa",),
               ("hyde", "q2d", "chr")),
)}


def table(name: str) -> PaperTable:
    if name not in TABLES:
        raise ConfigError(f"unknown table {name!r}: use one of {', '.join(TABLES)} (hyporag reproduce --list)")
    return TABLES[name]


@cache
def _figures_file() -> dict:
    stored = resources.files("hyporag.reproduction").joinpath("paper_figures.json")
    return json.loads(stored.read_text(encoding="utf-8"))


def paper(name: str) -> dict:
    """The paper's citation, address and settings."""
    return _figures_file()["papers"][name]


def figures(table_name: str) -> list[dict]:
    """The paper's stored figures for one table, each with where in the paper it is stated."""
    return [f for f in _figures_file()["figures"] if f["table"] == table_name]
