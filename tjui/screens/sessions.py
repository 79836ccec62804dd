"""A modal listing the sessions of a multi-session file; dismisses with the chosen key."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, OptionList
from textual.widgets.option_list import Option

from tinyjuice.formats.catalog import SessionEntry
from tjui.visible import visible


class SessionPicker(ModalScreen[str | None]):
    """Pick one of ``entries``; the one on screen (``current``) is marked."""

    BINDINGS = [Binding("escape,s", "cancel", "Cancel", id="sessions.cancel")]

    def __init__(self, entries: list[SessionEntry], current: int | None) -> None:
        super().__init__()
        self._entries = entries
        self._current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                f"{len(self._entries)} sessions in this file (enter: open)", id="sessions-title"
            )
            yield OptionList(
                *(
                    Option(
                        visible(
                            f"{'▶' if i == self._current else ' '} {i + 1:>3}. {e.label}"
                            f" · {e.messages:,} msgs{f' · {e.detail}' if e.detail else ''}"
                        ),
                        id=f"session-{i}",
                    )
                    for i, e in enumerate(self._entries)
                ),
                markup=False,
            )
        yield Footer()

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self._current or 0
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        index = int((event.option_id or "session-0").removeprefix("session-"))
        self.dismiss(None if index == self._current else self._entries[index].key)

    def action_cancel(self) -> None:
        self.dismiss(None)
