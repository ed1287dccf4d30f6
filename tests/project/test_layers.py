"""Imports run one way, folder by folder: foundation < the LM client, question loading, retrieval, signatures <
programs (the judge among them) < eval < optimizers, the papers' reproduction < hyporag/ (jobs, the CLI and the
public API). A lower layer never imports a higher one, not even inside a function."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"foundation": "hyporag.foundation", "signatures": "hyporag.signatures", "programs": "hyporag.programs",
           "retrieval": "hyporag.retrieval", "eval": "hyporag.eval", "optimizers": "hyporag.optimizers",
           "lm": "hyporag.lm", "questions": "hyporag.questions", "reproduction": "hyporag.reproduction",
           "hyporag": "hyporag"}
RANK = {"foundation": 0, "lm": 1, "questions": 1, "retrieval": 1, "signatures": 1, "programs": 2, "eval": 3,
        "optimizers": 4, "reproduction": 4, "hyporag": 5}


def layer(module: str) -> str:
    """The folder a module lives in: `hyporag.X...` is folder X when X is one, else hyporag/ itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in FOLDERS else "hyporag"


def modules():
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = path.relative_to(ROOT / folder).with_suffix("").parts
            parts = parts[:-1] if parts[-1] == "__init__" else parts
            yield ".".join((package, *parts)), path


def imported(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
        elif isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
    return {n for n in names if n.startswith("hyporag")}


def test_no_import_runs_up_the_layers():
    upward = []
    for name, path in modules():
        mine = layer(name)
        for target in imported(path):
            theirs = layer(target)
            same_rank_other = RANK[theirs] == RANK[mine] and theirs != mine
            if RANK[theirs] > RANK[mine] or same_rank_other:
                upward.append(f"{path.relative_to(ROOT)} ({mine}) imports {target} ({theirs})")
    assert not upward, "\n".join(upward)


def test_the_lm_free_report_does_not_import_dspy():
    code = "import sys, hyporag.eval.run_report; assert 'dspy' not in sys.modules, 'dspy imported'; print('ok')"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.stdout.strip() == "ok", proc.stderr[-500:]


def test_every_module_is_small():
    """300 lines at most, the package's modules and the benchmarks alike."""
    paths = [p for _, p in modules()] + sorted((ROOT / "bench").glob("*.py"))
    big = [f"{p.relative_to(ROOT)}: {n}" for p in paths if (n := len(p.read_text().splitlines())) > 300]
    assert not big, big


def test_no_library_module_imports_argparse():
    """Every job is a Python call with typed settings; only the command-line shell parses flags."""
    offenders = [str(path.relative_to(ROOT)) for name, path in modules()
                 if not name.startswith("hyporag.cli") and "argparse" in {
                     alias.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                     if isinstance(node, ast.Import) for alias in node.names}]
    assert not offenders, offenders


def public_names(package: str) -> set[str]:
    """A package's public API: what its `__init__` lists in `__all__`."""
    folders = {**{v: k for k, v in FOLDERS.items()}, "hyporag.testing": "hyporag/testing"}
    path = (ROOT / folders[package] / "__init__.py") if package != "hyporag" else ROOT / "hyporag" / "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "_EXPORTS" for t in node.targets):
            return {k.value for k in node.value.keys}
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__all__" for t in node.targets):
            return {e.value for e in node.value.elts if isinstance(e, ast.Constant)}
    return set()


def test_bench_uses_only_the_public_api():
    """The benchmarks are written as a user would write them: names a package exports, never a module inside it."""
    private = []
    for path in sorted((ROOT / "bench").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                private += [f"{path.name}: import {a.name}" for a in node.names if a.name.startswith("hyporag.")]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hyporag"):
                if node.module not in (*FOLDERS.values(), "hyporag.testing"):  # testing: public, as dspy.utils is
                    private.append(f"{path.name}: from {node.module}")
                    continue
                exported = public_names(node.module)
                private += [f"{path.name}: {node.module}.{a.name}" for a in node.names if a.name not in exported]
    assert not private, private


LAZY = {"hyporag.retrieval.bm25_kernels": "numba: compiling or loading its JIT cache costs ~0.3-2 s",
        "hyporag.lm.router": "LiteLLM's Router imports all of litellm (~1-4 s), wanted only for a pool of servers"}


def test_hyporag_imports_sit_at_module_level():
    """An import inside a function hides the call graph from readers and tools; only a module that pulls in a heavy
    dependency is imported where it is used (LAZY, each with its reason). A cycle is broken by moving the shared
    piece down a layer (as bm25_tokens was), never by a function-level import."""
    inside = []
    for _, path in modules():
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hyporag"):
                    targets = {f"{node.module}.{a.name}" if node.module in FOLDERS.values() else node.module
                               for a in node.names}
                    inside += [f"{path.relative_to(ROOT)}:{node.lineno} {t}" for t in targets if t not in LAZY]
                elif isinstance(node, ast.Import):
                    inside += [f"{path.relative_to(ROOT)}:{node.lineno} {a.name}" for a in node.names
                               if a.name.startswith("hyporag") and a.name not in LAZY]
    assert not sorted(set(inside)), "\n".join(sorted(set(inside)))


def test_the_hyporag_folder_is_only_the_roof():
    """hyporag/ holds the public API, the jobs (with their builders and run settings), the CLI and the test helpers
    a user imports; every utility the layers share lives in foundation/."""
    assert {p.name for p in (ROOT / "hyporag").iterdir() if p.name != "__pycache__"} == {
        "__init__.py", "jobs", "cli", "testing"}
