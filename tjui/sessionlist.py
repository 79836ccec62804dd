"""The session list shared by ``tjui ls`` and the browser: finding rows, and their cells.

Finding is core's (:mod:`tinyjuice.discovery`); this module adds the bundled demo,
the cache, filters, and how each figure is written in a cell.
"""

from __future__ import annotations

import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from tinyjuice.discovery import RowCache, SessionRow, discover, fill_row
from tjui.paths import demo_session

__all__ = [
    "COLUMNS",
    "NUMERIC",
    "WIDTHS",
    "age",
    "cells",
    "fill_rows",
    "filter_rows",
    "find_rows",
    "human_size",
    "short_tokens",
]

#: (key, heading) of each column, in display order.
COLUMNS: tuple[tuple[str, str], ...] = (
    ("agent", "agent"),
    ("project", "project"),
    ("title", "title / first ask"),
    ("last_activity", "last activity"),
    ("messages", "msgs"),
    ("live_tokens", "live tokens"),
    ("live_percent", "% window"),
    ("compactions", "compactions"),
    ("size", "size"),
)
#: Width of each column (characters), in :data:`COLUMNS` order.
WIDTHS: tuple[int, ...] = (17, 22, 38, 13, 6, 11, 8, 11, 9)
#: The columns holding figures (right-aligned).
NUMERIC: frozenset[str] = frozenset(
    {"messages", "live_tokens", "live_percent", "compactions", "size"}
)


def _demo() -> list[tuple[str, Path]]:
    try:
        return [("demo", demo_session())]
    except FileNotFoundError:
        return []


def find_rows(
    *, agents: Sequence[str] | None = None, cache: RowCache | None = None
) -> list[SessionRow]:
    """Every session on this machine plus the demo, newest first (header figures)."""
    return discover(agents=agents, extra=_demo(), cache=cache)


#: Sessions at least this large are loaded in a separate process (tiktoken holds the
#: GIL while it counts; the browser's input must not wait).
SUBPROCESS_BYTES = 4 * 1024 * 1024
#: Sessions loaded per step of :func:`fill_rows` (one round trip to the worker process).
FILL_CHUNK = 16


def _fill_many(rows: Sequence[SessionRow]) -> list[SessionRow]:
    return [fill_row(r) for r in rows]


def fill_rows(
    rows: Sequence[SessionRow],
    cache: RowCache,
    emit: Callable[[SessionRow], None],
    cancelled: Callable[[], bool] = lambda: False,
    *,
    separate_process: bool = False,
) -> None:
    """Fill in the exact figures of every row that has none yet, in order, caching each.

    ``emit`` gets each filled row; the cache is saved at the end (and when cancelled).
    With ``separate_process`` (the browser) every session is loaded in a worker
    process, so the UI's interpreter stays free; otherwise only large ones are.
    """
    todo = [r for r in rows if r.exact is None and r.error is None]
    pool: _Pool | None = _Pool() if separate_process else None
    try:
        for start in range(0, len(todo), FILL_CHUNK):
            if cancelled():
                return
            chunk = todo[start : start + FILL_CHUNK]
            if pool is None and any(r.size >= SUBPROCESS_BYTES for r in chunk):
                pool = _Pool()
            filled = pool.fill(chunk) if pool is not None else _fill_many(chunk)
            for row in filled:
                cache.update_row(row)
                emit(row)
    finally:
        if pool is not None:
            pool.close()
        cache.save()


class _Pool:
    """One worker process for loading sessions; the calling thread when none can start
    (a process cannot always be spawned, e.g. under a test harness's captured streams)."""

    def __init__(self) -> None:
        self.executor: ProcessPoolExecutor | None = None
        self.broken = False

    def fill(self, rows: Sequence[SessionRow]) -> list[SessionRow]:
        if not self.broken:
            try:
                if self.executor is None:
                    ctx = multiprocessing.get_context("spawn")
                    self.executor = ProcessPoolExecutor(max_workers=1, mp_context=ctx)
                return self.executor.submit(_fill_many, rows).result()
            except (OSError, ValueError, BrokenProcessPool):
                self.broken = True
        return _fill_many(rows)

    def close(self) -> None:
        if self.executor is not None:
            self.executor.shutdown(cancel_futures=True)


def filter_rows(
    rows: Sequence[SessionRow], *, project: str | None = None, text: str | None = None
) -> list[SessionRow]:
    """Rows whose project contains ``project``; and any cell containing ``text``."""
    out = list(rows)
    if project:
        p = project.lower()
        out = [r for r in out if p in (r.project or "").lower()]
    if text:
        words = text.lower().split()
        out = [r for r in out if all(w in _haystack(r) for w in words)]
    return out


def _haystack(row: SessionRow) -> str:
    return " ".join(
        x for x in (row.agent, row.project, row.title, row.path, row.session) if x
    ).lower()


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # unreachable: the loop returns at GB


def short_tokens(n: int | None) -> str:
    if n is None:
        return "…"
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{round(n / 1000)}k"
    return f"{n:,}"


def age(mtime: float, now: float | None = None) -> str:
    """How long ago, in the largest whole unit ("3m ago", "2d ago")."""
    seconds = max(0.0, (time.time() if now is None else now) - mtime)
    for unit, span in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= span:
            return f"{int(seconds // span)}{unit} ago"
    return "just now"


def short_project(project: str | None, width: int = WIDTHS[1]) -> str:
    """A project directory for a cell: ``~`` for the home, cut from the left when long."""
    if not project:
        return ""
    home = str(Path.home())
    if project == home or project.startswith(home + "/"):
        project = "~" + project[len(home) :]
    return project if len(project) <= width else "…" + project[-(width - 1) :]


def cells(row: SessionRow, now: float | None = None) -> tuple[str, ...]:
    """The row's cells, in :data:`COLUMNS` order ("…" while a figure is still coming,
    "~" before an estimate, "—" when the session cannot be loaded)."""
    ex = row.exact
    missing = "—" if row.error else "…"
    if ex is not None:
        messages = f"{ex.messages:,}"
    elif row.messages_estimate is not None:
        messages = f"~{row.messages_estimate:,}"
    else:
        messages = missing
    agent = row.agent + (" (sub)" if row.parent and row.agent == "claude-code" else "")
    return (
        agent,
        short_project(row.project),
        row.title or (row.error or ""),
        "bundled" if row.agent == "demo" else age(row.mtime, now),
        messages,
        short_tokens(ex.live_tokens) if ex else missing,
        f"{ex.live_percent:.0f}%" if ex else missing,
        str(ex.compactions) if ex else missing,
        human_size(row.size),
    )
