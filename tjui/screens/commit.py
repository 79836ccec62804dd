"""The commit dialog: choose how to persist the compaction, see what is archived, commit.

Shows the engine's figures (tokens before → after, summary kind, profile, boundary),
the mode (in place / child / export — preset from the report's persistence
recommendation), the target, and what goes into the archive before anything is
written. Committing runs in a worker with a progress bar fed by the store's stages;
the result line names the commit and the undo key. All persistence rules live in
:mod:`tinyjuice.store`; this screen only shows its plan and calls it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.message import Message as TMessage
from textual.screen import ModalScreen
from textual.timer import Timer
from textual.widgets import (
    Button,
    Footer,
    Input,
    Label,
    ProgressBar,
    RadioButton,
    RadioSet,
    Select,
    Static,
)
from textual.worker import Worker, WorkerState

from tinyjuice.formats import WRITABLE_FORMATS, LoadError
from tinyjuice.report import CompactionResult
from tinyjuice.store import (
    Archive,
    ArchiveError,
    CommitError,
    CommitMode,
    CommitPlan,
    CommitRecord,
    LoadedSource,
    StaleSourceError,
    commit,
    load_source,
    plan_commit,
    undo,
)
from tjui.session import InspectorSession

__all__ = ["STAGES", "CommitDialog", "CommitOutcome", "plan_summary"]

#: The store's progress stages, in order (the bar advances one step per stage).
STAGES: tuple[str, ...] = ("checking", "archiving", "writing", "done")
#: Seconds the target field must rest before the plan follows what was typed.
REPLAN_DELAY = 0.3
_MODE_IDS = {CommitMode.IN_PLACE: "mode-in-place", CommitMode.CHILD: "mode-child",
             CommitMode.EXPORT: "mode-export"}  # fmt: skip


@dataclass(frozen=True, slots=True)
class CommitOutcome:
    """What the dialog did: the commit (if any), whether it was undone again, and
    whether the caller should reload the transcript (stale source, or it changed)."""

    record: CommitRecord | None
    undone: bool = False
    reload: bool = False

    @property
    def source_changed(self) -> bool:
        """The loaded file/session now differs from what the inspector shows."""
        return (
            self.record is not None and self.record.mode is CommitMode.IN_PLACE and not self.undone
        )


def plan_summary(plan: CommitPlan) -> str:
    """The figures line: tokens before → after, summary, profile, boundary."""
    report = plan.report
    if report is None:
        return f"{len(plan.transcript.messages):,} messages"
    saved = f" (−{report.percent_saved:.1f}%)" if report.before_tokens else ""
    return (
        f"tokens {report.before_tokens:,} → {report.after_tokens:,} {report.tokens_kind}{saved}"
        f" · summary {report.summary_kind.value} · profile {report.profile.value}"
        f" · messages {report.boundary_start}–{(report.boundary_end or 1) - 1} compressed"
    )


class CommitDialog(ModalScreen[CommitOutcome | None]):
    """Commit the compaction on screen; dismisses with a :class:`CommitOutcome`.

    ``source`` is the :class:`~tinyjuice.store.LoadedSource` the inspector loaded
    (best: its sha256 is of the very bytes on screen), or the transcript's path, in
    which case it is read again here and must hold the same messages as the session.
    """

    DEFAULT_CSS = """
    CommitDialog { align: center middle; }
    CommitDialog > Vertical {
        width: 90%; max-width: 110; height: auto; max-height: 90%; padding: 0 2;
        border: thick $primary; background: $panel; overflow-y: auto;
    }
    CommitDialog #commit-title { text-style: bold; color: $primary; margin: 1 0; }
    CommitDialog #commit-figures { color: $text; margin-bottom: 1; }
    CommitDialog RadioSet { layout: horizontal; height: auto; border: none; background: $panel; }
    CommitDialog RadioSet:focus { border: none; }
    CommitDialog #commit-target-row { height: auto; margin-top: 1; }
    CommitDialog #commit-target { width: 1fr; }
    CommitDialog #commit-format { width: 22; margin-left: 1; }
    CommitDialog #commit-writes { margin-top: 1; }
    CommitDialog #commit-writes, CommitDialog #commit-archives { color: $text-muted; }
    CommitDialog #commit-notes { color: $warning; }
    CommitDialog #commit-progress { margin-top: 1; }
    CommitDialog #commit-result { text-style: bold; }
    CommitDialog #commit-result.-ok { color: $success; }
    CommitDialog #commit-result.-error { color: $error; }
    CommitDialog #commit-buttons { height: auto; align-horizontal: right; margin: 1 0; }
    CommitDialog Button { margin-left: 1; }
    """

    BINDINGS = [
        Binding("ctrl+s", "commit", "Commit", id="commit.confirm"),
        Binding("m", "cycle_mode", "Mode", id="commit.mode"),
        Binding("u", "undo", "Undo commit", id="commit.undo"),
        Binding("r", "reload", "Reload source", show=False, id="commit.reload"),
        Binding("escape", "close", "Close", id="commit.close"),
    ]

    @dataclass
    class Planned(TMessage):
        plan: CommitPlan | None
        error: str | None
        #: Which request this answers (older answers are dropped).
        generation: int = 0

    @dataclass
    class Stage(TMessage):
        stage: str

    @dataclass
    class Committed(TMessage):
        record: CommitRecord

    @dataclass
    class Undone(TMessage):
        record: CommitRecord

    def __init__(
        self,
        session: InspectorSession,
        source: LoadedSource | Path,
        *,
        fmt: str | None = None,
        hermes_session: str | None = None,
        result: CompactionResult | None = None,
        archive: Archive | None = None,
    ) -> None:
        super().__init__()
        self.session = session
        self._source = source
        self._fmt = fmt
        self._hermes_session = hermes_session
        self.result = result
        self.archive = archive
        self.loaded: LoadedSource | None = source if isinstance(source, LoadedSource) else None
        self.plan: CommitPlan | None = None
        self.mode: CommitMode | None = None
        self.record: CommitRecord | None = None
        self.undone = False
        self.stale = False
        self.busy = False
        #: (mode, target, format) the current plan was made for; Ctrl+S commits only a
        #: plan made for what the fields show now, re-planning first otherwise.
        self._plan_key: tuple[CommitMode | None, str, str | None] | None = None
        self._pending_key: tuple[CommitMode | None, str, str | None] | None = None
        self._generation = 0
        #: Whether the pending plan fills the target field with its default path.
        self._fill_target = True
        #: Commit as soon as the pending plan is made (Ctrl+S while it was not ready).
        self._commit_when_planned = False
        self._typing_timer: Timer | None = None
        #: The target the dialog filled in itself (replaced when the mode changes).
        self._auto_target = ""

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Commit compaction", id="commit-title")
            yield Static("computing the compaction…", id="commit-figures", markup=False)
            with RadioSet(id="commit-mode"):
                yield RadioButton("in place", id="mode-in-place")
                yield RadioButton("child continuation", id="mode-child")
                yield RadioButton("export", id="mode-export")
            with Horizontal(id="commit-target-row"):
                yield Input(placeholder="target path", id="commit-target", compact=True)
                yield Select(
                    [(f, f) for f in WRITABLE_FORMATS],
                    prompt="format",
                    id="commit-format",
                    allow_blank=True,
                    compact=True,
                )
            yield Static("", id="commit-writes", markup=False)
            yield Static("", id="commit-archives", markup=False)
            yield Static("", id="commit-notes", markup=False)
            yield ProgressBar(total=len(STAGES), show_eta=False, id="commit-progress")
            yield Static("", id="commit-result", markup=False)
            with Horizontal(id="commit-buttons"):
                yield Button(
                    "Commit", variant="primary", id="commit-go", disabled=True, compact=True
                )
                yield Button("Close", id="commit-close", compact=True)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#commit-progress").display = False
        self._pending_key = (None, "", None)
        self._prepare(None, None, None, self._generation)

    # ----------------------------------------------------------------- workers

    @work(thread=True, exclusive=True, group="commit-plan", exit_on_error=False)
    def _prepare(
        self, mode: CommitMode | None, target: str | None, fmt: str | None, generation: int
    ) -> None:
        try:
            if self.result is None:
                # The figure the main screen and the preview show, if one was computed.
                self.result = self.session.current_result or self.session.compute()
            if self.loaded is None:
                self.loaded = self._load_source()
            plan = plan_commit(
                self._for_commit(self.result), self.loaded, mode=mode, target=target or None,
                target_format=fmt, split=self.session.split,
            )  # fmt: skip
        except StaleSourceError as exc:
            self.stale = True
            self.post_message(self.Planned(None, str(exc), generation))
            return
        except (CommitError, ArchiveError, LoadError, OSError) as exc:
            self.post_message(self.Planned(None, str(exc), generation))
            return
        self.post_message(self.Planned(plan, None, generation))

    def _load_source(self) -> LoadedSource:
        path = Path(self._source) if not isinstance(self._source, LoadedSource) else None
        assert path is not None
        loaded = load_source(path, self._fmt, session=self._hermes_session)
        if loaded.transcript.messages != self.session.whole.messages:
            raise StaleSourceError(
                f"{path} changed since it was loaded (an agent may have appended a turn);"
                " nothing was written — press r to reload"
            )
        return loaded

    def _for_commit(self, result: CompactionResult) -> CompactionResult:
        """The result with the file's own model and window (the inspector may override
        them for display); those overrides are never written back."""
        if self.loaded is None:
            return result
        original = self.loaded.transcript
        t = result.transcript
        if t.model == original.model and t.context_window == original.context_window:
            return result
        fixed = replace(t, model=original.model, context_window=original.context_window)
        return replace(result, transcript=fixed)

    @work(thread=True, exclusive=True, group="commit-run", exit_on_error=False)
    def _run_commit(self, plan: CommitPlan) -> None:
        def stage(name: str) -> None:
            self.post_message(self.Stage(name))

        record = commit(
            plan.transcript, plan.source, plan=plan, archive=self.archive, progress=stage
        )
        self.post_message(self.Stage("done"))
        self.post_message(self.Committed(record))

    @work(thread=True, exclusive=True, group="commit-run", exit_on_error=False)
    def _run_undo(self, commit_id: str) -> None:
        record = undo(commit_id, archive=self.archive)
        self.post_message(self.Undone(record))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is not WorkerState.ERROR or event.worker.group != "commit-run":
            return
        self.busy = False
        error = event.worker.error
        if isinstance(error, StaleSourceError):
            self.stale = True
            self._result(f"{error} — press r to reload", ok=False)
        elif isinstance(error, (CommitError, ArchiveError, OSError)):  # LeaseBusy is a CommitError
            self._result(str(error), ok=False)
        else:
            self._result(f"{type(error).__name__}: {error}", ok=False)
        self.query_one("#commit-progress").display = False
        self._sync_buttons()

    # ---------------------------------------------------------------- updates

    def on_commit_dialog_planned(self, event: Planned) -> None:
        if event.generation != self._generation or self.record is not None or self.busy:
            return  # a plan for fields that have changed since, or the commit is done
        self.plan = event.plan
        key, self._pending_key = self._pending_key, None
        commit_now, self._commit_when_planned = self._commit_when_planned, False
        figures = self.query_one("#commit-figures", Static)
        if event.plan is None:
            self._plan_key = None
            if self.result is not None:
                report = self.result.report
                figures.update(
                    f"tokens {report.before_tokens:,} → {report.after_tokens:,}"
                    f" · {report.status.value}"
                )
            suffix = " — press r to reload" if self.stale else ""
            self.query_one("#commit-writes", Static).update(f"cannot commit: {event.error}{suffix}")
            self.query_one("#commit-archives", Static).update("")
            if commit_now:
                self._result(f"not committed: {event.error}{suffix}", ok=False)
            self._sync_buttons()
            return
        plan = event.plan
        self.mode = plan.mode
        figures.update(plan_summary(plan))
        radio = self.query_one(f"#{_MODE_IDS[plan.mode]}", RadioButton)
        if not radio.value:
            with self.prevent(RadioSet.Changed):
                radio.value = True
        self._sync_fields()
        target = self.query_one("#commit-target", Input)
        if self._fill_target or plan.mode is CommitMode.IN_PLACE:
            # The plan chose the target (a fresh mode): show it. A typed target is left
            # exactly as typed, so the field never changes under the user's cursor.
            with self.prevent(Input.Changed):
                target.value = "" if plan.mode is CommitMode.IN_PLACE else str(plan.target_path)
            self._auto_target = target.value
            key = self._fields_key()
        self._plan_key = key
        writes = {
            CommitMode.IN_PLACE: "replaces",
            CommitMode.CHILD: "writes a new",
            CommitMode.EXPORT: "exports to",
        }[plan.mode]
        kind = "session" if plan.target_session and plan.source.ref.is_db else plan.target_format
        self.query_one("#commit-writes", Static).update(f"{writes} {kind}: {plan.target_label}")
        self.query_one("#commit-archives", Static).update(
            "archives first: " + plan.archived_description()
        )
        self.query_one("#commit-notes", Static).update("; ".join(plan.notes))
        self._sync_buttons()
        if commit_now:
            self._start_commit(plan)

    def on_commit_dialog_stage(self, event: Stage) -> None:
        bar = self.query_one("#commit-progress", ProgressBar)
        if event.stage in STAGES:
            bar.update(progress=STAGES.index(event.stage) + 1)
        self.query_one("#commit-result", Static).update(f"{event.stage}…")

    def on_commit_dialog_committed(self, event: Committed) -> None:
        self.busy = False
        self.record = event.record
        r = event.record
        self.query_one("#commit-progress").display = False
        self._result(
            f"committed {r.id} · {r.mode.value} → {r.target_label} · original archived"
            f" · press u to undo (or: tjui undo {r.id})",
            ok=True,
        )
        self._sync_buttons()
        # The fields no longer do anything, and a focused Input would swallow `u`.
        for selector in ("#commit-target", "#commit-format", "#commit-mode"):
            self.query_one(selector).disabled = True
        self.query_one("#commit-close", Button).focus()

    def on_commit_dialog_undone(self, event: Undone) -> None:
        self.busy = False
        self.record = event.record
        self.undone = True
        r = event.record
        restored = "original restored (sha256 verified)" if r.before_sha256 else "removed"
        self._result(f"undone {r.id} · {r.target_label} {restored}", ok=True)
        self._sync_buttons()

    def _result(self, text: str, *, ok: bool) -> None:
        line = self.query_one("#commit-result", Static)
        line.update(text)
        line.set_class(ok, "-ok")
        line.set_class(not ok, "-error")

    def _sync_fields(self) -> None:
        """The target is typed for a child or an export, the format chosen for an export
        (a state.db session's child goes into the same database)."""
        is_db = self.loaded is not None and self.loaded.ref.is_db
        mode = self.mode
        target = self.query_one("#commit-target", Input)
        target.disabled = mode is CommitMode.IN_PLACE or (is_db and mode is not CommitMode.EXPORT)
        self.query_one("#commit-format", Select).disabled = mode is not CommitMode.EXPORT

    def _sync_buttons(self) -> None:
        can = self.plan is not None and self.record is None and not self.busy
        self.query_one("#commit-go", Button).disabled = not can

    # ---------------------------------------------------------------- input

    @on(RadioSet.Changed, "#commit-mode")
    def _mode_changed(self, event: RadioSet.Changed) -> None:
        chosen = next(m for m, i in _MODE_IDS.items() if i == event.pressed.id)
        self._replan(chosen)

    @on(Input.Changed, "#commit-target")
    def _target_changed(self) -> None:
        # Follow the typing once it rests (planning renders the whole file).
        if self._typing_timer is not None:
            self._typing_timer.stop()
        self._typing_timer = self.set_timer(REPLAN_DELAY, self._replan_typed)

    def _replan_typed(self) -> None:
        self._typing_timer = None
        if self._fields_key() not in (self._plan_key, self._pending_key):
            self._replan(self.mode)

    @on(Input.Submitted, "#commit-target")
    def _target_submitted(self) -> None:
        self._replan(self.mode)

    @on(Select.Changed, "#commit-format")
    def _format_changed(self) -> None:
        if self.mode is CommitMode.EXPORT:
            self._replan(self.mode)

    def _fields_key(self) -> tuple[CommitMode | None, str, str | None]:
        """(mode, target, format) as the fields show them now."""
        mode = self.mode
        target = self.query_one("#commit-target", Input).value.strip()
        if mode is CommitMode.IN_PLACE:
            target = ""
        value = self.query_one("#commit-format", Select).value
        fmt = value if isinstance(value, str) and mode is CommitMode.EXPORT else None
        return mode, target, fmt

    def _replan(self, mode: CommitMode | None, *, commit_after: bool = False) -> None:
        if self.record is not None or self.busy:
            return
        if self._typing_timer is not None:
            self._typing_timer.stop()
            self._typing_timer = None
        # A fresh default target when the mode changes (an export keeps a typed target).
        fresh = mode is not self.mode and mode is not CommitMode.EXPORT
        if mode is CommitMode.EXPORT and mode is not self.mode:
            self._propose_export()
        self.mode = mode
        _, target, fmt = self._fields_key()
        if fresh:
            target = ""
        # Only a new mode's default target is written into the field; what the user
        # typed (even nothing, which means the default) stays as typed.
        self._fill_target = fresh
        self._pending_key = (mode, target, fmt)
        if self._commit_when_planned and not commit_after:
            self._result("", ok=True)  # the fields changed after Ctrl+S: not committed
        self._commit_when_planned = commit_after
        self._generation += 1
        self.plan = None
        self._plan_key = None
        self._sync_fields()
        self._sync_buttons()
        self._prepare(mode, target or None, fmt, self._generation)

    def _propose_export(self) -> None:
        """An export needs a path and a format: propose the source's own format (when
        it can be written) and ``<name>.export.<ext>`` beside the source, unless the
        user typed a target."""
        select = self.query_one("#commit-format", Select)
        fmt = select.value if isinstance(select.value, str) else None
        if fmt is None:
            own = self.session.transcript.format
            fmt = own if own in WRITABLE_FORMATS else "openai"
            with self.prevent(Select.Changed):
                select.value = fmt
        target = self.query_one("#commit-target", Input)
        if target.value.strip() in ("", self._auto_target):
            path = self.loaded.ref.path if self.loaded is not None else Path(str(self._source))
            ext = ".jsonl" if fmt == "sharegpt" else ".json"
            with self.prevent(Input.Changed):
                target.value = str(path.with_name(f"{path.stem}.export{ext}"))
            self._auto_target = target.value

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "commit-go":
            self.action_commit()
        elif event.button.id == "commit-close":
            self.action_close()

    def action_cycle_mode(self) -> None:
        order = list(CommitMode)
        current = self.mode or CommitMode.IN_PLACE
        nxt = order[(order.index(current) + 1) % len(order)]
        self.query_one(f"#{_MODE_IDS[nxt]}", RadioButton).value = True

    def action_commit(self) -> None:
        """Commit to what the fields show: the current plan if it was made for them,
        else after planning them again (a plan that fails is said, never committed)."""
        if self.record is not None or self.busy:
            return
        key = self._fields_key()
        if self.plan is not None and key == self._plan_key:
            self._start_commit(self.plan)
        elif key == self._pending_key:
            self._commit_when_planned = True  # the plan for these fields is on its way
            self._result("planning…", ok=True)
        else:
            self._result("planning…", ok=True)
            self._replan(self.mode, commit_after=True)

    def _start_commit(self, plan: CommitPlan) -> None:
        self.busy = True
        self._sync_buttons()
        bar = self.query_one("#commit-progress", ProgressBar)
        bar.update(progress=0)
        bar.display = True
        self._run_commit(plan)

    def action_undo(self) -> None:
        if self.record is None or self.undone or self.busy:
            return
        self.busy = True
        self._result(f"undoing {self.record.id}…", ok=True)
        self._run_undo(self.record.id)

    def action_reload(self) -> None:
        if self.stale:
            self.dismiss(CommitOutcome(self.record, self.undone, reload=True))

    def action_close(self) -> None:
        if self.busy:
            return
        if self.record is None:
            self.dismiss(None)
        else:
            self.dismiss(CommitOutcome(self.record, self.undone))
