"""The context-breakdown bar: what fills the window, and what the boundary would compress.

Line 1 stacks the breakdown buckets (static cost first, then the conversation by
kind) on a scale of the context window, with the output reservation shaded at the
right end and the trigger threshold marked. Line 2 shows the compaction zones on the
same scale (head, hatched middle, tail) and where the prompt would end after
compaction. Then the figures, and a legend. Every number comes from core.
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.widget import Widget

from tinyjuice.breakdown import ContextBreakdown
from tinyjuice.pipeline import BoundaryPlan
from tinyjuice.policies import Threshold
from tinyjuice.report import CompactionReport

#: Bucket key → component class suffix (colours come from the theme via DEFAULT_CSS).
BUCKET_STYLE = {
    "system_prompt": "system",
    "tool_definitions": "tools",
    "rules": "rules",
    "skills": "skills",
    "mcp_tools": "mcp",
    "subagents": "subagents",
    "memory": "memory",
    "user": "user",
    "assistant": "assistant",
    "tool_output": "tool-output",
    "reasoning": "reasoning",
    "summaries": "summaries",
    "media": "media",
    "injected": "injected",
}

SHORT_LABELS = {
    "system_prompt": "system",
    "tool_definitions": "tools",
    "rules": "rules",
    "skills": "skills",
    "mcp_tools": "MCP",
    "subagents": "subagents",
    "memory": "memory",
    "user": "user",
    "assistant": "assistant",
    "tool_output": "tool output",
    "reasoning": "reasoning",
    "summaries": "summaries",
    "media": "media",
    "injected": "injected",
}


def _k(n: int) -> str:
    if n >= 10_000:
        return f"{n / 1000:.0f}K"
    if n >= 1000:
        return f"{n / 1000:.1f}K"
    return str(n)


class ContextBar(Widget):
    """Stacked usage bar with threshold, reservation, window edge and compaction zones."""

    COMPONENT_CLASSES = {
        "context-bar--system",
        "context-bar--tools",
        "context-bar--rules",
        "context-bar--skills",
        "context-bar--mcp",
        "context-bar--subagents",
        "context-bar--memory",
        "context-bar--user",
        "context-bar--assistant",
        "context-bar--tool-output",
        "context-bar--reasoning",
        "context-bar--summaries",
        "context-bar--media",
        "context-bar--injected",
        "context-bar--free",
        "context-bar--reserve",
        "context-bar--threshold",
        "context-bar--head",
        "context-bar--middle",
        "context-bar--tail",
        "context-bar--projected",
        "context-bar--label",
    }

    DEFAULT_CSS = """
    ContextBar { height: auto; padding: 0 1; background: $panel; }
    ContextBar > .context-bar--system { color: $warning; }
    ContextBar > .context-bar--tools { color: $warning-darken-2; }
    ContextBar > .context-bar--rules { color: $accent-lighten-1; }
    ContextBar > .context-bar--skills { color: $accent-darken-1; }
    ContextBar > .context-bar--mcp { color: $secondary-lighten-2; }
    ContextBar > .context-bar--subagents { color: $secondary-darken-2; }
    ContextBar > .context-bar--memory { color: $success-darken-2; }
    ContextBar > .context-bar--user { color: $success; }
    ContextBar > .context-bar--assistant { color: $primary; }
    ContextBar > .context-bar--tool-output { color: $secondary; }
    ContextBar > .context-bar--reasoning { color: $primary-lighten-2; }
    ContextBar > .context-bar--summaries { color: $warning-lighten-2; }
    ContextBar > .context-bar--media { color: $error-lighten-2; }
    ContextBar > .context-bar--injected { color: $foreground-muted; }
    ContextBar > .context-bar--free { color: $foreground-muted 30%; }
    ContextBar > .context-bar--reserve { color: $error 50%; }
    ContextBar > .context-bar--threshold { color: $error; text-style: bold; }
    ContextBar > .context-bar--head { color: $primary; }
    ContextBar > .context-bar--middle { color: $error; }
    ContextBar > .context-bar--tail { color: $success; }
    ContextBar > .context-bar--projected { color: $success; text-style: bold; }
    ContextBar > .context-bar--label { color: $foreground-muted; }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._breakdown: ContextBreakdown | None = None
        self._plan: BoundaryPlan | None = None
        self._trigger: Threshold | None = None
        self._after: CompactionReport | None = None
        self._computing = False

    def update_data(
        self,
        breakdown: ContextBreakdown,
        plan: BoundaryPlan,
        trigger: Threshold | None = None,
        *,
        after: CompactionReport | None = None,
        computing: bool = False,
    ) -> None:
        """``trigger`` is the agent's own threshold; without it the engine's is drawn.
        ``after`` is core's report for this boundary (the figure the preview and the
        commit show); without it no "after" figure is drawn."""
        # A new breakdown can change the legend's height; a new plan only redraws.
        relayout = breakdown is not self._breakdown
        self._breakdown = breakdown
        self._plan = plan
        self._trigger = trigger
        self._after = after
        self._computing = computing
        self.refresh(layout=relayout)

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"context-bar--{name}", partial=True)

    @property
    def computing(self) -> bool:
        """Whether core is computing the "after" figure for the boundary on screen."""
        return self._computing

    def _after_text(self, plan: BoundaryPlan, window: int) -> Text:
        """Where the prompt ends after compaction: core's computed figure, or why none."""
        label = self._style("label")
        text = Text(" → ", style=label)
        after = self._after
        if plan.no_op:
            text.append(f"no-op: {plan.reason}", style=self._style("threshold"))
        elif after is not None and after.status.value != "compacted":
            text.append(f"no-op: {after.reason}", style=self._style("threshold"))
        elif after is not None:
            pct = 100 * after.after_tokens / window if window else 0
            text.append("after ", style=label)
            text.append(
                f"◆ {after.after_tokens:,} {after.tokens_kind} ({pct:.1f}%)",
                style=self._style("projected"),
            )
        elif self._computing:
            text.append("after: computing…", style=label)
        else:
            text.append("after: p previews the exact figure", style=label)
        return text

    def render(self) -> Text:
        b, plan = self._breakdown, self._plan
        width = max(20, self.size.width - 2 or 78)
        if b is None or plan is None:
            return Text("Counting tokens…", style=self._style("label"))
        window = plan.context_window
        total = b.estimated_total_tokens
        scale = max(window, total, 1)

        def cells(tokens: int) -> int:
            return round(tokens * width / scale)

        bar: list[tuple[str, Style]] = []
        used = 0
        for bucket in b.categories:
            if bucket.tokens <= 0:
                continue
            n = max(1, cells(bucket.tokens))
            n = min(n, width - used)
            bar.extend(("█", self._style(BUCKET_STYLE[bucket.key])) for _ in range(n))
            used += n
        trigger = self._trigger
        effective = trigger.effective_window if trigger else plan.budget.effective_window
        threshold = trigger.threshold_tokens if trigger else plan.budget.threshold_tokens
        rule = (
            f"{trigger.policy.value}: {trigger.rule.value}" if trigger else plan.budget.rule.value
        )
        reserve = window - effective
        effective_at = cells(effective)
        window_at = min(width, cells(window))
        while len(bar) < window_at:
            pos = len(bar)
            if pos >= effective_at:
                bar.append(("▒", self._style("reserve")))
            else:
                bar.append(("·", self._style("free")))
        threshold_at = min(width - 1, cells(threshold))
        if 0 <= threshold_at < len(bar):
            bar[threshold_at] = ("┃", self._style("threshold"))
        line1 = Text()
        for ch, st in bar:
            line1.append(ch, st)

        # Zones on the same scale: static | head | middle (hatched) | tail, then projection.
        zones: list[tuple[str, Style]] = []
        static_n = cells(plan.static_tokens)
        zones.extend(("─", self._style("label")) for _ in range(static_n))
        for tokens, ch, name in (
            (plan.head_tokens, "━", "head"),
            (plan.middle_tokens, "╳", "middle"),
            (plan.tail_tokens, "━", "tail"),
        ):
            n = cells(tokens) if tokens else 0
            if tokens and n == 0:
                n = 1
            zones.extend((ch, self._style(name)) for _ in range(n))
        zones = zones[:width]
        after = self._after if self._after is not None and not plan.no_op else None
        compacted = after is not None and after.status.value == "compacted"
        projected_at = min(width - 1, cells(after.after_tokens)) if compacted else -1
        line2 = Text()
        for i, (ch, st) in enumerate(zones):
            line2.append(
                "◆" if i == projected_at else ch,
                self._style("projected") if i == projected_at else st,
            )
        if projected_at >= len(zones):
            line2.append(" " * (projected_at - len(zones)))
            line2.append("◆", self._style("projected"))

        shown_total = b.total_tokens
        kind = b.total_kind.value
        pct = 100 * shown_total / window if window else 0
        stats = Text()
        stats.append(f"{pct:.1f}% of {_k(window)}", style="bold")
        stats.append(f" · {shown_total:,} {kind}", style=self._style("label"))
        if b.measured_prompt_tokens is not None:
            stats.append(
                f" (counted {b.estimated_total_tokens:,} {b.counted_kind.value})",
                style=self._style("label"),
            )
        stats.append(" · threshold ", style=self._style("label"))
        stats.append(f"┃{_k(threshold)}", style=self._style("threshold"))
        stats.append(f" ({rule})", style=self._style("label"))
        if reserve:
            stats.append(" · reserve ", style=self._style("label"))
            stats.append(f"▒{_k(reserve)}", style=self._style("reserve"))
        stats.append("\ncompress ", style=self._style("label"))
        stats.append(
            f"╳ {plan.middle_messages:,} msgs / {plan.middle_tokens:,} tok",
            style=self._style("middle"),
        )
        stats.append_text(self._after_text(plan, window))

        # Legend: every bucket on tall terminals; on short ones, as many of the largest
        # as fit on one line (the rest are named as a count).
        buckets = [bk for bk in b.categories if bk.tokens > 0]
        short = self.app.size.height < 30
        if short:
            buckets = sorted(buckets, key=lambda bk: -bk.tokens)
        legend = Text()
        shown = 0
        for bucket in buckets:
            item = f"{SHORT_LABELS[bucket.key]} {_k(bucket.tokens)}  "
            if short and legend.cell_len + len(item) + 2 > width - 8:
                break
            legend.append("█ ", self._style(BUCKET_STYLE[bucket.key]))
            legend.append(item, self._style("label"))
            shown += 1
        if shown < len(buckets):
            legend.append(f"+{len(buckets) - shown} more", self._style("label"))
        return Text("\n").join([line1, line2, stats, legend])
