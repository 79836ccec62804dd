"""The usage timeline: context tokens per assistant turn, drawn with Unicode blocks.

One column per turn (turns are bucketed by their peak when there are more turns than
columns). Measured turns are solid blocks (``█`` with eighth-block tops); counted turns
(exact or estimated: no provider usage) are shaded (``▒``) in another colour. The window (``─``), the policy's threshold
(``━``) and the output reservation edge (``╌``) are horizontal lines, labelled in the
left gutter. Under the chart, ``▲`` marks each past compaction (the selected one
highlighted) and ``△`` each turn where the policy would have fired on replay. Every
number comes from :func:`tinyjuice.explain.explain`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.style import Style
from rich.text import Text
from textual import events
from textual.message import Message
from textual.widget import Widget

from tinyjuice.explain import Explanation
from tinyjuice.policies import Threshold, UsagePoint

__all__ = ["TimelineChart", "chart_columns"]

EIGHTHS = " ▁▂▃▄▅▆▇█"
MEASURED = "█"
ESTIMATED = "▒"
ESTIMATED_TOP = "░"
WINDOW_LINE = "─"
THRESHOLD_LINE = "━"
RESERVE_LINE = "╌"
EVENT_MARK = "▲"
EVENT_RULE = "┆"
REPLAY_MARK = "△"
#: Left gutter: a 5-cell value label and the axis.
GUTTER = 6
#: Rows under the chart: markers, x axis, legend.
FOOTER_ROWS = 3


def _k(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 10_000:
        return f"{n / 1000:.0f}K"
    if n >= 1000:
        return f"{n / 1000:.1f}K"
    return str(n)


@dataclass(frozen=True, slots=True)
class Column:
    """One drawn column: the peak point of the turns it covers."""

    point: UsagePoint
    first_index: int
    last_index: int


def chart_columns(points: tuple[UsagePoint, ...], width: int) -> tuple[list[Column], int]:
    """Columns for ``points`` in ``width`` cells, and each column's cell width (1–3)."""
    n = len(points)
    if n == 0 or width <= 0:
        return [], 1
    if n <= width:
        bar = max(1, min(3, width // n))
        return [Column(p, p.message_index, p.message_index) for p in points], bar
    cols: list[Column] = []
    for c in range(width):
        lo, hi = c * n // width, (c + 1) * n // width
        chunk = points[lo:hi]
        if not chunk:
            continue
        peak = max(chunk, key=lambda p: p.tokens)
        cols.append(Column(peak, chunk[0].message_index, chunk[-1].message_index))
    return cols, 1


class TimelineChart(Widget, can_focus=True):
    """Tokens per turn with window, threshold, reservation and compaction markers."""

    COMPONENT_CLASSES = {
        "timeline--measured",
        "timeline--estimated",
        "timeline--window",
        "timeline--threshold",
        "timeline--reserve",
        "timeline--marker",
        "timeline--marker-selected",
        "timeline--replay",
        "timeline--axis",
    }

    DEFAULT_CSS = """
    TimelineChart { height: 1fr; min-height: 10; padding: 0 1; background: $panel; }
    TimelineChart:focus { background-tint: $foreground 3%; }
    TimelineChart > .timeline--measured { color: $primary; }
    TimelineChart > .timeline--estimated { color: $warning; }
    TimelineChart > .timeline--window { color: $foreground-muted; }
    TimelineChart > .timeline--threshold { color: $error; text-style: bold; }
    TimelineChart > .timeline--reserve { color: $error 60%; }
    TimelineChart > .timeline--marker { color: $accent; text-style: bold; }
    TimelineChart > .timeline--marker-selected { color: $text; background: $accent; text-style: bold; }
    TimelineChart > .timeline--replay { color: $success; }
    TimelineChart > .timeline--axis { color: $foreground-muted; }
    """

    class MarkerSelected(Message):
        """A compaction marker was chosen (``position`` in ``Explanation.events``)."""

        def __init__(self, position: int) -> None:
            super().__init__()
            self.position = position

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self._result: Explanation | None = None
        self._selected: int | None = None
        #: Cell column (inside the plot) of each event marker, from the last render.
        self._marker_cells: list[int] = []

    @property
    def selected(self) -> int | None:
        return self._selected

    def update_data(self, result: Explanation, selected: int | None = None) -> None:
        self._result = result
        events = result.events
        if selected is None or not events:
            selected = (len(events) - 1) if events else None
        self._selected = None if selected is None else max(0, min(selected, len(events) - 1))
        self.refresh()

    def select(self, position: int | None) -> None:
        if self._result is None or not self._result.events or position is None:
            return
        position = max(0, min(position, len(self._result.events) - 1))
        if position != self._selected:
            self._selected = position
            self.refresh()
        self.post_message(self.MarkerSelected(position))

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(f"timeline--{name}", partial=True)

    # --------------------------------------------------------------------- render

    def render(self) -> Text:
        result = self._result
        if result is None:
            return Text("Counting tokens…", style=self._style("axis"))
        width = max(10, self.content_size.width or 78)
        height = max(FOOTER_ROWS + 4, self.content_size.height or 20)
        plot_w = width - GUTTER
        rows = height - FOOTER_ROWS
        points = result.series.points
        thr = result.threshold
        cols, bar = chart_columns(points, plot_w)
        peak = max((p.tokens for p in points), default=0)
        top = int(max(thr.context_window, peak, thr.threshold_tokens, 1) * 1.04) + 1
        # cells[r][x]: (char, style name) — r = 0 is the top row.
        cells: list[list[tuple[str, str]]] = [[(" ", "axis")] * plot_w for _ in range(rows)]
        label_rows = _draw_limits(cells, thr, top)
        # Event columns: the first column at or after each compaction.
        event_cols: list[int] = []
        for ev in result.events:
            pos = next((i for i, c in enumerate(cols) if c.last_index >= ev.index), len(cols) - 1)
            event_cols.append(max(0, pos))
        _draw_bars(cells, cols, bar, top, set(event_cols))
        out = Text(no_wrap=True, overflow="crop")
        self._append_plot(out, cells, label_rows)
        self._append_markers(out, cols, bar, plot_w, event_cols, result.would_fire_at)
        # X axis: first and last message index of the plotted turns.
        if cols:
            left = f"msg {cols[0].first_index}"
            right = f"msg {cols[-1].last_index}"
            used = min(plot_w, len(cols) * bar)
            gap = max(1, used - len(left) - len(right))
            out.append(" " * GUTTER + left + " " * gap + right, self._style("axis"))
        else:
            out.append(" " * GUTTER + "no assistant turns to plot", self._style("axis"))
        out.append("\n")
        out.append(" " * GUTTER)
        out.append_text(self._legend(bool(thr.output_reservation)))
        return out

    def _append_plot(
        self,
        out: Text,
        cells: list[list[tuple[str, str]]],
        label_rows: dict[int, tuple[int, str, int]],
    ) -> None:
        """The plot's rows, each behind its axis label (a limit's value, or 0 at the
        bottom), runs of one style appended together."""
        rows = len(cells)
        for r in range(rows):
            held = label_rows.get(r)
            if held is not None:
                out.append(f"{_k(held[0]):>5}", self._style(held[1]))
                out.append("┤", self._style("axis"))
            elif r == rows - 1:
                out.append(f"{'0':>5}┤", self._style("axis"))
            else:
                out.append(" " * 5 + "│", self._style("axis"))
            run_ch: list[str] = []
            run_style = ""
            for ch, name in cells[r]:
                if name != run_style and run_ch:
                    out.append("".join(run_ch), self._style(run_style))
                    run_ch = []
                run_style = name
                run_ch.append(ch)
            if run_ch:
                out.append("".join(run_ch), self._style(run_style))
            out.append("\n")

    def _append_markers(
        self,
        out: Text,
        cols: list[Column],
        bar: int,
        plot_w: int,
        event_cols: list[int],
        would_fire_at: tuple[int, ...],
    ) -> None:
        """The marker row: where a compaction happened (the selected one highlighted;
        their cells are kept for clicks) and where the policy would fire."""
        marks = [(" ", "axis")] * plot_w
        for i, c in enumerate(cols):
            if any(
                c.first_index <= fire <= c.last_index or (i == 0 and fire < c.first_index)
                for fire in would_fire_at
            ):
                x = i * bar
                if x < plot_w:
                    marks[x] = (REPLAY_MARK, "replay")
        self._marker_cells = []
        for pos, i in enumerate(event_cols):
            x = min(plot_w - 1, i * bar)
            self._marker_cells.append(x)
            marks[x] = (EVENT_MARK, "marker-selected" if pos == self._selected else "marker")
        out.append(" " * 5 + "└", self._style("axis"))
        for ch, name in marks:
            out.append(ch, self._style(name))
        out.append("\n")

    def _legend(self, reserve: bool) -> Text:
        legend = Text()
        legend.append(f"{MEASURED} measured  ", self._style("measured"))
        legend.append(f"{ESTIMATED} counted  ", self._style("estimated"))
        legend.append(f"{THRESHOLD_LINE} threshold  ", self._style("threshold"))
        legend.append(f"{WINDOW_LINE} window  ", self._style("window"))
        if reserve:
            legend.append(f"{RESERVE_LINE} output reserve  ", self._style("reserve"))
        legend.append(f"{EVENT_MARK} compaction  ", self._style("marker"))
        legend.append(f"{REPLAY_MARK} would fire", self._style("replay"))
        return legend

    # --------------------------------------------------------------------- mouse

    def on_click(self, event: events.Click) -> None:
        if not self._marker_cells:
            return
        x = event.x - self.styles.padding.left - GUTTER
        best = min(range(len(self._marker_cells)), key=lambda k: abs(self._marker_cells[k] - x))
        if abs(self._marker_cells[best] - x) <= 3:
            self.select(best)


def _row_of(value: int, rows: int, top: int) -> int:
    """The row (counted up from the bottom) a token value falls on."""
    return min(rows - 1, int(value * rows / top))


def _draw_limits(
    cells: list[list[tuple[str, str]]], thr: Threshold, top: int
) -> dict[int, tuple[int, str, int]]:
    """Draw the window, output-reserve and threshold lines across ``cells``; where two
    fall on one row the higher rank (threshold > reserve > window) is drawn and labelled.
    Returns ``{row: (value, style name, rank)}`` for the axis labels."""
    rows, width = len(cells), len(cells[0]) if cells else 0
    lines: list[tuple[int, str, str, int]] = [(thr.context_window, WINDOW_LINE, "window", 1)]
    if thr.output_reservation:
        lines.append((thr.effective_window, RESERVE_LINE, "reserve", 2))
    lines.append((thr.threshold_tokens, THRESHOLD_LINE, "threshold", 3))
    label_rows: dict[int, tuple[int, str, int]] = {}
    for value, ch, name, rank in lines:
        r = rows - 1 - _row_of(value, rows, top)
        held = label_rows.get(r)
        if held is None or rank > held[2]:
            label_rows[r] = (value, name, rank)
            cells[r] = [(ch, name)] * width
    return label_rows


def _draw_bars(
    cells: list[list[tuple[str, str]]],
    cols: list[Column],
    bar: int,
    top: int,
    event_cols: set[int],
) -> None:
    """Draw each column's bar (measured solid with eighth-block tops, counted shaded),
    and a compaction's rule above its column's bar."""
    rows, plot_w = len(cells), len(cells[0]) if cells else 0
    for i, col in enumerate(cols):
        p = col.point
        full, rem = divmod(round(p.tokens * rows * 8 / top), 8)
        x0 = i * bar
        measured = p.measured
        name = "measured" if measured else "estimated"
        for r_up in range(rows):
            r = rows - 1 - r_up
            if r_up < full:
                ch = MEASURED if measured else ESTIMATED
            elif r_up == full and rem:
                ch = EIGHTHS[rem] if measured else (ESTIMATED_TOP if rem >= 4 else " ")
                if ch == " ":
                    continue
            else:
                if i in event_cols and cells[r][x0][0] == " ":
                    cells[r][x0] = (EVENT_RULE, "marker")
                continue
            for dx in range(bar):
                if x0 + dx < plot_w:
                    cells[r][x0 + dx] = (ch, name)
