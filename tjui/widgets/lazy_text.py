"""Long text drawn line by line: only the rows on screen are highlighted and rendered.

``LazyText`` is a Line API widget with an auto height. Wrapping is arithmetic over the
text's lines (character folding for output and JSON, word wrapping for prose), so laying
out a 270 KB tool output costs milliseconds; highlighting happens per logical line, only
when one of its rows is painted, and is cached. Inside a scrolling container the
compositor asks only for the visible rows, so a 5,000-row message paints as fast as a
short one.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate

from pygments.lexers import get_lexer_by_name
from rich._wrap import divide_line
from rich.cells import cell_len, chop_cells
from rich.segment import Segment
from rich.style import Style
from rich.syntax import Syntax
from textual.cache import LRUCache
from textual.geometry import Size
from textual.strip import Strip
from textual.widget import Widget

from tjui.visible import visible

#: Logical lines longer than this are shown without syntax colours (lexing one 270 KB
#: JSON line takes longer than a frame; its rows still paint lazily).
HIGHLIGHT_MAX_CHARS = 4000


def text_lines(text: str) -> list[str]:
    """``text`` as display lines: tabs expanded, control characters made visible."""
    return visible(text).splitlines() or [""]


def _offsets(line: str, width: int, fold: bool) -> list[int]:
    """Where each wrapped row of ``line`` starts (character offsets, first one 0)."""
    if fold:
        if line.isascii():
            return list(range(0, len(line), width)) or [0]
        starts, at = [], 0
        while at < len(line):
            starts.append(at)
            chunk = line[at : at + width]
            # Wide characters take two cells: only such chunks need measuring.
            at += len(chunk) if chunk.isascii() else max(1, len(chop_cells(chunk, width)[0]))
        return starts or [0]
    if cell_len(line) <= width:
        return [0]
    return [0, *divide_line(line, width, fold=True)]


@dataclass(frozen=True, slots=True)
class _Layout:
    """Rows at one width: ``ends[i]`` is the row after logical line ``i``'s last."""

    width: int
    ends: list[int]
    #: Row starts of the lines wrapped by measuring (word wrap, wide characters);
    #: any other line's rows are every ``width`` characters.
    wrapped: dict[int, list[int]]

    @property
    def height(self) -> int:
        return self.ends[-1] if self.ends else 0

    def row(self, y: int, lengths: list[int]) -> tuple[int, int, int]:
        """(logical line, start, end) of row ``y``."""
        i = bisect_right(self.ends, y)
        k = y - (self.ends[i - 1] if i else 0)
        starts = self.wrapped.get(i)
        if starts is None:
            start = k * self.width
            return i, start, min(lengths[i], start + self.width)
        end = starts[k + 1] if k + 1 < len(starts) else lengths[i]
        return i, starts[k], end


class LazyText(Widget):
    """Lines of any number and length; rows are wrapped to the width and highlighted on demand."""

    DEFAULT_CSS = """
    LazyText { height: auto; }
    """

    def __init__(
        self,
        lines: Sequence[str],
        *,
        lexer: str | None = None,
        fold: bool = False,
        theme: str = "monokai",
        classes: str | None = None,
    ) -> None:
        super().__init__(classes=classes)
        #: Display lines (``text_lines``), prepared off the UI thread by the caller.
        self._lines = lines or ("",)
        self._fold = fold
        self._lexer = get_lexer_by_name(lexer, stripnl=False) if lexer else None
        self._theme = Syntax.get_theme(theme)
        self._lengths = [len(line) for line in self._lines]
        self._ascii = all(line.isascii() for line in self._lines)
        self._layouts: dict[int, _Layout] = {}
        self._base_style: Style | None = None
        self._texts: LRUCache[int, list[tuple[int, str, Style | None]]] = LRUCache(256)
        self._styles: dict[object, Style] = {}
        #: How many logical lines were highlighted (tests check the work stays lazy).
        self.highlighted = 0

    @property
    def line_count(self) -> int:
        return len(self._lines)

    # ------------------------------------------------------------------ layout

    def _layout(self, width: int) -> _Layout:
        """The wrapped rows at ``width``. A few widths are kept: layout settles (a
        scrollbar appearing) by trying more than one."""
        width = max(1, width)
        layout = self._layouts.get(width)
        if layout is not None:
            return layout
        if self._fold and self._ascii:
            # Pure arithmetic: each line takes ceil(length / width) rows.
            counts = [(n + width - 1) // width or 1 for n in self._lengths]
            wrapped: dict[int, list[int]] = {}
        else:
            counts, wrapped = [], {}
            for i, line in enumerate(self._lines):
                if len(line) <= width and line.isascii():
                    counts.append(1)
                    continue
                starts = _offsets(line, width, self._fold)
                wrapped[i] = starts
                counts.append(len(starts))
        layout = _Layout(width, list(accumulate(counts)), wrapped)
        if len(self._layouts) >= 4:
            self._layouts.pop(next(iter(self._layouts)))
        self._layouts[width] = layout
        return layout

    def get_content_width(self, container: Size, viewport: Size) -> int:
        return container.width

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        return self._layout(width).height

    # --------------------------------------------------------------- rendering

    def notify_style_update(self) -> None:
        self._base_style = None
        super().notify_style_update()

    def _token_style(self, token_type: object) -> Style:
        style = self._styles.get(token_type)
        if style is None:
            full = self._theme.get_style_for_token(token_type)  # type: ignore[arg-type]
            # Colours and weight only: the pane's own background shows through.
            style = Style(color=full.color, bold=full.bold, italic=full.italic)
            self._styles[token_type] = style
        return style

    def _tokens(self, index: int) -> list[tuple[int, str, Style | None]]:
        """The logical line as (offset, text, style) runs, highlighted once, cached."""
        cached = self._texts.get(index)
        if cached is not None:
            return cached
        line = self._lines[index]
        runs: list[tuple[int, str, Style | None]] = [(0, line, None)]
        if self._lexer is not None and len(line) <= HIGHLIGHT_MAX_CHARS:
            self.highlighted += 1
            runs, at = [], 0
            for token_type, value in self._lexer.get_tokens(line):
                value = value.rstrip("\n")
                if value:
                    runs.append((at, value, self._token_style(token_type)))
                    at += len(value)
        self._texts[index] = runs
        return runs

    def render_line(self, y: int) -> Strip:
        width = self.content_size.width
        layout = self._layout(width)
        base = self._base_style
        if base is None:
            base = self._base_style = self.rich_style
        if not 0 <= y < layout.height:
            return Strip.blank(width, base)
        index, start, end = layout.row(y, self._lengths)
        segments = []
        for at, value, style in self._tokens(index):
            if at + len(value) <= start:
                continue
            if at >= end:
                break
            piece = value[max(0, start - at) : end - at]
            segments.append(Segment(piece, base + style if style else base))
        return Strip(segments).crop_extend(0, width, base)
