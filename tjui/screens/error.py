"""A modal that shows a load error and offers to open another file."""

from __future__ import annotations

from pathlib import Path

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static


class ErrorDialog(ModalScreen[Path | None]):
    """Shows what went wrong; dismisses with a path to open instead, or None to quit."""

    DEFAULT_CSS = """
    ErrorDialog { align: center middle; }
    ErrorDialog > Vertical {
        width: 80%; max-width: 100; height: auto; padding: 1 2;
        border: thick $error; background: $panel;
    }
    ErrorDialog #error-title { text-style: bold; color: $error; margin-bottom: 1; }
    ErrorDialog #error-message { margin-bottom: 1; }
    ErrorDialog Horizontal { height: auto; align-horizontal: right; margin-top: 1; }
    ErrorDialog Button { margin-left: 1; }
    """

    BINDINGS = [Binding("escape", "quit_app", "Quit", id="error.quit")]

    def __init__(self, title: str, message: str, *, allow_open: bool = True) -> None:
        super().__init__()
        self._title = title
        self._message = message
        self._allow_open = allow_open

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._title, id="error-title")
            yield Static(self._message, id="error-message", markup=False)
            if self._allow_open:
                yield Label("Open another file:")
                yield Input(placeholder="path to a transcript", id="error-path")
            with Horizontal():
                if self._allow_open:
                    yield Button("Open", variant="primary", id="error-open")
                yield Button("Quit", variant="error", id="error-quit")
        yield Footer()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        if event.button.id == "error-open":
            self._open()
        else:
            self.dismiss(None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self._open()

    def _open(self) -> None:
        value = self.query_one("#error-path", Input).value.strip()
        if value:
            self.dismiss(Path(value).expanduser())

    def action_quit_app(self) -> None:
        self.dismiss(None)
