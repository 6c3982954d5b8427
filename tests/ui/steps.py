"""Work counted, not timed: how many Python steps (calls, lines, returns) a call takes.

A count does not depend on the machine or its load, so a test can assert that work
grows linearly with the input (2x the input, about 2x the steps; quadratic is 4x)
where a wall-clock bound would be flaky. Time in C (a regex's own backtracking, Qt)
is not counted: the benchmarks time that (benchmarks/markdown_hostile_bench.py).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import FrameType
from typing import Any


def python_steps(fn: Callable[[], object]) -> int:
    """The trace events (call, line, return, exception) that running ``fn()`` produces."""
    count = 0

    def tracer(frame: FrameType, event: str, arg: Any) -> Callable[..., Any]:
        nonlocal count
        count += 1
        return tracer

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        fn()
    finally:
        sys.settrace(previous)
    return count


def growth(make: Callable[[int], str], run: Callable[[str], object], small: int, factor: int = 4) -> float:
    """Steps at ``factor * small`` over steps at ``small``, divided by ``factor`` (1 is linear)."""
    a = python_steps(lambda: run(make(small)))
    b = python_steps(lambda: run(make(small * factor)))
    return b / a / factor
