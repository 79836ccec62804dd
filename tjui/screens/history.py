"""The history screen: commits from the archive, newest first, with undo.

Lists what :func:`tinyjuice.store.history` returns (for one file, or all with `a`);
`u` undoes the selected commit, `F` forces it when the file changed after the commit
(the current state is archived first). Undo runs in a worker; refusals are shown on
the status line, never as a traceback. Closing returns the commits undone here, so the
inspector can reload a file an undo restored.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static
from textual.worker import Worker

from tinyjuice.store import (
    Archive,
    ArchiveError,
    ChangedSinceCommit,
    CommitError,
    CommitRecord,
    CommitState,
    history,
    undo,
)
from tjui.workers import ForwardWorkerErrors, failure_text

__all__ = ["HistoryScreen", "record_row"]

COLUMNS = ("commit", "when", "mode", "state", "tokens", "target")


def record_row(r: CommitRecord) -> tuple[str, ...]:
    """One table row for a commit."""
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.created_at))
    tokens = (
        f"{r.tokens_before:,} → {r.tokens_after:,}"
        if r.tokens_before is not None and r.tokens_after is not None
        else "-"
    )
    return (r.id, when, r.mode.value, r.state.value, tokens, r.target_label)


def record_detail(r: CommitRecord) -> str:
    lines = [
        f"source {r.source_label} · {r.format} · archived {r.source_size:,} bytes"
        f" (sha256 {r.source_sha256[:12]}…)",
        f"target {r.target_label} · {r.target_format}",
    ]
    if r.summary_kind or r.profile:
        lines.append(f"summary {r.summary_kind or '-'} · profile {r.profile or '-'}")
    if r.note:
        lines.append(f"note: {r.note}")
    return "\n".join(lines)


class HistoryScreen(ForwardWorkerErrors, Screen[tuple[CommitRecord, ...]]):
    """Commits in the archive; `u` undoes the selected one."""

    BINDINGS = [
        Binding("u", "undo", "Undo commit", id="history.undo"),
        Binding("F", "undo(True)", "Force undo", id="history.force_undo"),
        Binding("a", "toggle_all", "All files", id="history.all"),
        Binding("escape", "close", "Back", id="history.close"),
    ]

    @dataclass
    class Loaded(TMessage):
        records: list[CommitRecord]

    @dataclass
    class Undone(TMessage):
        record: CommitRecord

    def __init__(
        self,
        source: str | Path | None = None,
        *,
        session: str | None = None,
        archive: Archive | None = None,
    ) -> None:
        super().__init__()
        self.source = Path(source) if source is not None else None
        self.session_id = session
        self.archive = archive
        self.show_all = source is None
        self.records: list[CommitRecord] = []
        #: Commits undone on this screen (returned on close).
        self.undone: list[CommitRecord] = []
        self._empty_shown = False

    def compose(self) -> ComposeResult:
        yield Static("", id="history-title", markup=False)
        yield DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
        yield Static("", id="history-detail", markup=False)
        yield Static("", id="history-status", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns(*COLUMNS)
        table.focus()
        self.refresh_records()

    # ---------------------------------------------------------------- loading

    def refresh_records(self) -> None:
        where = "all files" if self.show_all or self.source is None else str(self.source)
        self.query_one("#history-title", Static).update(f"Commit history · {where}")
        self._load()

    @work(thread=True, exclusive=True, group="history-load", exit_on_error=False)
    def _load(self) -> None:
        source = None if self.show_all else self.source
        session = None if self.show_all else self.session_id
        records = history(source, session=session, archive=self.archive)
        self.post_message(self.Loaded(records))

    def on_history_screen_loaded(self, event: Loaded) -> None:
        self.records = event.records
        table = self.query_one(DataTable)
        table.clear()
        for r in event.records:
            table.add_row(*record_row(r), key=r.id)
        if not event.records:
            where = "" if self.show_all or self.source is None else " for this file (a: all files)"
            self._status(
                f"no commits yet{where} — commit a compaction with c in the inspector", ok=True
            )
            self._empty_shown = True
        elif self._empty_shown:
            # The list has rows now (e.g. after a: all files): the empty note is stale.
            self._status("", ok=True)
            self._empty_shown = False
        self._show_detail()

    def _selected(self) -> CommitRecord | None:
        table = self.query_one(DataTable)
        if not self.records or table.cursor_row < 0 or table.cursor_row >= len(self.records):
            return None
        return self.records[table.cursor_row]

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail()

    def _show_detail(self) -> None:
        r = self._selected()
        self.query_one("#history-detail", Static).update(record_detail(r) if r else "")

    def _status(self, text: str, *, ok: bool) -> None:
        line = self.query_one("#history-status", Static)
        line.update(text)
        line.set_class(ok, "-ok")
        line.set_class(not ok, "-error")

    # ----------------------------------------------------------------- undo

    def action_undo(self, force: bool = False) -> None:
        r = self._selected()
        if r is None:
            return
        if r.state is not CommitState.DONE:
            self._status(f"commit {r.id} is {r.state.value}; nothing to undo", ok=False)
            return
        self._status(f"undoing {r.id}…", ok=True)
        self._undo(r.id, force)

    @work(thread=True, exclusive=True, group="history-undo", exit_on_error=False)
    def _undo(self, commit_id: str, force: bool) -> None:
        record = undo(commit_id, force=force, archive=self.archive)
        self.post_message(self.Undone(record))

    def on_history_screen_undone(self, event: Undone) -> None:
        r = event.record
        self.undone.append(r)
        what = "original restored (sha256 verified)" if r.before_sha256 else "new file removed"
        self._status(f"undone {r.id} · {r.target_label} · {what}", ok=True)
        self._load()

    def show_failure(self, worker: Worker[Any]) -> bool:
        """A failed load or undo is shown on the status line."""
        error = worker.error
        if isinstance(error, ChangedSinceCommit):
            self._status(f"{error} — press F to force", ok=False)
        else:
            self._status(failure_text(error, CommitError, ArchiveError, OSError), ok=False)
        return True

    def action_toggle_all(self) -> None:
        if self.source is None:
            return
        self.show_all = not self.show_all
        self.refresh_records()

    def action_close(self) -> None:
        self.dismiss(tuple(self.undone))
