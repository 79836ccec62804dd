"""Every test that asserts on elapsed time carries the ``perf`` marker.

``pytest -m "not perf"`` must leave out everything a busy machine can fail, so a test
that reads a clock to judge speed (``perf_counter``, ``process_time``, or an
``elapsed``/``per_call`` figure it asserts on) is marked ``@pytest.mark.perf``. Tests that
only read a clock for a deadline or a timestamp are not timing-sensitive.
"""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent
#: Clock reads that only serve speed measurements.
_SPEED_CLOCKS = {"perf_counter", "perf_counter_ns", "process_time", "process_time_ns"}
#: Names of measured durations a timing assertion compares.
_DURATIONS = {"elapsed", "per_call"}


def _has_perf_marker(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for dec in fn.decorator_list:
        if isinstance(dec, ast.Call):
            dec = dec.func
        if isinstance(dec, ast.Attribute) and dec.attr == "perf":
            return True
    return False


def _times_itself(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute) and node.attr in _SPEED_CLOCKS:
            return True
        if isinstance(node, ast.Assert):
            names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
            if names & _DURATIONS:
                return True
    return False


def _unmarked_timing_tests(source: str, filename: str) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(source, filename)):
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test_")
            and _times_itself(node)
            and not _has_perf_marker(node)
        ):
            out.append(f"{filename}::{node.name}")
    return out


def test_timing_sensitive_tests_are_marked_perf() -> None:
    unmarked: list[str] = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.name == Path(__file__).name:
            continue
        rel = str(path.relative_to(TESTS))
        unmarked += _unmarked_timing_tests(path.read_text(encoding="utf-8"), rel)
    assert unmarked == [], "mark these @pytest.mark.perf: " + ", ".join(unmarked)


def test_the_check_sees_an_unmarked_timer_and_accepts_a_marked_one() -> None:
    unmarked = """
import time
def test_fast():
    t0 = time.perf_counter()
    work()
    elapsed = time.perf_counter() - t0
    assert elapsed < 1.0
"""
    marked = "import pytest\n@pytest.mark.perf" + unmarked.replace("import time", "", 1)
    deadline_only = """
import time
def test_waits():
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        pass
"""
    assert _unmarked_timing_tests(unmarked, "t.py") == ["t.py::test_fast"]
    assert _unmarked_timing_tests(marked, "t.py") == []
    assert _unmarked_timing_tests(deadline_only, "t.py") == []
