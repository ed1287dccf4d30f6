"""The one thread loop every evaluation, tuning trial and compile score runs through.

DSPy keeps `dspy.context(lm=..., adapter=...)` in a contextvar, which a bare worker thread does not inherit: a
program that takes its LM from the context would fail every question with "No LM is loaded". Each task here runs
in a copy of the submitting thread's context, as DSPy's own ParallelExecutor does.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")


def run_parallel(function: Callable[[Item], Result], items: Iterable[Item], threads: int = 1
                 ) -> Iterator[tuple[Item, Result]]:
    """Yield `(item, function(item))` as each finishes, on `threads` workers that see the caller's DSPy context.

    An exception from `function` (or Ctrl-C in the caller) cancels what has not started and propagates after the
    running tasks end, so a caller that stores each result as it comes keeps every finished one."""
    items = list(items)
    if threads <= 1:  # same semantics, no pool: tracebacks stay simple and nothing is scheduled ahead
        for item in items:
            yield item, function(item)
        return
    with ThreadPoolExecutor(max_workers=threads) as pool:
        futures = {pool.submit(contextvars.copy_context().run, function, item): item for item in items}
        try:
            for future in as_completed(futures):
                yield futures[future], future.result()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
