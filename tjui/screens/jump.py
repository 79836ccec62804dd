"""A small modal asking for a message index to jump to."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Input, Label


class JumpDialog(ModalScreen[int | None]):
    DEFAULT_CSS = """
    JumpDialog { align: center middle; }
    JumpDialog > Vertical { width: 40; height: auto; padding: 1 2; border: thick $primary; background: $panel; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="jump.cancel")]

    def __init__(self, count: int) -> None:
        super().__init__()
        self._count = count

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(f"Go to message (0–{max(0, self._count - 1):,}):")
            yield Input(placeholder="index", type="integer", id="jump-index")
        yield Footer()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        try:
            index = int(event.value)
        except ValueError:
            self.notify("Type a message index.", severity="warning")
            return
        if not 0 <= index < self._count:
            self.notify(
                f"No message {index}: the transcript has {self._count:,}.", severity="warning"
            )
            return
        self.dismiss(index)

    def action_cancel(self) -> None:
        self.dismiss(None)
