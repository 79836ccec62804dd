"""The main screen: header, context bar, message list with the boundary, detail pane."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.events import Resize
from textual.message import Message as TMessage
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Input, Label, ProgressBar, Static
from textual.worker import Worker

from tinyjuice.atomic import sha256_hex
from tinyjuice.follow import Change, ChangeKind, LiveStatus, live_status
from tinyjuice.formats import LoadError, LoadOptions, Source, load_appended
from tinyjuice.formats.catalog import SessionEntry, file_sessions, position_of
from tinyjuice.live import LiveSplit, live_split
from tinyjuice.model import Transcript
from tinyjuice.options import Profile
from tinyjuice.pipeline import BoundaryPlan
from tinyjuice.policies import UsageSeries, extend_usage_series, usage_series
from tinyjuice.store import CommitRecord, LoadedSource, SourceKind, load_source
from tinyjuice.subagents import Subagent, list_subagents, open_subagent
from tinyjuice.tokens import (
    RoughCounter,
    TokenCounter,
    TranscriptTokens,
    count_transcript,
    default_counter,
    extend_tokens,
)
from tjui import firstpaint
from tjui.counting import exact_tokens, source_identity, stored_tokens
from tjui.live import POLL_SECONDS, LiveCommitDialog, LiveFollow
from tjui.session import InspectorSession
from tjui.widgets.context_bar import ContextBar
from tjui.widgets.detail import DetailPane
from tjui.widgets.message_list import MessageList, Zones
from tjui.workers import ForwardWorkerErrors

if TYPE_CHECKING:
    from textual import getters

    from tinyjuice.cache import SourceIdentity
    from tjui.app import TjuiApp

T = TypeVar("T")

#: Below this width the detail pane is hidden until asked for (`d`).
NARROW = 110
#: Seconds the cursor must rest before the detail pane renders the message.
DETAIL_DELAY = 0.08
#: Seconds the boundary must rest before the exact "after" figure is computed.
PROJECT_DELAY = 0.25
#: Largest transcript whose "after" figure is computed on every boundary move (core's
#: compress with the fallback summary: ~0.3 s at 10k messages); above it, the preview
#: (p) computes it.
AUTO_PROJECT_MAX = 10_000
#: The GIL switch interval while the "after" figure is computed in a worker thread.
PROJECT_SWITCH_SECONDS = 0.001
#: Seconds the load waits for the cached first screen to be drawn before parsing.
FIRST_PAINT_WAIT = 2.0


#: Projections running under the short switch interval, and the interval before them.
_switch_users = 0
_switch_saved = 0.0
_switch_lock = threading.Lock()


@contextlib.contextmanager
def _short_switch() -> Iterator[None]:
    """:data:`PROJECT_SWITCH_SECONDS` as the GIL switch interval while the body runs;
    restored when the last of the overlapping bodies (screens) ends."""
    global _switch_users, _switch_saved
    with _switch_lock:
        if _switch_users == 0:
            _switch_saved = sys.getswitchinterval()
            sys.setswitchinterval(min(_switch_saved, PROJECT_SWITCH_SECONDS))
        _switch_users += 1
    try:
        yield
    finally:
        with _switch_lock:
            _switch_users -= 1
            if _switch_users == 0:
                sys.setswitchinterval(_switch_saved)


async def in_daemon_thread(fn: Callable[[], T]) -> T:
    """Run ``fn`` in a daemon thread and wait for its result (or exception) without
    blocking the event loop; if the app ends first, the thread is abandoned."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if future.done():
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def run() -> None:
        result: Any = None
        error: BaseException | None = None
        try:
            result = fn()
        except BaseException as exc:
            error = exc
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=run, name="tjui-load", daemon=True).start()
    return await future


@dataclass(frozen=True, slots=True)
class LoadRequest:
    path: Path
    fmt: str | None = None
    session: str | None = None
    context_window: int | None = None
    model: str | None = None
    #: Notify once when a followed session reaches this % of the window.
    warn_at: float | None = None
    #: Show every message as live (``--whole-file``): no history greyed out.
    whole_file: bool = False
    #: Open this subagent of the session at ``path`` (its sidechain lines).
    subagent: str | None = None


def header_text(session: InspectorSession, path: Path, which: str = "") -> str:
    """The file line; ``which`` names the session on screen (``session ID (2 of 3)``)."""
    t = session.transcript
    b = session.breakdown
    window = f"{session.plan.context_window:,} ({session.plan.context_window_source})"
    if b.measured_prompt_tokens is not None:
        figure = f"{b.measured_prompt_tokens:,} measured"
    else:
        # The breakdown's kind, as the context bar says it: a total with flat media
        # estimates in it is an estimate even when the text was counted exactly.
        figure = f"{b.estimated_total_tokens:,} {b.counted_kind.value} ({session.tokens.counter})"
    live = ""
    if session.live_from:
        live = f" (live from #{session.live_from:,}; {session.live_from:,} already compacted)"
    subagent = t.extra.get("subagent")
    name = f"{path.name} [subagent {subagent}]" if isinstance(subagent, str) else path.name
    return (
        f"{name}{f' · {which}' if which else ''} · {t.format} · {t.model or 'model unknown'}"
        f" · window {window} · {len(t.messages):,} msgs{live} · prompt {figure}"
    )


def boundary_status(s: InspectorSession) -> str:
    """The line under the list: where the boundary is, why, and whether it does anything."""
    plan = s.plan
    status = f"boundary {plan.end + s.live_from}"
    if plan.snap_reason:
        status += f" · {plan.snap_reason}"
    result = s.current_result
    if plan.no_op:
        status += f" · no-op: {plan.reason}"
    elif result is not None and result.report.status.value != "compacted":
        status += f" · no-op: {result.report.reason}"
    return status + f" · profile {s.options.profile.value}"


def rule_label(plan: BoundaryPlan, offset: int = 0) -> str:
    """The boundary rule's label; ``offset`` turns live indices into file indices."""
    if plan.no_op:
        return f"nothing to compress: {plan.reason}"
    return (
        f"compress {plan.start + offset}–{plan.end - 1 + offset} above"
        f" ({plan.middle_tokens:,} tok)"
        f" · keep {plan.tail_messages:,} below ({plan.tail_tokens:,} tok)"
    )


class MainScreen(ForwardWorkerErrors, Screen[None]):
    if TYPE_CHECKING:  # the app this screen runs in (Textual's idiom; no run-time change)
        app = getters.app(TjuiApp)

    BINDINGS = [
        # The app's Help and Quit first, so the footer keeps them at 80 columns.
        Binding("question_mark", "app.help", "Help", id="main.help"),
        Binding("q", "app.quit", "Quit", id="main.quit"),
        Binding("[", "boundary_step(-1)", "Boundary ↑", id="boundary.up"),
        Binding("]", "boundary_step(1)", "Boundary ↓", id="boundary.down"),
        Binding("{", "boundary_exchange(-1)", "Exchange ↑", show=False, id="boundary.exchange_up"),
        Binding("}", "boundary_exchange(1)", "Exchange ↓", show=False, id="boundary.exchange_down"),
        Binding(
            "u", "compress_up_to_here", "Compress to here", show=False, id="boundary.up_to_here"
        ),
        Binding("t", "keep_from_here", "Keep from here", show=False, id="boundary.keep_from_here"),
        Binding("#", "focus_keep_last", "Keep last N", show=False, id="boundary.keep_last"),
        Binding("f", "focus_topic", "Focus topic", show=False, id="summary.focus"),
        Binding("o", "toggle_profile", "Profile", show=False, id="summary.profile"),
        Binding("p", "preview", "Preview", id="preview.open"),
        Binding("w", "why_fired", "Why it fired", id="main.why_fired"),
        Binding("c", "commit", "Commit", id="store.commit"),
        Binding("h", "history", "History", show=False, id="store.history"),
        Binding("/", "search", "Search", id="list.search"),
        Binding("n", "search_next(1)", "Next match", show=False, id="list.search_next"),
        Binding("N", "search_next(-1)", "Prev match", show=False, id="list.search_prev"),
        Binding(":", "jump", "Jump", show=False, id="list.jump"),
        Binding("d", "toggle_detail", "Detail", show=False, id="main.detail"),
        Binding("s", "sessions", "Sessions", show=False, id="main.sessions"),
        Binding("y", "copy_message", "Copy", show=False, id="main.copy"),
        Binding("escape", "back_to_list", "Back to list", show=False, id="main.back"),
        Binding("F", "toggle_follow", "Follow", show=False, id="main.follow"),
        Binding("a", "subagents", "Subagents", show=False, id="main.subagents"),
        Binding("backspace", "close_subagent", "Back to the session", show=False, id="main.up"),
    ]

    @dataclass
    class Loaded(TMessage):
        transcript: Transcript
        tokens: TranscriptTokens
        split: LiveSplit
        history_tokens: tuple[int, ...]
        estimated: bool = True

    @dataclass
    class FirstPainted(TMessage):
        """The first screen stored for these exact bytes (see :mod:`tjui.firstpaint`)."""

        first: firstpaint.FirstPaint

    @dataclass
    class HistoryCounted(TMessage):
        tokens: tuple[int, ...]

    @dataclass
    class SessionReady(TMessage):
        session: InspectorSession

    @dataclass
    class Counted(TMessage):
        session: InspectorSession

    @dataclass
    class LiveChanged(TMessage):
        """The followed file changed: the reloaded session (None: only the status)."""

        session: InspectorSession | None
        status: LiveStatus
        kind: ChangeKind | None = None
        #: The counter the status was computed with.
        counter: str = ""
        #: What the reloaded session was read from (a commit checks it is still current).
        loaded: LoadedSource | None = None
        #: Tokens of the history before the live context (greyed above the list).
        history_tokens: tuple[int, ...] = ()

    @dataclass
    class SessionsListed(TMessage):
        entries: list[SessionEntry]

    @dataclass
    class Projected(TMessage):
        """Core computed the compaction for the boundary on screen."""

    @dataclass
    class SearchDone(TMessage):
        query: str
        matches: tuple[int, ...]

    def __init__(
        self, request: LoadRequest, *, first_paint: firstpaint.Prefetch | None = None
    ) -> None:
        super().__init__()
        self.request = request
        #: The first screen's lookup, started when the app was made (None: look it up).
        self._first_paint = first_paint
        self.session: InspectorSession | None = None
        self.loaded: LoadedSource | None = None
        self.subagents: list[Subagent] = []
        self._matches: tuple[int, ...] = ()
        self._detail_timer: Timer | None = None
        self.live: LiveFollow | None = None
        self._project_timer: Timer | None = None
        self._status_wrapped = False
        self._project_lock = threading.Lock()
        #: The sessions of a multi-session file (empty: one session) and which is shown.
        self.sessions_in_file: list[SessionEntry] = []
        self.session_position: int | None = None
        #: The whole file's transcript and counts as last loaded: a followed file's
        #: append is counted from them (only the new messages).
        self._counted: tuple[Transcript, TranscriptTokens] | None = None
        #: The followed file's lines as last parsed: an append parses only its new lines.
        self._parsed: Source | None = None
        #: Held by the reload of a followed file (they run one at a time, in order).
        self._live_lock = threading.Lock()
        #: Ends the thread that follows the file (set when the screen goes).
        self._follow_stop = threading.Event()
        #: The live status's usage series and what it charts: an append extends it.
        self._series: tuple[Transcript, TranscriptTokens, UsageSeries] | None = None
        #: Set once the cached first screen is drawn (the load parses after it).
        self._first_drawn = threading.Event()
        self._first_shown = False

    # ------------------------------------------------------------------ layout

    def compose(self) -> ComposeResult:
        yield Static("Loading…", id="file-header", markup=False)
        yield ContextBar(id="context-bar")
        with Vertical(id="loading"):
            yield Label(f"Loading {self.request.path.name}…", id="loading-label")
            yield ProgressBar(total=None, show_eta=False, id="loading-bar")
        with Horizontal(id="body"):
            with Vertical(id="left"):
                yield MessageList(id="messages")
                yield Static("", id="boundary-status", markup=False)
            yield DetailPane(id="detail")
        with Horizontal(id="controls"):
            yield Label("keep last")
            yield Input(placeholder="N", id="keep-last", type="integer")
            yield Label("focus")
            yield Input(placeholder="topic for the summary (optional)", id="focus-topic")
        yield Input(placeholder="search messages (enter to find, esc to close)", id="search")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(MessageList).focus()
        self._load()

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width < NARROW, "-narrow")

    # ----------------------------------------------------------------- workers

    @work(exclusive=True, group="load", name="load", exit_on_error=False)
    async def _load(self) -> None:
        # The reading runs in a daemon thread, not the worker pool: quitting while a
        # big file loads never waits for it (the pool's threads are joined at exit).
        await in_daemon_thread(self._load_blocking)

    def _load_blocking(self) -> None:
        self._load_session()
        # Loading allocated a large heap with the cyclic collector paused, so a full
        # collection is due; run it now, as the load ends, rather than at whatever comes
        # next (with a followed file: its first append).
        gc.collect()

    def _load_session(self) -> None:
        req = self.request
        # 0. A large file opened before (the same bytes, read the same way): its first
        # screen at once, from the cache, while the whole file loads below.
        prefetched = self._first_paint
        first = prefetched.result(req) if prefetched is not None else firstpaint.lookup(req)
        if first is not None:
            self.post_message(self.FirstPainted(first))
            self._first_drawn.wait(FIRST_PAINT_WAIT)  # the frame first, then the parse
        # The store remembers the exact bytes read, so a commit can refuse a stale source.
        # Followed files keep their parsed lines: the first append parses only its own.
        self.loaded = load_source(
            req.path, req.fmt, session=req.session, follow=req.subagent is None
        )
        self._parsed = self.loaded.parsed
        transcript = self.loaded.transcript
        subagents = list_subagents(transcript, read_files=False)
        if req.subagent is not None:
            transcript = open_subagent(transcript, req.subagent)
            self.loaded = None  # a sidechain is no file of its own: nothing to commit
            subagents = []
        if req.model:
            transcript = replace(transcript, model=req.model)
        if req.context_window:
            transcript = replace(transcript, context_window=req.context_window)
        self.subagents = subagents
        # The agent's live context is what compaction works on; the history before its
        # last compaction is shown greyed, never resurrected.
        split = live_split(transcript, whole_file=req.whole_file)
        live = split.live
        # 0. A file counted before (the same bytes) paints with its exact counts at once.
        identity = source_identity(self.loaded) if self.loaded is not None else None
        stored = stored_tokens(transcript, identity, req.fmt, req.session, default_counter)
        if stored is not None:
            self._counted = (transcript, stored)
            live_tokens = stored.tail(split.start)
            history = stored.per_message[: split.start]
            self.post_message(self.Loaded(live, live_tokens, split, history, estimated=False))
            session = self._session(live, live_tokens, default_counter(), split, len(subagents))
            self.post_message(self.SessionReady(session))
            if first is None:
                firstpaint.remember(req, identity, session, history)
            return
        self._load_counting(transcript, live, split, len(subagents), identity)

    def _load_counting(
        self,
        transcript: Transcript,
        live: Transcript,
        split: LiveSplit,
        subagents: int,
        identity: SourceIdentity | None,
    ) -> None:
        """A file not counted before: estimates at once, then exact counts."""
        req = self.request
        # 1. Paint the list at once with estimated counts...
        rough_counter = RoughCounter()
        rough = count_transcript(transcript, rough_counter)
        history = rough.per_message[: split.start]
        self.post_message(self.Loaded(live, rough.tail(split.start), split, history))
        # 2. ...then the boundary index, plan and breakdown...
        session = self._session(live, rough.tail(split.start), rough_counter, split, subagents)
        self.post_message(self.SessionReady(session))
        # 3. ...and refine to exact counts without holding up input.
        counter = default_counter()
        if counter.name != "rough":
            # A subagent is no file of its own: identity is None, nothing is cached.
            path = req.path if req.subagent is None else Path("")
            exact = exact_tokens(transcript, path, req.fmt, req.session, counter, identity)
            self._counted = (transcript, exact)
            self.post_message(self.Counted(session.with_tokens(exact.tail(split.start), counter)))
            self.post_message(self.HistoryCounted(exact.per_message[: split.start]))
            if firstpaint.wanted(req, identity):
                # What the next open's full load will show: planned on the exact counts.
                warm = self._session(live, exact.tail(split.start), counter, split, subagents)
                firstpaint.remember(req, identity, warm, exact.per_message[: split.start])

    def _session(
        self,
        live: Transcript,
        tokens: TranscriptTokens,
        counter: TokenCounter,
        split: LiveSplit,
        subagents: int,
    ) -> InspectorSession:
        """The inspector session of a load: the live context, its counts, the request's
        window."""
        return InspectorSession.build(
            live,
            tokens,
            counter,
            context_window=self.request.context_window,
            split=split,
            subagents=subagents,
        )

    def show_failure(self, worker: Worker[Any]) -> bool:
        """A failure opens the App's error dialog; a failed load first hides the bar."""
        if worker.group == "load":
            # The dialog dims this screen: no loading bar left running behind it.
            self.query_one("#loading").add_class("-hidden")
        return False

    # ----------------------------------------------------------------- updates

    def on_main_screen_first_painted(self, event: FirstPainted) -> None:
        if self.session is None and not self.query_one(MessageList).count:
            self._first_shown = True
            firstpaint.paint(self, event.first)
        self.call_after_refresh(self._first_drawn.set)

    def on_main_screen_loaded(self, event: Loaded) -> None:
        self.query_one("#loading").add_class("-hidden")
        lst = self.query_one(MessageList)
        lst.set_transcript(event.transcript, event.tokens.per_message, estimated=event.estimated)
        lst.set_history(event.split.history, event.history_tokens)
        t = event.transcript
        if self._first_shown and not event.estimated:
            return  # the cached header stays until the session is ready
        self.query_one("#file-header", Static).update(
            f"{self.request.path.name} · {t.format} · {t.model or 'model unknown'}"
            f" · {len(t.messages):,} msgs · counting…"
        )

    def on_main_screen_history_counted(self, event: HistoryCounted) -> None:
        lst = self.query_one(MessageList)
        if event.tokens:
            lst.set_history(lst.history_messages, event.tokens)

    def on_main_screen_session_ready(self, event: SessionReady) -> None:
        self.session = event.session
        if event.session.transcript.format in ("sharegpt", "hermes"):
            self._list_sessions(event.session.transcript.format)
        self._refresh_all()
        self._show_detail(self.query_one(MessageList).cursor)
        self._start_follow()

    def on_main_screen_counted(self, event: Counted) -> None:
        if self.session is not None and len(self.session.transcript) != len(
            event.session.transcript
        ):
            return  # the followed file grew meanwhile: the newer session is on screen
        if self.session is not None:
            # Keep any boundary the user chose while exact counts were running.
            event.session.replan(self.session.options)
        self.session = event.session
        lst = self.query_one(MessageList)
        lst.set_tokens(event.session.tokens.per_message, estimated=False)
        self._refresh_all()
        self._show_detail(lst.cursor)
        if self.live is not None:
            self._reload_live(None)  # the live status on the exact counts

    def _refresh_all(self) -> None:
        s = self.session
        if s is None:
            return
        live = self.live.header_suffix() if self.live is not None else ""
        self.query_one("#file-header", Static).update(
            header_text(s, self.request.path, self._which()) + live
        )
        self._refresh_boundary()

    def _which(self) -> str:
        """The session on screen: its id and "2 of 3" in a multi-session file; the id
        alone for a Hermes state.db of one session."""
        s = self.session
        sid = s.transcript.session_id if s is not None else None
        entries, at = self.sessions_in_file, self.session_position
        if entries and at is not None:
            return f"session {entries[at].label} ({at + 1} of {len(entries)}, s switches)"
        is_db = self.loaded is not None and self.loaded.ref.is_db
        return f"session {sid}" if sid and is_db else ""

    @work(thread=True, exclusive=True, group="sessions", exit_on_error=False)
    def _list_sessions(self, fmt: str) -> None:
        self.post_message(self.SessionsListed(file_sessions(self.request.path, fmt)))

    def on_main_screen_sessions_listed(self, event: SessionsListed) -> None:
        self.sessions_in_file = event.entries
        sid = self.session.transcript.session_id if self.session is not None else None
        self.session_position = position_of(event.entries, self.request.session, sid)
        self._refresh_all()

    def action_sessions(self) -> None:
        """Switch to another session of a multi-session file (ShareGPT, state.db)."""
        if not self.sessions_in_file:
            self.notify("This file holds one session.", severity="information")
            return
        from tjui.screens.sessions import SessionPicker

        def _after(key: str | None) -> None:
            if key is not None:
                self.app.call_later(self.app.reopen, replace(self.request, session=key))

        self.app.push_screen(SessionPicker(self.sessions_in_file, self.session_position), _after)

    def _refresh_boundary(self) -> None:
        s = self.session
        if s is None:
            return
        plan = s.plan
        result = s.current_result
        report = result.report if result is not None else None
        pending = report is None and not plan.no_op and self._auto_project()
        self.query_one(ContextBar).update_data(
            s.breakdown, plan, s.trigger, after=report, computing=pending
        )
        self.query_one(MessageList).set_zones(
            Zones(plan.start, plan.end), rule_label(plan, s.live_from)
        )
        self._show_status(boundary_status(s))
        if s.options.keep_last is None:
            # The boundary moved some other way: the keep-last field no longer holds.
            field = self.query_one("#keep-last", Input)
            if field.value and not field.has_focus:
                with self.prevent(Input.Changed):
                    field.value = ""
        if pending:
            self._schedule_projection()

    def _show_status(self, text: str) -> None:
        """The status line wraps long reasons; a layout pass only when it grows or
        shrinks past one line (a boundary move must stay cheap)."""
        box = self.query_one("#boundary-status", Static)
        wide = len(text) > max(1, box.content_size.width)
        box.update(text, layout=wide or self._status_wrapped)
        self._status_wrapped = wide

    def _auto_project(self) -> bool:
        s = self.session
        return s is not None and len(s.transcript.messages) <= AUTO_PROJECT_MAX

    def _projection_delay(self) -> float:
        """Seconds before the "after" figure is computed: the boundary must rest, and a
        followed file must have stopped growing (each append would restart it)."""
        quiet = self.live.quiet_for() if self.live is not None else 0.0
        return max(PROJECT_DELAY, quiet)

    def _schedule_projection(self) -> None:
        if self._project_timer is not None:
            self._project_timer.stop()
        self._project_timer = self.set_timer(self._projection_delay(), self._project)

    @work(thread=True, exclusive=True, group="project", exit_on_error=False)
    def _project(self) -> None:
        # One compress at a time. A request made while one runs returns at once (waiting
        # would hold a thread of the pool every worker shares, the follow's included):
        # the running one's Projected refreshes the boundary, which asks again when the
        # session on screen still has no figure.
        if not self._project_lock.acquire(blocking=False):
            return
        try:
            s = self.session
            if s is None or s.current_result is not None:
                return
            # A compress holds the GIL for up to a switch interval at a time (5 ms by
            # default) against the event loop and a followed file's reload: handing it
            # over every millisecond keeps them responsive while it runs.
            with _short_switch():
                s.compute()
        finally:
            self._project_lock.release()
        self.post_message(self.Projected())

    def on_main_screen_projected(self, event: Projected) -> None:
        self._refresh_boundary()

    def on_screen_resume(self) -> None:
        # The preview may have computed the figure (or changed the focus topic).
        s = self.session
        if s is None:
            return
        field = self.query_one("#focus-topic", Input)
        if (s.options.focus_topic or "") != field.value.strip():
            with self.prevent(Input.Changed):
                field.value = s.options.focus_topic or ""
        self._refresh_boundary()

    @property
    def plan(self) -> BoundaryPlan | None:
        return self.session.plan if self.session else None

    # ---------------------------------------------------------------- boundary

    @on(MessageList.BoundaryDragged)
    def _dragged(self, event: MessageList.BoundaryDragged) -> None:
        if self.session is not None and event.index != self.session.plan.end:
            self.session.set_boundary(event.index)
            self._refresh_boundary()

    def action_boundary_step(self, delta: int) -> None:
        if self.session is not None:
            self.session.step_legal(delta)
            self._refresh_boundary()
            self.query_one(MessageList).show_rule()

    def action_boundary_exchange(self, delta: int) -> None:
        if self.session is not None:
            self.session.step_exchange(delta)
            self._refresh_boundary()
            self.query_one(MessageList).show_rule()

    def action_compress_up_to_here(self) -> None:
        if self.session is not None:
            self.session.set_boundary(self.query_one(MessageList).cursor + 1)
            self._refresh_boundary()

    def action_keep_from_here(self) -> None:
        if self.session is not None:
            self.session.set_boundary(self.query_one(MessageList).cursor)
            self._refresh_boundary()

    def action_focus_keep_last(self) -> None:
        self.query_one("#keep-last", Input).focus()

    def action_focus_topic(self) -> None:
        self.query_one("#focus-topic", Input).focus()

    @on(Input.Submitted, "#keep-last")
    def _keep_last(self, event: Input.Submitted) -> None:
        if self.session is None:
            return
        try:
            n = int(event.value)
        except ValueError:
            self.notify("Keep last N takes a whole number of user exchanges.", severity="warning")
            return
        if n < 0:
            self.notify("Keep last N cannot be negative.", severity="warning")
            return
        plan = self.session.keep_last(n)
        self._refresh_boundary()
        self.query_one(MessageList).focus()
        self.query_one(MessageList).center_on(min(plan.end, plan.total_messages - 1))

    @on(Input.Changed, "#focus-topic")
    def _focus_changed(self, event: Input.Changed) -> None:
        if self.session is not None:
            self.session.set_focus(event.value.strip())
            self._refresh_boundary()

    @on(Input.Submitted, "#focus-topic")
    def _focus_submitted(self, event: Input.Submitted) -> None:
        self.query_one(MessageList).focus()

    def action_toggle_profile(self) -> None:
        if self.session is None:
            return
        new = Profile.RULES if self.session.options.profile is Profile.HERMES else Profile.HERMES
        self.session.set_profile(new)
        self._refresh_boundary()
        self.notify(f"Profile: {new.value}")

    def action_preview(self) -> None:
        if self.session is None:
            return
        from tjui.screens.preview import PreviewScreen

        # Choosing a missing item on the scorecard returns the message it came from.
        self.app.push_screen(PreviewScreen(self.session), self.go_to)

    # ----------------------------------------------------------- list & detail

    @on(MessageList.Highlighted)
    def _highlighted(self, event: MessageList.Highlighted) -> None:
        # The detail pane follows once the cursor settles: holding a key or paging
        # through 100k messages never waits on rendering a 3,000-line output.
        if self._detail_timer is not None:
            self._detail_timer.stop()
        self._detail_timer = self.set_timer(DETAIL_DELAY, lambda: self._show_detail(event.index))

    def _show_detail(self, index: int) -> None:
        s = self.session
        if s is None or not s.transcript.messages:
            self.query_one(DetailPane).show(None, 0, None, estimated=True)
            return
        index = max(0, min(index, len(s.transcript.messages) - 1))
        self.query_one(DetailPane).show(
            s.transcript.messages[index],
            index + s.live_from,  # its index in the file, as the list shows it
            s.tokens.per_message[index],
            estimated=s.tokens.kind.value != "exact",
        )

    def action_toggle_detail(self) -> None:
        self.toggle_class("-show-detail")

    def action_back_to_list(self) -> None:
        search = self.query_one("#search", Input)
        closing = search.has_class("-visible") or self.has_class("-show-detail")
        if search.has_class("-visible"):
            search.remove_class("-visible")
        self.remove_class("-show-detail")
        self.query_one(MessageList).focus()
        if not closing and self.app.has_browser():
            self.app.pop_screen()  # back to the session browser

    def action_copy_message(self) -> None:
        if self.session is None or not self.session.transcript.messages:
            return
        cursor = self.query_one(MessageList).cursor
        m = self.session.transcript.messages[cursor]
        text = m.text
        if m.tool_calls:
            text += "\n" + "\n".join(f"{c.name}({c.arguments})" for c in m.tool_calls)
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied message {cursor} ({len(text):,} chars).")

    def go_to(self, index: int | None) -> None:
        """Select message ``index`` and bring it to the middle of the list."""
        if index is None or self.session is None:
            return
        lst = self.query_one(MessageList)
        lst.cursor = max(0, min(index, lst.count - 1))
        lst.center_on(lst.cursor)

    def action_jump(self) -> None:
        from tjui.screens.jump import JumpDialog

        if self.session is None:
            return
        offset = self.session.live_from
        count = len(self.session.transcript.messages) + offset

        def _go(index: int | None) -> None:
            # The dialog takes file indices (as shown); history rows cannot be selected.
            if index is not None and index < offset:
                self.notify(f"message {index} is already compacted history", severity="warning")
            self.go_to(None if index is None else max(0, index - offset))

        self.app.push_screen(JumpDialog(count), _go)

    def action_subagents(self) -> None:
        """List the session's subagents; the chosen one opens in a new view."""
        from tjui.screens.subagents import SubagentDialog

        agents = self.subagents
        if not agents:
            self.notify("this session has no subagents", severity="information")
            return

        def _open(agent: Subagent | None) -> None:
            if agent is None:
                return
            if agent.path is not None:
                request = LoadRequest(path=Path(agent.path), fmt="claude-code")
            else:
                request = replace(self.request, subagent=agent.id, session=None)
            self.app.push_screen(MainScreen(request))

        self.app.push_screen(SubagentDialog(agents), _open)

    def action_close_subagent(self) -> None:
        """Back to the session a subagent was opened from."""
        below = self.app.screen_stack[-2] if len(self.app.screen_stack) > 1 else None
        if isinstance(below, MainScreen):
            self.app.pop_screen()

    def action_commit(self) -> None:
        """Commit the compaction on screen through the store (original archived first)."""
        if self.session is None:
            return
        if self.request.subagent is not None:
            self.notify(
                "a subagent's sidechain lines are part of its session file: nothing to commit",
                severity="warning",
            )
            return
        from tjui.screens.commit import CommitDialog, CommitOutcome

        def _after(outcome: CommitOutcome | None) -> None:
            if outcome is not None and (outcome.reload or outcome.source_changed):
                self.app.call_later(self.app.reopen, self.request)

        dialog = CommitDialog if self.live is None else partial(LiveCommitDialog, live=self.live)
        self.app.push_screen(
            dialog(
                self.session,
                self.loaded or self.request.path,
                fmt=self.request.fmt,
                hermes_session=self.request.session,
                result=self.session.current_result,
            ),
            _after,
        )

    def action_history(self) -> None:
        from tjui.screens.history import HistoryScreen

        def _after(undone: tuple[CommitRecord, ...] | None) -> None:
            # An undo that restored the file on screen: show what is on disk now (the
            # commit dialog would otherwise plan against bytes that are gone).
            if undone and any(self._shows(r) for r in undone):
                self.app.call_later(self.app.reopen, self.request)

        self.app.push_screen(HistoryScreen(self.request.path, session=self.request.session), _after)

    def _shows(self, record: CommitRecord) -> bool:
        """Whether ``record`` wrote the file (or database session) this screen shows."""
        ref = self.loaded.ref if self.loaded is not None else None
        path = ref.path if ref is not None else Path(os.path.realpath(self.request.path))
        if Path(os.path.realpath(record.target_path)) != path:
            return False
        if record.target_kind is not SourceKind.HERMES_DB:
            return True
        session = ref.session_id if ref is not None else self.request.session
        # With no session asked for, the database's default session may be another now.
        return self.request.session is None or record.target_session in (None, session)

    def action_why_fired(self) -> None:
        """The usage timeline under the agent's policy; Enter on a marker jumps there."""
        if self.session is None:
            return
        from tjui.screens.timeline import TimelineScreen

        s = self.session
        offset = s.live_from
        history = self.query_one(MessageList).history_tokens
        if len(history) != offset:
            return  # the history is still being counted
        tokens = s.tokens.with_head(history)

        def _go(index: int | None) -> None:
            # The timeline covers the whole file, every past compaction included.
            if index is not None and index < offset:
                self.notify(f"message {index} is already compacted history", severity="warning")
            self.go_to(None if index is None else max(0, index - offset))

        self.app.push_screen(
            TimelineScreen(s.whole, tokens, context_window=s.options.context_window), _go
        )

    # ------------------------------------------------------------------ follow

    def _start_follow(self) -> None:
        """Follow the open file (not a Hermes state.db session) as the agent writes it."""
        loaded = self.loaded
        if self.live is not None or loaded is None or loaded.ref.is_db:
            return
        self.live = LiveFollow.start(loaded.path, loaded.data, self.request.warn_at)
        if self.live is not None:
            # A thread of its own checks the file and reloads what was appended: neither
            # the event loop nor the worker pool stands between an append and the screen.
            threading.Thread(
                target=self._follow_loop, args=(self.live,), name="tjui-follow", daemon=True
            ).start()
            self._reload_live(None)

    def on_unmount(self) -> None:
        self._follow_stop.set()

    def _follow_loop(self, live: LiveFollow) -> None:
        """Every :data:`POLL_SECONDS`: a ``stat``, and when the file changed, the reload."""
        stop = self._follow_stop
        while not stop.wait(POLL_SECONDS):
            if not live.changed():
                continue
            change = None
            try:
                with self._live_lock:
                    change = live.poll()
                    if change is None or change.kind is ChangeKind.MISSING:
                        continue
                    self._reload_live_locked(change)
            except Exception:  # shown by the worker that reads it again
                if stop.is_set():
                    return
                # Read again in a worker, whose failure opens the App's error dialog.
                with contextlib.suppress(RuntimeError):  # the app has closed
                    self.app.call_from_thread(self._reload_live, change)

    @work(thread=True, exclusive=True, group="live", name="live", exit_on_error=False)
    def _reload_live(self, change: Change | None) -> None:
        """Load what the file holds now (None: just the status of what is on screen)."""
        # One reload at a time, in order: each extends what the one before it read.
        with self._live_lock:
            self._reload_live_locked(change)

    def _reload_live_locked(self, change: Change | None) -> None:
        req, current = self.request, self.session
        if current is None:
            return
        session = loaded = None
        history_tokens: tuple[int, ...] = ()
        if change is not None:
            options = LoadOptions(session=req.session)
            transcript, self._parsed = load_appended(
                change.data, self._parsed, req.path, req.fmt, options=options
            )
            if self.loaded is not None:
                loaded = replace(
                    self.loaded,
                    data=change.data,
                    sha256=change.sha256 or sha256_hex(change.data),
                    size=len(change.data),
                    transcript=transcript,
                    parsed=None,
                )
            if req.model:
                transcript = replace(transcript, model=req.model)
            if req.context_window:
                transcript = replace(transcript, context_window=req.context_window)
            # As the first load: the live context on screen, the history before it greyed
            # (the live messages already on screen are reused, not renumbered again).
            split = live_split(transcript, whole_file=req.whole_file, previous=current.split)
            counted = self._counted
            if counted is None:
                tokens = count_transcript(transcript, current.counter)
            else:  # only the appended messages are counted
                tokens = extend_tokens(counted[1], counted[0], transcript, current.counter)
            self._counted = (transcript, tokens)
            history_tokens = tokens.per_message[: split.start]
            # The index and breakdown grow from the session on screen (new messages only).
            session = InspectorSession.build(
                split.live,
                tokens.tail(split.start),
                current.counter,
                context_window=req.context_window,
                split=split,
                subagents=len(self.subagents),
                previous=current,
            )
            session.replan(current.options)  # the boundary stays where the user put it
        shown = session or current
        series = self._series_of(shown.transcript, shown.tokens)
        status = live_status(
            shown.transcript, shown.tokens, context_window=req.context_window, series=series
        )
        kind = change.kind if change else None
        self.post_message(
            self.LiveChanged(session, status, kind, shown.tokens.counter, loaded, history_tokens)
        )
        if change is None and self._parsed is None and self.loaded is not None:
            # Parse the loaded bytes once now, so the first append parses only its lines.
            with contextlib.suppress(LoadError):
                options = LoadOptions(session=req.session)
                _, self._parsed = load_appended(
                    self.loaded.data, None, req.path, req.fmt, options=options
                )

    def _series_of(self, transcript: Transcript, tokens: TranscriptTokens) -> UsageSeries:
        """The usage series of the session on screen, extended from the last one."""
        last = self._series
        if last is None:
            series = usage_series(transcript, tokens)
        elif last[0] is transcript and last[1] is tokens:
            series = last[2]
        else:
            series = extend_usage_series(last[2], last[0], last[1], transcript, tokens)
        self._series = (transcript, tokens, series)
        return series

    def on_main_screen_live_changed(self, event: LiveChanged) -> None:
        if self.live is None or self.session is None:
            return
        if event.session is None and event.counter != self.session.tokens.counter:
            return  # a status from counts the screen has since refined
        if event.session is not None:
            self.session = event.session
            self.loaded = event.loaded or self.loaded
            lst = self.query_one(MessageList)
            tokens = event.session.tokens
            lst.set_transcript(
                event.session.transcript, tokens.per_message, estimated=tokens.counter == "rough"
            )
            split = event.session.split
            if split is not None:
                lst.set_history(split.history, event.history_tokens)
        # (A JSON document is rewritten on every turn: that is no news.)
        if event.kind is ChangeKind.TRUNCATED or (
            event.kind is ChangeKind.REPLACED and self.live.tail.jsonl
        ):
            self.notify(f"{self.request.path.name} was {event.kind.value}: reloaded")
        if self.live.crossed_warning(event.status, event.counter):
            self.notify(
                f"the live context is at {event.status.percent:.0f}% of the window"
                f" (warning level {self.live.warn_at:g}%); {event.status.prediction()}",
                title="Context warning",
                severity="warning",
            )
        self._refresh_all()

    def action_toggle_follow(self) -> None:
        if self.live is None:
            self.notify("this session cannot be followed (not a file)")
            return
        self.live.following = not self.live.following
        self.notify("following the file" if self.live.following else "follow paused (F resumes)")
        self._refresh_all()

    # ------------------------------------------------------------------ search

    def action_search(self) -> None:
        search = self.query_one("#search", Input)
        search.add_class("-visible")
        search.focus()

    @on(Input.Submitted, "#search")
    def _search_submitted(self, event: Input.Submitted) -> None:
        query = event.value.strip()
        self.query_one("#search", Input).remove_class("-visible")
        self.query_one(MessageList).focus()
        if query and self.session is not None:
            self._search(self.session.transcript, query)

    @work(thread=True, exclusive=True, group="search", exit_on_error=False)
    def _search(self, transcript: Transcript, query: str) -> None:
        needle = query.casefold()
        matches = []
        for i, m in enumerate(transcript.messages):
            hay = m.text
            if m.tool_calls:
                hay += " " + " ".join(f"{c.name} {c.arguments}" for c in m.tool_calls)
            if needle in hay.casefold():
                matches.append(i)
        self.post_message(self.SearchDone(query, tuple(matches)))

    def on_main_screen_search_done(self, event: SearchDone) -> None:
        self._matches = event.matches
        lst = self.query_one(MessageList)
        lst.set_matches(frozenset(event.matches))
        if not event.matches:
            self.notify(f"No message contains {event.query!r}.", severity="warning")
            return
        self.notify(f"{len(event.matches):,} messages match {event.query!r} (n / N to move).")
        self.action_search_next(1)

    def action_search_next(self, direction: int) -> None:
        if not self._matches:
            return
        lst = self.query_one(MessageList)
        cur = lst.cursor
        if direction > 0:
            nxt = next((i for i in self._matches if i > cur), self._matches[0])
        else:
            nxt = next((i for i in reversed(self._matches) if i < cur), self._matches[-1])
        lst.cursor = nxt
        lst.center_on(nxt)
