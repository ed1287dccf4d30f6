"""Benchmarks by name: the MIRAGE test sets, the dev splits to tune on, and any user file.

Each name resolves to a file under the data directory (see `hyporag.foundation.paths.data_root`); when no local
copy exists, a hub loader converts the public Hugging Face copy to the same shape, or says clearly why it cannot.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hyporag.foundation.errors import DataError
from hyporag.foundation.hub import hub_load
from hyporag.foundation.paths import data_root
from hyporag.questions.records import LETTERS, LoadReport, load_records, make_example, record_to_example

MMLU_MED_SUBJECTS = (
    "anatomy",
    "clinical_knowledge",
    "college_biology",
    "college_medicine",
    "medical_genetics",
    "professional_medicine",
)


@dataclass(frozen=True)
class Benchmark:
    """A named question set: its file under the data root, whether it is a test split, and a hub fallback."""

    name: str
    files: tuple[str, ...]
    is_test: bool
    expected_count: int
    hub: Callable[[], list] | None = None
    hub_hint: str = ""


def _medqa_hub() -> list:
    rows = hub_load("GBaker/MedQA-USMLE-4-options", split="test")
    return [
        record_to_example({"question": r["question"], "options": r["options"], "answer": r["answer_idx"]}, f"{i:04d}")
        for i, r in enumerate(rows)
    ]


def _mmlu_hub(split: str, tag: str) -> Callable[[], list]:
    def load() -> list:
        examples = []
        for subject in MMLU_MED_SUBJECTS:
            for i, r in enumerate(hub_load("cais/mmlu", subject, split=split)):
                options = dict(zip(LETTERS, r["choices"], strict=False))
                qid = f"{subject}-{tag}{i:03d}"
                examples.append(make_example(r["question"], options, LETTERS[int(r["answer"])], qid, subject=subject))
        return examples

    return load


def _medmcqa_hub() -> list:
    rows = hub_load("openlifescienceai/medmcqa", split="validation")
    return [
        record_to_example(
            {"question": r["question"], "options": [r["opa"], r["opb"], r["opc"], r["opd"]],
             "answer": LETTERS[int(r["cop"])], "id": r["id"]},
            r["id"],
        )
        for r in rows
    ]


NO_FAITHFUL_HUB = "MIRAGE's subset has no faithful hub copy; build it from MIRAGE's benchmark.json into the data dir"

BENCHMARKS: dict[str, Benchmark] = {
    b.name: b
    for b in (
        Benchmark("medqa", ("benchmarks/mirage/medqa.jsonl",), True, 1273, _medqa_hub),
        Benchmark("medqa-dev", ("benchmarks/medqa_us/dev.jsonl",), False, 1272, None,
                  "the MedQA-US dev split has no maintained hub copy without a loading script"),
        Benchmark("mmlu-med", ("benchmarks/mirage/mmlu.jsonl",), True, 1089, _mmlu_hub("test", "")),
        Benchmark("mmlu-med-dev", ("benchmarks/mmlu_med/dev.jsonl",), False, 30, _mmlu_hub("dev", "dev-")),
        Benchmark("mmlu-med-val", ("benchmarks/mmlu_med/val.jsonl",), False, 123, _mmlu_hub("validation", "val-")),
        Benchmark("bioasq", ("benchmarks/mirage/bioasq.jsonl",), True, 618, None, NO_FAITHFUL_HUB),
        Benchmark("pubmedqa", ("benchmarks/mirage/pubmedqa.jsonl",), True, 500, None, NO_FAITHFUL_HUB),
        Benchmark("medmcqa", ("benchmarks/mirage/medmcqa.jsonl",), True, 4183, _medmcqa_hub),
    )
}


def is_test_split(name: str) -> bool:
    """Test splits are for reporting only; tuning on them needs an explicit override."""
    bench = BENCHMARKS.get(name)
    return bool(bench and bench.is_test)


def load_benchmark(
    name_or_path: str, data_dir: str | Path | None = None, skip_bad_rows: bool = False, joined: str | None = None
) -> LoadReport:
    """Load a benchmark by name, several joined by commas (`mmlu-med-dev,mmlu-med-val`), or any JSONL/CSV path."""
    if "," in name_or_path and not Path(name_or_path).is_file():  # a file whose name has a comma is one dataset
        parts = [(part.strip(), load_benchmark(part.strip(), data_dir, skip_bad_rows, joined=name_or_path))
                 for part in name_or_path.split(",")]
        for part, report in parts:  # each question's dataset is its group: intervals are clustered by it
            for example in report.examples:
                if not example.get("group"):
                    example["group"] = part
        return LoadReport.join([report for _, report in parts])
    if name_or_path not in BENCHMARKS:
        path = Path(name_or_path)
        if path.suffix.lower() in (".jsonl", ".json", ".csv") or path.exists():
            return load_records(path, skip_bad_rows=skip_bad_rows)
        note = f" (in {joined!r}: commas separate datasets)" if joined else ""
        raise DataError(f"unknown dataset {name_or_path!r}{note}: use one of {', '.join(BENCHMARKS)} or a "
                        ".jsonl/.csv path")
    bench = BENCHMARKS[name_or_path]
    root = data_root(data_dir)
    if root is not None:
        paths = [root / f for f in bench.files]
        if all(p.is_file() for p in paths):
            return LoadReport.join([load_records(p, skip_bad_rows=skip_bad_rows, source=str(p)) for p in paths], ", ")
        if data_dir is not None:
            raise DataError(f"{paths[0]}: dataset file for {name_or_path!r} not found in --data-dir")
    if bench.hub is None:
        raise DataError(f"{name_or_path}: no local file ({bench.files[0]} under the data dir) and {bench.hub_hint}")
    return LoadReport(bench.hub(), "huggingface-hub")
