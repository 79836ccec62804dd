"""A small modal listing a session's subagents; Enter opens the chosen one."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option

from tinyjuice.subagents import Subagent


def subagent_label(agent: Subagent) -> str:
    where = "subagents/ file" if agent.path else "sidechain lines"
    if agent.source == "file+sidechain":
        where = "subagents/ file (also sidechain lines)"
    if agent.error:
        return f"{agent.id} · unreadable: {agent.error}"
    count = "" if agent.messages is None else f" · {agent.messages:,} messages"
    return f"{agent.id}{count} · {where}"


class SubagentDialog(ModalScreen[Subagent | None]):
    DEFAULT_CSS = """
    SubagentDialog { align: center middle; }
    SubagentDialog > Vertical { width: 80; height: auto; max-height: 80%; padding: 1 2; border: thick $primary; background: $panel; }
    SubagentDialog OptionList { height: auto; max-height: 20; }
    """
    BINDINGS = [Binding("escape", "cancel", "Cancel", id="subagents.cancel")]

    def __init__(self, agents: list[Subagent]) -> None:
        super().__init__()
        self._agents = agents

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(
                f"Subagents of this session ({len(self._agents)}): Enter opens one,"
                " Backspace in it comes back"
            )
            yield OptionList(
                *[Option(subagent_label(a), id=str(i)) for i, a in enumerate(self._agents)],
                id="subagent-list",
            )

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        agent = self._agents[int(event.option.id or 0)]
        if agent.error:
            self.notify(f"cannot open {agent.id}: {agent.error}", severity="warning")
            return
        self.dismiss(agent)

    def action_cancel(self) -> None:
        self.dismiss(None)
