"""tjui's benchmark harness: ``python -m benchmarks``.

The harness runs *sections*, each a module in this package with ``TITLE`` and
``run(ctx: RunContext) -> dict``, registered by name in :data:`SECTIONS`. A section's
result is a JSON object stored under its name in ``benchmarks/results.json``; running
one section merges its result into the file and leaves the other sections alone.

Every section result carries a ``targets`` list of rows, one per claim the issue makes::

    {"id": "load.openai", "measurement": "...", "figure": "...", "target": "...",
     "value": 2.7, "limit": 4.0, "pass": true}

``value``/``limit`` are the numbers compared, ``figure``/``target`` the same for a
reader, and ``pass`` a boolean. :func:`render_markdown` turns the rows of every
section into the README table.
"""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "BENCH_DIR",
    "DEFAULT_SIZES",
    "MEASURED",
    "REPO_ROOT",
    "RESULTS_PATH",
    "SECTIONS",
    "WORK_DIR",
    "RunContext",
    "load_results",
    "machine_info",
    "merge_results",
    "now_iso",
    "render_markdown",
    "stderr_log",
    "target_row",
    "write_results",
]

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
RESULTS_PATH = BENCH_DIR / "results.json"
#: Generated transcripts (git-ignored).
WORK_DIR = BENCH_DIR / "_work"
#: The issue's transcript sizes, in messages.
DEFAULT_SIZES: tuple[int, ...] = (1_000, 10_000, 100_000)

#: Registered sections: name -> module. Add ``"engine": "benchmarks.engine"`` and so on.
SECTIONS: dict[str, str] = {
    "foundation": "benchmarks.foundation",
    "engine": "benchmarks.engine",
    "ui": "benchmarks.ui",
    "batch": "benchmarks.batch",
    "savings": "benchmarks.savings",
    "browser": "benchmarks.browser",
    "follow": "benchmarks.follow",
    "review": "benchmarks.review",
    "speed": "benchmarks.speed",
    "reopen": "benchmarks.reopen",
    "hermes": "benchmarks.hermes",
    "hermes_engine": "benchmarks.hermes_engine",
}

#: Top-level keys of results.json that are not sections.
_RESERVED = ("machine", "generated")
#: The key under which each section records the run that measured it (merge_results).
MEASURED = "measured"


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a section is asked to measure, and where it may write scratch files."""

    sizes: tuple[int, ...] = DEFAULT_SIZES
    #: Formats to measure; empty means every format.
    formats: tuple[str, ...] = ()
    #: Fewer repeats (smoke runs, quick checks); the figures are noisier.
    quick: bool = False
    work_dir: Path = WORK_DIR
    log: Callable[[str], None] = field(default=lambda _msg: None)


def target_row(
    id: str,
    measurement: str,
    figure: str,
    target: str,
    value: float | None,
    limit: float,
    *,
    at_most: bool,
) -> dict[str, Any]:
    """One row of the targets table; ``pass`` is False when ``value`` is missing."""
    ok = value is not None and (value <= limit if at_most else value >= limit)
    return {
        "id": id,
        "measurement": measurement,
        "figure": figure,
        "target": target,
        "value": value,
        "limit": limit,
        "pass": ok,
    }


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _memory_gb() -> float | None:
    try:
        pages = os.sysconf("SC_PHYS_PAGES")
        size = os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
    return round(pages * size / 1e9, 1)


def machine_info() -> dict[str, Any]:
    """The machine the figures were measured on."""
    return {
        "cpu_count": os.cpu_count(),
        "cpu": _cpu_model(),
        "memory_gb": _memory_gb(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
    }


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def load_results(path: Path = RESULTS_PATH) -> dict[str, Any]:
    """The results file, or an empty mapping when there is none yet."""
    if not path.exists():
        return {}
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise SystemExit(f"{path}: not valid JSON ({exc}); delete it or fix it and rerun") from None
    if not isinstance(doc, dict):
        raise SystemExit(f"{path}: expected a JSON object with one key per section")
    return doc


def merge_results(
    existing: Mapping[str, Any],
    sections: Mapping[str, Any],
    *,
    machine: Mapping[str, Any],
    generated: str,
) -> dict[str, Any]:
    """``existing`` with ``sections`` replaced, other sections kept, machine/date updated.

    Each section keeps the run that measured it under :data:`MEASURED` (its date and
    machine): a partial run (``--section``) leaves the other sections as an earlier run
    measured them, maybe on another host, and the top-level ``machine``/``generated``
    only say what the latest run was. A section from before sections were stamped takes
    the top-level run it was kept under, marked ``inherited`` (measured no later than
    that date).
    """
    merged: dict[str, Any] = {"machine": dict(machine), "generated": generated}
    earlier = {
        "generated": existing.get("generated"),
        "machine": existing.get("machine"),
        "inherited": True,
    }
    for key, value in existing.items():
        if key in _RESERVED:
            continue
        if isinstance(value, Mapping) and MEASURED not in value and earlier["machine"]:
            value = {**value, MEASURED: earlier}
        merged[key] = value
    for name, value in sections.items():
        merged[name] = {**value, MEASURED: {"generated": generated, "machine": dict(machine)}}
    return merged


def write_results(results: Mapping[str, Any], path: Path = RESULTS_PATH) -> None:
    """Write ``results`` atomically, pretty-printed with sorted-stable keys."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(orjson.dumps(results, option=orjson.OPT_INDENT_2) + b"\n")
    os.replace(tmp, path)


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def render_markdown(results: Mapping[str, Any], sections: Sequence[str] | None = None) -> str:
    """The README table: one row per target of every section, with pass/fail."""
    names = list(sections) if sections is not None else [k for k in results if k not in _RESERVED]
    lines = ["| measurement | figure | target | pass/fail |", "|---|---|---|---|"]
    for name in names:
        section = results.get(name)
        if not isinstance(section, Mapping):
            continue
        for row in section.get("targets", ()):
            verdict = "pass" if row.get("pass") else "**fail**"
            lines.append(
                f"| {_cell(row['measurement'])} | {_cell(row['figure'])} | "
                f"{_cell(row['target'])} | {verdict} |"
            )
    runs: dict[str, list[str]] = {}
    for name in names:
        section = results.get(name)
        if isinstance(section, Mapping):
            stamp = section.get(MEASURED) or results
            note = _run_note(stamp)
            if note:
                runs.setdefault(note, []).append(name)
    if runs:
        lines.append("")
    for note, measured in runs.items():
        # One run: the sentence as it always read; several: which sections each measured.
        lines.append(f"{note}." if len(runs) == 1 else f"{', '.join(measured)}: {note}.")
    return "\n".join(lines) + "\n"


def _run_note(stamp: Mapping[str, Any]) -> str | None:
    """ "Measured DATE on N × CPU, …": the run a section was measured in (see MEASURED)."""
    machine = stamp.get("machine")
    if not isinstance(machine, Mapping):
        return None
    when = "Measured no later than" if stamp.get("inherited") else "Measured"
    note = (
        f"{when} {str(stamp.get('generated') or '')[:10]} on {machine.get('cpu_count')} × "
        f"{machine.get('cpu') or 'unknown CPU'}, Python {machine.get('python')} "
        f"({machine.get('platform')})"
    )
    load = machine.get("load_average")
    if isinstance(load, Mapping) and load.get("start") is not None:
        note += f"; 1-min load average {load['start']} at the start, {load.get('end')} at the end"
    return note


class ChildFailed(RuntimeError):
    """A measuring child process exited with an error (the message: its last line)."""


def run_child(
    args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 600
) -> dict[str, Any]:
    """Run ``python -m ARGS`` from the repository root; the JSON object on its last line.

    Raises :class:`ChildFailed` with the last line it printed when it fails.
    """
    import subprocess

    proc = subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO_ROOT,
        env=None if env is None else dict(env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    if proc.returncode != 0:
        last = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["no output"]
        raise ChildFailed(last[0])
    result: dict[str, Any] = orjson.loads(proc.stdout.strip().splitlines()[-1])
    return result


def stderr_log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
