"""The session browser: every agent session on this machine, newest first.

Rows paint from the cached or header-read figures at once; a background worker then
loads each session still missing its exact figures (messages, live context tokens, %
of the window, compactions) and updates its cells. Typing filters, `Ctrl+S` / a click
on a heading sorts, Enter opens the inspector (Esc there comes back here).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import DataTable, Footer, Input, Static
from textual.worker import Worker, WorkerState, get_current_worker

from tinyjuice.discovery import RowCache, SessionRow
from tjui.screens.main import LoadRequest
from tjui.sessionlist import (
    COLUMNS,
    NUMERIC,
    WIDTHS,
    cells,
    fill_rows,
    filter_rows,
    find_rows,
)
from tjui.visible import visible

if TYPE_CHECKING:
    from textual import getters

    from tjui.app import TjuiApp

#: Seconds between batches of filled-in rows reaching the table.
FILL_BATCH = 0.25
#: Seconds after the list is up before sessions start loading for their exact figures.
FILL_DELAY = 0.5
#: Rows added to the table before the first frame (the rest follow it).
FIRST_ROWS = 100
#: Rows added per later step (each a few tens of milliseconds; input runs between).
MORE_ROWS = 500
#: Seconds between those steps.
MORE_DELAY = 0.02
#: Seconds of quiet typing before the filter applies.
FILTER_DELAY = 0.08


def _sort_key(column: str) -> Callable[[SessionRow], Any]:
    """How a column sorts (numbers as numbers, missing figures last)."""
    big = float("inf")

    def key(row: SessionRow) -> Any:
        ex = row.exact
        if column == "last_activity":
            return row.mtime
        if column == "size":
            return row.size
        if column == "messages":
            return row.messages if row.messages is not None else -1
        if column in ("live_tokens", "live_percent", "compactions"):
            value = getattr(ex, column, None) if ex else None
            return value if value is not None else -big
        return (getattr(row, column) or "").lower()

    return key


def _cells(row: SessionRow, now: float) -> list[Text]:
    """The row's cells, figures right-aligned; text as it is (a title's ``[`` is not
    markup) with control characters made visible."""
    return [
        Text(value, justify="right") if key in NUMERIC else Text(visible(value))
        for (key, _), value in zip(COLUMNS, cells(row, now), strict=True)
    ]


class BrowserScreen(Screen[None]):
    if TYPE_CHECKING:
        app = getters.app(TjuiApp)

    DEFAULT_CSS = """
    BrowserScreen #browser-header { height: 1; padding: 0 1; background: $primary-background; color: $text; text-style: bold; }
    BrowserScreen #filter { border: none; height: 1; padding: 0 1; background: $surface; }
    BrowserScreen DataTable { height: 1fr; }
    """

    BINDINGS = [
        Binding("down", "cursor(1)", "Down", show=False, id="browser.down"),
        Binding("up", "cursor(-1)", "Up", show=False, id="browser.up"),
        Binding("pagedown", "cursor(20)", "Page down", show=False, id="browser.page_down"),
        Binding("pageup", "cursor(-20)", "Page up", show=False, id="browser.page_up"),
        Binding("enter", "open", "Open", id="browser.open"),
        Binding("ctrl+s", "sort_next", "Sort column", id="browser.sort"),
        Binding("ctrl+r", "sort_reverse", "Reverse", id="browser.reverse"),
        Binding("escape", "clear_filter", "Clear filter", show=False, id="browser.clear"),
    ]

    @dataclass
    class Found(TMessage):
        rows: list[SessionRow]
        seconds: float

    @dataclass
    class Filled(TMessage):
        rows: list[SessionRow]

    @dataclass
    class FillDone(TMessage):
        pass

    def __init__(self, *, now: Callable[[], float] = time.time) -> None:
        super().__init__()
        self.now = now
        self.rows: dict[str, SessionRow] = {}
        self.shown: list[SessionRow] = []
        self.sort_column = "last_activity"
        self.sort_reverse = True
        self.filling = False
        self.found_seconds: float | None = None
        self._cache: RowCache | None = None
        self._filter_timer: Timer | None = None
        #: Bumped by each rebuild, so rows still queued from an older one are dropped.
        self._generation = 0

    def compose(self) -> ComposeResult:
        yield Static("Finding sessions…", id="browser-header", markup=False)
        yield Input(placeholder="type to filter (agent, project, title, path)", id="filter")
        table: DataTable[str] = DataTable(id="sessions", cursor_type="row", zebra_stripes=True)
        yield table
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        for (key, heading), width in zip(COLUMNS, WIDTHS, strict=True):
            label = Text(heading, justify="right") if key in NUMERIC else heading
            table.add_column(label, key=key, width=width)
        self.query_one("#filter", Input).focus()
        self._scan()

    # ----------------------------------------------------------------- workers

    @work(thread=True, exclusive=True, group="scan", name="scan", exit_on_error=False)
    def _scan(self) -> None:
        start = time.perf_counter()
        cache = RowCache.open()
        rows = find_rows(cache=cache)
        cache.save()  # the header rows, before the (long) fill: the next start is warm
        self._cache = cache
        self.post_message(self.Found(rows, time.perf_counter() - start))

    @work(thread=True, exclusive=True, group="fill", name="fill", exit_on_error=False)
    def _fill(self, rows: list[SessionRow], cache: RowCache) -> None:
        worker = get_current_worker()
        batch: list[SessionRow] = []
        last = time.monotonic()

        def emit(row: SessionRow) -> None:
            nonlocal last
            batch.append(row)
            if time.monotonic() - last >= FILL_BATCH:
                self.post_message(self.Filled(batch.copy()))
                batch.clear()
                last = time.monotonic()

        fill_rows(rows, cache, emit, cancelled=lambda: worker.is_cancelled, separate_process=True)
        if batch:
            self.post_message(self.Filled(batch))
        self.post_message(self.FillDone())

    # ----------------------------------------------------------------- updates

    def on_browser_screen_found(self, event: Found) -> None:
        self.rows = {r.key: r for r in event.rows}
        self.found_seconds = event.seconds
        self._rebuild()
        missing = [r for r in event.rows if r.exact is None and r.error is None]
        if missing and self._cache is not None:
            self.filling = True
            # After the rows are up: loading competes with the first paint for the CPU.
            self.set_timer(FILL_DELAY, partial(self._start_fill, missing, self._cache))
        self._update_header()

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is not WorkerState.ERROR:
            return
        self.filling = False
        what = "find sessions" if event.worker.group == "scan" else "fill in the figures"
        self.notify(f"could not {what}: {event.worker.error}", severity="error")
        self._update_header()

    def _start_fill(self, rows: list[SessionRow], cache: RowCache) -> None:
        self._fill(rows, cache)

    def on_browser_screen_filled(self, event: Filled) -> None:
        table = self.query_one(DataTable)
        for row in event.rows:
            self.rows[row.key] = row
            if row.key not in table.rows:
                continue  # filtered out, or not added yet (it is added with its figures)
            for (column, _), value in zip(COLUMNS, _cells(row, self.now()), strict=True):
                table.update_cell(row.key, column, value)
        self.shown = [self.rows[r.key] for r in self.shown]
        self._update_header()

    def on_browser_screen_fill_done(self, event: FillDone) -> None:
        self.filling = False
        self._update_header()

    def _update_header(self) -> None:
        total = len(self.rows)
        state = " · filling in figures…" if self.filling else ""
        shown = f"{len(self.shown):,} of {total:,}" if len(self.shown) != total else f"{total:,}"
        order = "↓" if self.sort_reverse else "↑"
        heading = dict(COLUMNS)[self.sort_column]
        self.query_one("#browser-header", Static).update(
            f"Sessions on this machine · {shown} session{'s' if total != 1 else ''}"
            f" · sorted by {heading} {order}{state}"
        )

    def _rebuild(self) -> None:
        """Filter, sort and repaint the table, keeping the selected session when it stays.

        The first screenful of rows goes in at once; the rest in steps after that frame
        is drawn (thousands of rows cost a few hundred milliseconds to add).
        """
        table = self.query_one(DataTable)
        selected = self.selected()
        text = self.query_one("#filter", Input).value
        rows = filter_rows(list(self.rows.values()), text=text)
        rows.sort(key=_sort_key(self.sort_column), reverse=self.sort_reverse)
        # The bundled demo is not a session of this machine: always the last row.
        rows = [r for r in rows if r.agent != "demo"] + [r for r in rows if r.agent == "demo"]
        self.shown = rows
        self._generation += 1
        table.clear()
        keep = selected.key if selected is not None else None
        self._add_rows(self._generation, rows[:FIRST_ROWS], keep)
        for step, start in enumerate(range(FIRST_ROWS, len(rows), MORE_ROWS), 1):
            chunk = rows[start : start + MORE_ROWS]
            gen = self._generation
            # Timers, not call_after_refresh: each step lets a frame and input through.
            self.set_timer(MORE_DELAY * step, partial(self._add_rows, gen, chunk, keep))
        self._update_header()

    def _add_rows(self, generation: int, rows: list[SessionRow], keep: str | None) -> None:
        if generation != self._generation:
            return  # a newer filter or sort has rebuilt the table since
        table = self.query_one(DataTable)
        now = self.now()
        start = table.row_count
        for row in rows:
            table.add_row(*_cells(self.rows.get(row.key, row), now), key=row.key)
        if keep is not None:
            keys = [r.key for r in rows]
            if keep in keys:
                table.move_cursor(row=start + keys.index(keep), animate=False)

    def selected(self) -> SessionRow | None:
        table = self.query_one(DataTable)
        if not self.shown or table.cursor_row >= len(self.shown):
            return None
        return self.shown[table.cursor_row]

    # ----------------------------------------------------------------- actions

    @on(Input.Changed, "#filter")
    def _filter_changed(self) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(FILTER_DELAY, self._rebuild)

    @on(Input.Submitted, "#filter")
    def _submitted(self) -> None:
        self.action_open()

    @on(DataTable.RowSelected)
    def _row_selected(self) -> None:
        self.action_open()

    @on(DataTable.HeaderSelected)
    def _header_selected(self, event: DataTable.HeaderSelected) -> None:
        column = str(event.column_key.value)
        if column == self.sort_column:
            self.sort_reverse = not self.sort_reverse
        else:
            self.sort_column, self.sort_reverse = column, column != "agent"
        self._rebuild()

    def action_cursor(self, delta: int) -> None:
        table = self.query_one(DataTable)
        if self.shown:
            row = max(0, min(len(self.shown) - 1, table.cursor_row + delta))
            table.move_cursor(row=row, animate=False)

    def action_sort_next(self) -> None:
        keys = [k for k, _ in COLUMNS]
        self.sort_column = keys[(keys.index(self.sort_column) + 1) % len(keys)]
        # Text columns sort A→Z first; figures biggest (or newest) first.
        self.sort_reverse = self.sort_column not in ("agent", "project", "title")
        self._rebuild()

    def action_sort_reverse(self) -> None:
        self.sort_reverse = not self.sort_reverse
        self._rebuild()

    def action_clear_filter(self) -> None:
        self.query_one("#filter", Input).value = ""

    def action_open(self) -> None:
        row = self.selected()
        if row is None:
            return
        if row.error is not None and row.exact is None:
            self.notify(row.error, title="Cannot open this session", severity="warning")
            return
        self.app.open(LoadRequest(path=Path(row.path), session=row.session))
