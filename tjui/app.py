"""The tjui Textual application: a thin shell that pushes screens."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any, TypedDict, Unpack

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.worker import Worker

from tinyjuice.formats import LoadError
from tjui import firstpaint
from tjui.clikit import EXIT_USAGE
from tjui.screens.browser import BrowserScreen
from tjui.screens.commit import CommitDialog
from tjui.screens.error import ErrorDialog
from tjui.screens.help import HelpScreen
from tjui.screens.history import HistoryScreen
from tjui.screens.main import LoadRequest, MainScreen
from tjui.screens.preview import PreviewScreen
from tjui.screens.timeline import TimelineScreen
from tjui.widgets.context_bar import bar_palette
from tjui.widgets.message_list import MessageList
from tjui.workers import ShowsFailures, failure_text

#: The app's stylesheet: every screen's layout (apps hosting a screen in tests use it too).
STYLESHEET = Path(__file__).with_name("tjui.tcss")


class TjuiApp(App[None]):
    """Startup, themes and screen pushing; each workflow lives in its own screen."""

    TITLE = "tjui"
    CSS_PATH = STYLESHEET
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("question_mark", "help", "Help", id="app.help"),
    ]

    def __init__(
        self, request: LoadRequest | None, *, now: Callable[[], float] | None = None
    ) -> None:
        """``request`` None opens the session browser (``now`` fixes its clock in tests)."""
        super().__init__()
        self.request = request
        self.now = now
        # A large file opened before: its remembered first screen is looked up (the file
        # hashed) while Textual starts up.
        self.first_paint = firstpaint.Prefetch(request) if request is not None else None

    def get_theme_variable_defaults(self) -> dict[str, str]:
        # The context bar's category colours, per theme brightness.
        return bar_palette(dark=self.current_theme.dark)

    def on_mount(self) -> None:
        if self.request is None:
            self.push_screen(BrowserScreen(now=self.now) if self.now else BrowserScreen())
        else:
            self.open(self.request)

    def has_browser(self) -> bool:
        """Whether the inspector was opened from the browser (Esc goes back to it)."""
        return any(isinstance(s, BrowserScreen) for s in self.screen_stack)

    def open(self, request: LoadRequest) -> None:
        self.request = request
        self.sub_title = str(request.path)
        self.push_screen(MainScreen(request, first_paint=self.first_paint))

    def show_error(self, title: str, message: str, *, code: int = 1) -> None:
        """The error dialog; quitting it exits with status ``code``."""

        def _after(path: Path | None) -> None:
            if path is None and self.has_browser():
                self.call_later(self.pop_screen)  # back to the browser
                return
            if path is None:
                self.exit(return_code=code, message=f"tjui: error: {message}")
                return
            # The dialog is popped after this callback returns; replace the failed
            # screen once it has gone.
            self.call_later(self.reopen, LoadRequest(path=path))

        self.push_screen(ErrorDialog(title, message), _after)

    def worker_failed(self, worker: Worker[Any]) -> None:
        """Every failed worker ends here (see :mod:`tjui.workers`): shown where it
        happened when its screen can, else in the error dialog."""
        node = worker.node
        if isinstance(node, ShowsFailures) and node.show_failure(worker):
            return
        if worker.group == "load":
            # An unreadable file is bad input: status 2, as `tjui inspect` exits on it.
            code = EXIT_USAGE if isinstance(worker.error, LoadError) else 1
            text = failure_text(worker.error, LoadError)
            self.show_error("Could not open the transcript", text, code=code)
        else:
            self.show_error(f"Background task failed ({worker.group})", failure_text(worker.error))

    def reopen(self, request: LoadRequest) -> None:
        self.request = request
        self.sub_title = str(request.path)
        self.switch_screen(MainScreen(request))

    def help_sections(self) -> list[tuple[str, list[Binding]]]:
        browser = [("Session browser", _bindings(BrowserScreen.BINDINGS))]
        return [
            *(browser if self.has_browser() else []),
            ("Messages", _bindings(MessageList.BINDINGS)),
            ("Boundary, summary and preview", _own(_bindings(MainScreen.BINDINGS))),
            ("Preview", _bindings(PreviewScreen.BINDINGS)),
            ("Why it fired (timeline)", _bindings(TimelineScreen.BINDINGS)),
            ("Commit dialog", _bindings(CommitDialog.BINDINGS)),
            ("History", _bindings(HistoryScreen.BINDINGS)),
            (
                "App",
                _bindings(
                    [*self.BINDINGS, Binding("ctrl+p", "command_palette", "Command palette")]
                ),
            ),
        ]

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(self.help_sections()))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield SystemCommand("Help: show every key", "List all key bindings", self.action_help)
        if isinstance(screen, MainScreen):
            for binding in _own(_bindings(MainScreen.BINDINGS)):
                if binding.action in ("back_to_list",):
                    continue
                yield SystemCommand(
                    binding.description,
                    f"key: {binding.key}",
                    _runner(screen, binding.action),
                )


def _bindings(bindings: Iterable[BindingType]) -> list[Binding]:
    """``BINDINGS`` as Binding objects (a tuple entry is made one; keys stay as written)."""
    return [b if isinstance(b, Binding) else Binding(*b) for b in bindings]


def _own(bindings: list[Binding]) -> list[Binding]:
    """A screen's bindings without the app's it repeats (Help, Quit) for the footer."""
    return [b for b in bindings if not b.action.startswith("app.")]


def _runner(screen: Screen[Any], action: str) -> Callable[[], Awaitable[None]]:
    async def run() -> None:
        await screen.run_action(action)

    return run


def make_app(
    path: str | Path,
    *,
    fmt: str | None = None,
    session: str | None = None,
    context_window: int | None = None,
    model: str | None = None,
    warn_at: float | None = None,
    whole_file: bool = False,
) -> TjuiApp:
    """Build the app for a transcript (tests reuse this factory)."""
    return TjuiApp(
        LoadRequest(
            path=Path(path),
            fmt=fmt,
            session=session,
            context_window=context_window,
            model=model,
            warn_at=warn_at,
            whole_file=whole_file,
        )
    )


class AppOptions(TypedDict, total=False):
    """:func:`make_app`'s keyword arguments."""

    fmt: str | None
    session: str | None
    context_window: int | None
    model: str | None
    warn_at: float | None
    whole_file: bool


def make_browser_app(*, now: Callable[[], float] | None = None) -> TjuiApp:
    """The app opening on the session browser (``now`` fixes its clock for tests)."""
    return TjuiApp(None, now=now)


def run_app(path: str | Path | None, **kwargs: Unpack[AppOptions]) -> None:
    """Run the inspector on ``path``, or the session browser when it is None."""
    app = make_browser_app() if path is None else make_app(path, **kwargs)
    app.run()
    if app.return_code:
        raise SystemExit(app.return_code)
