"""The context-breakdown bar: what fills the window, and what the boundary would compress.

Details: docs/app.md (`tjui.widgets.context_bar`).
"""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual.color import Color
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


UNRECORDED_LABEL = "unrecorded: system + tools, from the measured prompt"

#: One colour per category: Okabe–Ito and Paul Tol's colour-blind-safe hues, told apart
#: under the common colour-vision deficiencies; the light theme gets darker shades of
#: the same hues. Exposed as theme variables (``$bar-…``) by the app.
BAR_PALETTE = {
    "system": "#E69F00",
    "tools": "#CC79A7",
    "rules": "#DDCC77",
    "skills": "#AA4499",
    "mcp": "#44AA99",
    "subagents": "#999933",
    "memory": "#88CCEE",
    "user": "#009E73",
    "assistant": "#56B4E9",
    "tool-output": "#D55E00",
    "reasoning": "#9F8FEF",
    "summaries": "#F0E442",
    "media": "#CC6677",
    "injected": "#A0A0A0",
    "unrecorded": "#8C8C8C",
    "buffer": "#CC6677",
}


def bar_palette(*, dark: bool) -> dict[str, str]:
    """The ``bar-…`` theme variables: the palette as is on dark themes, darker on light."""
    if dark:
        return {f"bar-{k}": v for k, v in BAR_PALETTE.items()}
    return {f"bar-{k}": Color.parse(v).darken(0.22).hex for k, v in BAR_PALETTE.items()}


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
        "context-bar--unrecorded",
        "context-bar--free",
        "context-bar--buffer",
        "context-bar--threshold",
        "context-bar--head",
        "context-bar--middle",
        "context-bar--tail",
        "context-bar--projected",
        "context-bar--label",
    }

    DEFAULT_CSS = """
    ContextBar { height: auto; padding: 0 1; background: $panel; }
    ContextBar > .context-bar--system { color: $bar-system; }
    ContextBar > .context-bar--tools { color: $bar-tools; }
    ContextBar > .context-bar--rules { color: $bar-rules; }
    ContextBar > .context-bar--skills { color: $bar-skills; }
    ContextBar > .context-bar--mcp { color: $bar-mcp; }
    ContextBar > .context-bar--subagents { color: $bar-subagents; }
    ContextBar > .context-bar--memory { color: $bar-memory; }
    ContextBar > .context-bar--user { color: $bar-user; }
    ContextBar > .context-bar--assistant { color: $bar-assistant; }
    ContextBar > .context-bar--tool-output { color: $bar-tool-output; }
    ContextBar > .context-bar--reasoning { color: $bar-reasoning; }
    ContextBar > .context-bar--summaries { color: $bar-summaries; }
    ContextBar > .context-bar--media { color: $bar-media; }
    ContextBar > .context-bar--injected { color: $bar-injected; }
    ContextBar > .context-bar--unrecorded { color: $bar-unrecorded; }
    ContextBar > .context-bar--free { color: $foreground-muted 50%; }
    ContextBar > .context-bar--buffer { color: $bar-buffer; }
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
    def breakdown(self) -> ContextBreakdown | None:
        """The breakdown on screen (None: nothing counted yet)."""
        return self._breakdown

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

    def _segments(self, b: ContextBreakdown) -> list[tuple[str, int, str, str]]:
        """(label, tokens, style, glyph) of what fills the prompt, in bar order; the
        measured-but-unrecorded part last among them (its figure is core's)."""
        segments = [
            (SHORT_LABELS[bk.key], bk.tokens, BUCKET_STYLE[bk.key], "█")
            for bk in b.categories
            if bk.tokens > 0
        ]
        if b.unrecorded_tokens:
            segments.append((UNRECORDED_LABEL, b.unrecorded_tokens, "unrecorded", "░"))
        return segments

    def _limits(self, plan: BoundaryPlan) -> tuple[int, int, str]:
        """(threshold, effective window, rule) of the agent's trigger, or the engine's."""
        trigger = self._trigger
        if trigger is not None:
            rule = f"{trigger.policy.value}: {trigger.rule.value}"
            return trigger.threshold_tokens, trigger.effective_window, rule
        return plan.budget.threshold_tokens, plan.budget.effective_window, plan.budget.rule.value

    def render(self) -> Text:
        b, plan = self._breakdown, self._plan
        width = max(20, self.size.width - 2 or 78)
        if b is None or plan is None:
            return Text("Counting tokens…", style=self._style("label"))
        window = plan.context_window
        segments = self._segments(b)
        used = sum(tokens for _, tokens, _, _ in segments)
        scale = max(window, used, 1)

        def cells(tokens: int) -> int:
            return round(tokens * width / scale)

        threshold, _effective, rule = self._limits(plan)
        line1 = self._usage_line(segments, cells, width, window, threshold)
        line2 = self._zones_line(plan, cells, width)
        stats = self._stats(b, plan, window, threshold, rule)
        legend = self._legend(segments, window, threshold, used, width)
        return Text("\n").join([line1, line2, stats, legend])

    def _usage_line(self, segments, cells, width, window, threshold) -> Text:  # type: ignore[no-untyped-def]
        """Each segment, then free space up to the trigger and the autocompact buffer
        from it to the window's edge (as Claude Code's /context draws them)."""
        bar: list[tuple[str, Style]] = []
        for _, tokens, style, glyph in segments:
            n = min(max(1, cells(tokens)), width - len(bar))
            bar.extend((glyph, self._style(style)) for _ in range(n))
        threshold_at = min(width - 1, cells(threshold))
        window_at = min(width, cells(window))
        while len(bar) < window_at:
            free = len(bar) < threshold_at
            bar.append(("·", self._style("free")) if free else ("▒", self._style("buffer")))
        if 0 <= threshold_at < len(bar):
            bar[threshold_at] = ("┃", self._style("threshold"))
        line = Text()
        for ch, st in bar:
            line.append(ch, st)
        return line

    def _zones_line(self, plan: BoundaryPlan, cells, width: int) -> Text:  # type: ignore[no-untyped-def]
        """Static | head | middle (hatched) | tail on the same scale, and ◆ after."""
        zones: list[tuple[str, Style]] = []
        zones.extend(("─", self._style("label")) for _ in range(cells(plan.static_tokens)))
        for tokens, ch, name in (
            (plan.head_tokens, "━", "head"),
            (plan.middle_tokens, "╳", "middle"),
            (plan.tail_tokens, "━", "tail"),
        ):
            n = max(1, cells(tokens)) if tokens else 0
            zones.extend((ch, self._style(name)) for _ in range(n))
        zones = zones[:width]
        after = self._after if self._after is not None and not plan.no_op else None
        compacted = after is not None and after.status.value == "compacted"
        projected_at = min(width - 1, cells(after.after_tokens)) if after and compacted else -1
        line = Text()
        for i, (ch, st) in enumerate(zones):
            mark = i == projected_at
            line.append("◆" if mark else ch, self._style("projected") if mark else st)
        if projected_at >= len(zones):
            line.append(" " * (projected_at - len(zones)))
            line.append("◆", self._style("projected"))
        return line

    def _stats(self, b: ContextBreakdown, plan: BoundaryPlan, window, threshold, rule) -> Text:  # type: ignore[no-untyped-def]
        label = self._style("label")
        shown_total = b.total_tokens
        pct = 100 * shown_total / window if window else 0
        stats = Text()
        stats.append(f"{pct:.1f}% of {_k(window)}", style="bold")
        stats.append(f" · {shown_total:,} {b.total_kind.value}", style=label)
        if b.measured_prompt_tokens is not None:
            stats.append(
                f" (counted {b.estimated_total_tokens:,} {b.counted_kind.value})", style=label
            )
        stats.append(" · threshold ", style=label)
        stats.append(f"┃{_k(threshold)}", style=self._style("threshold"))
        stats.append(f" ({rule})", style=label)
        stats.append("\ncompress ", style=label)
        stats.append(
            f"╳ {plan.middle_messages:,} msgs / {plan.middle_tokens:,} tok",
            style=self._style("middle"),
        )
        stats.append_text(self._after_text(plan, window))
        return stats

    def _legend(self, segments, window: int, threshold: int, used: int, width: int) -> Text:  # type: ignore[no-untyped-def]
        """Swatch, name, tokens and % of the window per entry; an entry never splits
        across lines. On short terminals one line of the largest, the rest counted."""
        entries = [(label, tokens, style, glyph) for label, tokens, style, glyph in segments]
        short = self.app.size.height < 30
        if short:
            entries.sort(key=lambda e: -e[1])
        else:
            free = max(0, min(threshold, window) - used)
            if free:
                entries.append(("free space", free, "free", "·"))
            if window > threshold:
                entries.append(("autocompact buffer", window - threshold, "buffer", "▒"))
        lines: list[Text] = [Text()]
        shown = 0
        for label, tokens, style, glyph in entries:
            pct = f" {100 * tokens / window:.1f}%" if window else ""
            item = Text()
            item.append(f"{glyph} ", self._style(style))
            item.append(f"{label} {_k(tokens)}{pct}", self._style("label"))
            room = width - (8 if short else 0)
            if lines[-1].cell_len and lines[-1].cell_len + 2 + item.cell_len > room:
                if short:
                    break
                lines.append(Text())
            if lines[-1].cell_len:
                lines[-1].append("  ")
            lines[-1].append_text(item)
            shown += 1
        if shown < len(entries):
            lines[-1].append(f"  +{len(entries) - shown} more", self._style("label"))
        return Text("\n").join(lines)
