""" "Why it fired": the usage timeline under a trigger policy, and each compaction explained.

A full screen that returns a message index: choosing a compaction marker and pressing
Enter dismisses the screen with the compaction's message index (the summary, or the
first message after the compaction) so the caller can move its message list there;
Escape dismisses with None. The policy switcher recomputes the threshold lines and
every explanation from the same usage series (no re-count).
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Select, Static

from tinyjuice.explain import Explanation, explain
from tinyjuice.model import Transcript
from tinyjuice.policies import POLICY_NAMES, TriggerPolicy, parse_policy
from tinyjuice.tokens import TranscriptTokens
from tjui.widgets.timeline import TimelineChart

__all__ = ["TimelineScreen"]

#: Replayed fire points listed in the detail pane before "…".
REPLAY_SHOWN = 8


class TimelineScreen(Screen[int | None]):
    """The usage timeline with a policy switcher; dismisses with a message index or None."""

    DEFAULT_CSS = """
    TimelineScreen { layout: vertical; background: $surface; }
    TimelineScreen #timeline-bar { height: 3; padding: 0 1; background: $panel; }
    TimelineScreen #timeline-policy { width: 34; }
    TimelineScreen #timeline-rule { width: 1fr; height: 3; padding: 0 1; color: $foreground-muted; }
    TimelineScreen #timeline-detail {
        height: auto; max-height: 10; padding: 0 1; background: $boost;
        border-top: solid $primary;
    }
    """

    BINDINGS = [
        Binding("escape,q", "close", "Close", id="timeline.close"),
        Binding("left,left_square_bracket", "step(-1)", "Prev compaction", id="timeline.prev"),
        Binding("right,right_square_bracket", "step(1)", "Next compaction", id="timeline.next"),
        Binding("enter", "jump", "Jump to message", id="timeline.jump"),
        Binding("p", "next_policy", "Next policy", id="timeline.policy"),
    ]

    def __init__(
        self,
        transcript: Transcript,
        tokens: TranscriptTokens,
        *,
        policy: TriggerPolicy | str | None = None,
        context_window: int | None = None,
        selected: int | None = None,
    ) -> None:
        super().__init__()
        self.transcript = transcript
        self.context_window = context_window
        self._warning: str | None = None
        try:
            self.result: Explanation = explain(
                transcript, policy, tokens=tokens, context_window=context_window
            )
        except ValueError as exc:
            # A given policy that does not fit the window: show the agent's own instead.
            self._warning = f"{exc}; showing the transcript's own policy"
            self.result = explain(transcript, None, tokens=tokens, context_window=context_window)
        self._initial_selected = selected
        spec = self.result.policy.spec()
        self._choices: list[str] = list(POLICY_NAMES)
        if spec not in self._choices:
            self._choices.insert(0, spec)

    def compose(self) -> ComposeResult:
        with Horizontal(id="timeline-bar"):
            yield Select(
                [(c, c) for c in self._choices],
                value=self.result.policy.spec(),
                allow_blank=False,
                id="timeline-policy",
            )
            yield Static(id="timeline-rule")
        yield TimelineChart(id="timeline-chart")
        yield Static(id="timeline-detail")
        yield Footer()

    def on_mount(self) -> None:
        chart = self.query_one(TimelineChart)
        chart.update_data(self.result, self._initial_selected)
        chart.focus()
        self._show()
        if self._warning:
            self.notify(self._warning, severity="warning")

    # -------------------------------------------------------------------- policy

    def set_policy(self, policy: TriggerPolicy | str) -> None:
        """Recompute every line and explanation under ``policy`` (the series is reused)."""
        try:
            result = explain(
                self.transcript,
                policy,
                series=self.result.series,
                context_window=self.context_window,
            )
        except ValueError as exc:
            self.notify(str(exc), severity="warning")
            self.query_one("#timeline-policy", Select).value = self.result.policy.spec()
            return
        self.result = result
        chart = self.query_one(TimelineChart)
        chart.update_data(result, chart.selected)
        self._show()

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id != "timeline-policy" or not isinstance(event.value, str):
            return
        if event.value != self.result.policy.spec():
            self.set_policy(parse_policy(event.value))

    def action_next_policy(self) -> None:
        select = self.query_one("#timeline-policy", Select)
        current = select.value if isinstance(select.value, str) else self._choices[0]
        at = self._choices.index(current) if current in self._choices else -1
        select.value = self._choices[(at + 1) % len(self._choices)]

    # ------------------------------------------------------------------- markers

    def action_step(self, delta: int) -> None:
        chart = self.query_one(TimelineChart)
        if not self.result.events:
            self.notify("No compactions in this transcript.", severity="information")
            return
        now = chart.selected if chart.selected is not None else -1
        chart.select(max(0, min(len(self.result.events) - 1, now + delta)))

    def on_timeline_chart_marker_selected(self, event: TimelineChart.MarkerSelected) -> None:
        self._show()

    def action_jump(self) -> None:
        chart = self.query_one(TimelineChart)
        if chart.selected is None or not self.result.events:
            self.notify("No compaction selected to jump to.", severity="warning")
            return
        self.dismiss(self.result.events[chart.selected].index)

    def action_close(self) -> None:
        self.dismiss(None)

    # -------------------------------------------------------------------- detail

    def _show(self) -> None:
        result = self.result
        self.query_one("#timeline-rule", Static).update(
            Text(f"{result.threshold.explanation} ({result.policy_source})")
        )
        detail = Text()
        chart = self.query_one(TimelineChart)
        if result.events and chart.selected is not None:
            ev = result.events[chart.selected]
            detail.append(f"Compaction {ev.summary()}", style="bold")
            for reason in ev.reasons():
                detail.append(f"\n  • {reason}")
            detail.append("\n  Enter: jump to message " + str(ev.index), style="italic")
        else:
            detail.append("No compactions recorded in this transcript.", style="bold")
        detail.append("\nNow: ", style="bold")
        now = result.current
        if now.last_tokens is not None and now.last_tokens != now.tokens:
            # Not the header's figure: the header has the last reading, this the next call.
            detail.append(
                f"next request (last reading {now.last_tokens:,} + messages since) ",
                style="italic",
            )
        detail.append(now.summary())
        fired = result.would_fire_at
        if fired:
            shown = ", ".join(str(i) for i in fired[:REPLAY_SHOWN])
            more = f", … (+{len(fired) - REPLAY_SHOWN})" if len(fired) > REPLAY_SHOWN else ""
            detail.append(
                f"\nReplay: {result.policy.name.value} would fire at message {shown}{more}"
            )
        else:
            detail.append(f"\nReplay: {result.policy.name.value} would not have fired")
        self.query_one("#timeline-detail", Static).update(detail)
