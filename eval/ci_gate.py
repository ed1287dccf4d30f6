"""CI use: `--fail-under METHOD=ACC` bars and a JUnit XML file a user's CI can gate on."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

from hyporag.eval.summary import MethodSummary
from hyporag.foundation.atomic import write_text_atomic
from hyporag.foundation.errors import HyporagError


def parse_bars(items: list[str]) -> dict[str, float]:
    bars = {}
    for item in items:
        method, sep, value = item.partition("=")
        try:
            bar = float(value)
        except ValueError:
            bar = -1.0
        if not sep or not method.strip() or not 0.0 <= bar <= 1.0:
            raise HyporagError(f"--fail-under {item!r}: expected METHOD=ACCURACY with accuracy in [0, 1]")
        bars[method.strip()] = bar
    return bars


def check_bars(summary: list[dict], bars: dict[str, float]) -> list[str]:
    """One failure message per method below its bar (or missing from the run)."""
    by_method = {s.method: s for s in map(MethodSummary.of, summary)}
    failures = []
    for method, bar in bars.items():
        if method not in by_method:
            failures.append(f"{method}: not in this run")
        elif by_method[method].accuracy < bar:
            failures.append(f"{method}: accuracy {by_method[method].accuracy:.3f} < {bar:.3f}")
    return failures


def write_junit(path: str | Path, summary: list[dict], bars: dict[str, float], suite: str,
                comparison: dict | None = None, gate_failures: list[str] | tuple = ()) -> None:
    """One JUnit file for the whole gate: a case per method (its accuracy and interval, failed below its bar), a
    failed case per bar on a method the run lacks, and with `comparison` (`--against`) a case per method compared
    with the earlier run (its outcome and sequence, failed when the gate failed it). `failures` counts the cases
    that failed, so the file never says more failed than it shows."""
    failures = dict(f.split(": ", 1) for f in check_bars(summary, bars))
    typed = [MethodSummary.of(s) for s in summary]
    cases = []
    for s in typed:
        body = f"<failure message={quoteattr(failures[s.method])}/>" if s.method in failures else ""
        cases.append(f'  <testcase classname={quoteattr(suite)} name={quoteattr(s.method)} '
                     f'time="{s.seconds_per_q * s.n:.1f}"><system-out>accuracy={s.accuracy:.4f} n={s.n} '
                     f"ci95=[{s.ci95_low:.4f},{s.ci95_high:.4f}]</system-out>{body}</testcase>")
    for method in bars:
        if method not in {s.method for s in typed}:
            cases.append(f'  <testcase classname={quoteattr(suite)} name={quoteattr(method)}>'
                         f'<failure message="not in this run"/></testcase>')
    gated = {f.split(": ", 1)[0]: f for f in gate_failures}
    for method, c in ((comparison or {}).get("comparisons") or {}).items():
        body = f"<failure message={quoteattr(gated[method])}/>" if method in gated else ""
        band = "none" if c.get("lower") is None else f"[{c['lower']:.4f},{c['upper']:.4f}]"
        cases.append(f'  <testcase classname={quoteattr(suite)} name={quoteattr(method + " vs " + comparison["old"])}>'
                     f"<system-out>outcome={c['outcome']} decided_on={c['by']} paired={c['paired']} "
                     f"delta={c.get('mean')} sequence={band}</system-out>{body}</testcase>")
    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name={quoteattr(suite)} tests="{len(cases)}" '
           f'failures="{sum("<failure" in c for c in cases)}">\n' + "\n".join(cases) + "\n</testsuite>\n")
    write_text_atomic(path, xml)


def refuse_unknown_bars(bars: dict[str, float], methods: list[str]) -> None:
    """A bar for a method the run does not have is a typo: say so before the evaluation, not after it."""
    unknown = [m for m in bars if m not in methods]
    if unknown:
        raise HyporagError(f"--fail-under {unknown[0]}=...: {unknown[0]!r} is not a method of this run "
                           f"({', '.join(methods)})")


def write_junit_error(path: str | Path, suite: str, error: str, exit_code: int) -> None:
    """The JUnit file of a run that did not finish (backend down, every question errored, disk full, interrupted):
    one errored case, so a CI never reads an older file's passing results as this run's."""
    xml = (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name={quoteattr(suite)} tests="1" failures="0" '
           f'errors="1">\n  <testcase classname={quoteattr(suite)} name="hyporag-eval"><error '
           f'message={quoteattr(error[:500])} type="exit {exit_code}"/></testcase>\n</testsuite>\n')
    write_text_atomic(path, xml)
