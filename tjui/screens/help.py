"""The help screen: every key, generated from the bindings themselves."""

from __future__ import annotations

from collections.abc import Iterable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

KEY_NAMES = {
    "up": "↑",
    "down": "↓",
    "pageup": "PgUp",
    "pagedown": "PgDn",
    "home": "Home",
    "end": "End",
    "escape": "Esc",
    "question_mark": "?",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
    "ctrl+p": "Ctrl+P",
}


def key_label(keys: str) -> str:
    return " / ".join(KEY_NAMES.get(k, k) for k in keys.split(","))


def bindings_table(sections: Iterable[tuple[str, Iterable[Binding]]]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2))
    table.add_column("key", style="bold", no_wrap=True)
    table.add_column("action")
    for title, bindings in sections:
        table.add_row(Text(title, style="bold underline"), "")
        for b in bindings:
            table.add_row(key_label(b.key), b.description)
        table.add_row("", "")
    return table


class HelpScreen(ModalScreen[None]):
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll {
        width: 80%; max-width: 90; height: 85%; padding: 1 2;
        border: thick $primary; background: $panel;
    }
    """
    BINDINGS = [Binding("escape,q,question_mark", "close", "Close", id="help.close")]

    def __init__(self, sections: list[tuple[str, list[Binding]]]) -> None:
        super().__init__()
        self.table = bindings_table(sections)

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(Text("tjui — keys", style="bold"))
            yield Static(
                "Every action is also in the command palette (Ctrl+P). "
                "Mouse: click a message to select it; drag the ✂ rule to move the boundary.\n"
            )
            yield Static(self.table, id="help-table")
        yield Footer()

    def action_close(self) -> None:
        self.dismiss(None)
