"""The message list: one row per message, rendered line by line (Line API).

Details: docs/app.md (`tjui.widgets.message_list`).
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.segment import Segment
from textual import events
from textual.binding import Binding
from textual.cache import LRUCache
from textual.geometry import Size
from textual.message import Message as TMessage
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from tinyjuice.model import Message, Role, Transcript
from tjui.visible import visible

GLYPHS = {
    Role.SYSTEM: "⚙",
    Role.DEVELOPER: "⚙",
    Role.USER: "▶",
    Role.ASSISTANT: "◆",
    Role.TOOL: "↳",
}

PREVIEW_CHARS = 400


def preview_text(message: Message) -> str:
    """A one-line preview of a message (first non-blank text, tool calls, media)."""
    bits: list[str] = []
    text = message.text
    if text:
        for line in text.splitlines():
            if line.strip():
                bits.append(line.strip()[:PREVIEW_CHARS])
                break
    if not bits and message.reasoning:
        bits.append("(reasoning) " + message.reasoning.strip().splitlines()[0][:PREVIEW_CHARS])
    for call in message.tool_calls:
        args = call.arguments.replace("\n", " ")
        bits.append(f"{call.name}({args[:120]}{'…' if len(args) > 120 else ''})")
    if message.media:
        bits.append(f"[{len(message.media)} image{'s' if len(message.media) > 1 else ''}]")
    if not bits and message.thinking:
        bits.append("(thinking)")
    return "  ".join(bits) if bits else "(empty)"


@dataclass(frozen=True, slots=True)
class RowFace:
    """What a row shows of its message: the role, its style, a marker and the preview."""

    role: Role
    #: The component class of the role's colour (summary and injected messages differ).
    style: str
    marker: str
    preview: str


def row_face(m: Message) -> RowFace:
    """The row of message ``m`` as the list draws it."""
    if m.meta.is_summary:
        style, marker = "message-list--summary", "[summary] "
    elif m.meta.is_injected:
        style, marker = "message-list--injected", f"[{m.meta.injected_kind or 'injected'}] "
    else:
        style, marker = ROLE_STYLE[m.role], "[orphan] " if m.meta.orphan else ""
    return RowFace(m.role, style, marker, preview_text(m))


ROLE_STYLE = {
    Role.SYSTEM: "message-list--system",
    Role.DEVELOPER: "message-list--system",
    Role.USER: "message-list--user",
    Role.ASSISTANT: "message-list--assistant",
    Role.TOOL: "message-list--tool",
}


@dataclass(frozen=True, slots=True)
class FirstRows:
    """The first rows of a transcript not loaded yet, from the analysis cache: how many
    messages there are, and the faces and exact counts of the first ones (the list
    draws the rest as "loading…" until :meth:`MessageList.set_transcript`)."""

    count: int
    history: int
    history_faces: tuple[RowFace, ...]
    history_tokens: tuple[int, ...]
    faces: tuple[RowFace, ...]
    tokens: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Zones:
    """The compaction zones: head ``[0, start)``, middle ``[start, end)``, tail ``[end, n)``."""

    start: int
    end: int


class MessageList(ScrollView, can_focus=True):
    """All messages of a transcript, one row each."""

    COMPONENT_CLASSES = {
        "message-list--cursor",
        "message-list--index",
        "message-list--tokens",
        "message-list--system",
        "message-list--user",
        "message-list--assistant",
        "message-list--tool",
        "message-list--summary",
        "message-list--injected",
        "message-list--head",
        "message-list--middle",
        "message-list--tail",
        "message-list--boundary",
        "message-list--match",
        "message-list--gutter-head",
        "message-list--gutter-middle",
        "message-list--gutter-tail",
        "message-list--history",
    }

    DEFAULT_CSS = """
    MessageList {
        background: $surface;
        scrollbar-gutter: stable;
        overflow-x: hidden;
    }
    MessageList > .message-list--cursor { background: $accent 40%; text-style: bold; }
    MessageList > .message-list--index { color: $foreground-muted; }
    MessageList > .message-list--tokens { color: $foreground-muted; }
    MessageList > .message-list--system { color: $warning; }
    MessageList > .message-list--user { color: $success; text-style: bold; }
    MessageList > .message-list--assistant { color: $primary; }
    MessageList > .message-list--tool { color: $secondary-lighten-2; }
    MessageList > .message-list--summary { color: $warning; text-style: italic; }
    MessageList > .message-list--injected { color: $foreground-muted; text-style: italic; }
    MessageList > .message-list--head { background: $primary 8%; }
    MessageList > .message-list--middle { background: $error 7%; }
    MessageList > .message-list--tail { background: $success 8%; }
    MessageList > .message-list--boundary { color: $error; text-style: bold; }
    MessageList > .message-list--match { background: $warning 30%; }
    MessageList > .message-list--gutter-head { color: $primary; }
    MessageList > .message-list--gutter-middle { color: $error; text-style: bold; }
    MessageList > .message-list--gutter-tail { color: $success; }
    MessageList > .message-list--history { color: $text-disabled; }
    """

    BINDINGS = [
        Binding("up,k", "cursor_up", "Up", show=False, id="list.up"),
        Binding("down,j", "cursor_down", "Down", show=False, id="list.down"),
        Binding("pageup", "page_up_cursor", "Page up", show=False, id="list.page_up"),
        Binding("pagedown", "page_down_cursor", "Page down", show=False, id="list.page_down"),
        Binding("home,g", "first", "First", show=False, id="list.first"),
        Binding("end,G", "last", "Last", show=False, id="list.last"),
    ]

    cursor: reactive[int] = reactive(0, always_update=True)

    @dataclass
    class Highlighted(TMessage):
        """The cursor moved to a message."""

        list: MessageList
        index: int

        @property
        def control(self) -> MessageList:
            return self.list

        def can_replace(self, message: TMessage) -> bool:
            return isinstance(message, MessageList.Highlighted)

    @dataclass
    class BoundaryDragged(TMessage):
        """The boundary rule was dragged so the tail would start at ``index``."""

        list: MessageList
        index: int

        @property
        def control(self) -> MessageList:
            return self.list

        def can_replace(self, message: TMessage) -> bool:
            return isinstance(message, MessageList.BoundaryDragged)

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._transcript: Transcript | None = None
        self._tokens: tuple[int, ...] = ()
        self._cumulative: tuple[int, ...] = ()
        self._estimated = True
        self._zones: Zones | None = None
        self._matches: frozenset[int] = frozenset()
        self._cache: LRUCache[tuple[object, ...], Strip] = LRUCache(1024)
        self._dragging = False
        self._rule_label = ""
        #: The history before the agent's last compaction: (messages, tokens), greyed.
        self._history: tuple[Message, ...] = ()
        self._history_tokens: tuple[int, ...] = ()
        #: The first rows shown before the transcript is loaded (None: not shown).
        self._first: FirstRows | None = None

    # ------------------------------------------------------------------ data

    @property
    def count(self) -> int:
        if self._transcript is not None:
            return len(self._transcript.messages)
        return self._first.count if self._first is not None else 0

    @property
    def estimated(self) -> bool:
        """Whether the rows show estimated counts (``~``) rather than exact ones."""
        return self._estimated

    @property
    def history_rows(self) -> int:
        """Rows of greyed history above the live messages."""
        return len(self._history) if self._first is None else self._first.history

    @property
    def rule_row(self) -> int | None:
        """The row of the boundary rule (drawn before the first tail message)."""
        return self._zones.end + self.history_rows if self._zones is not None else None

    @property
    def row_count(self) -> int:
        return self.history_rows + self.count + (1 if self._zones is not None else 0)

    def message_at_row(self, row: int) -> int | None:
        """The live message shown at ``row`` (None for the rule and history rows)."""
        rule = self.rule_row
        row -= self.history_rows
        if row < 0:
            return None
        if rule is None or row < rule - self.history_rows:
            return row if row < self.count else None
        if row == rule - self.history_rows:
            return None
        index = row - 1
        return index if index < self.count else None

    def row_of(self, index: int) -> int:
        rule = self.rule_row
        row = index + self.history_rows
        return row if rule is None or row < rule else row + 1

    @property
    def history_messages(self) -> tuple[Message, ...]:
        return self._history

    @property
    def history_tokens(self) -> tuple[int, ...]:
        return self._history_tokens

    def set_history(self, messages: tuple[Message, ...], tokens: tuple[int, ...]) -> None:
        """Show ``messages`` (the history before the last reset) greyed above the list."""
        self._history = messages
        self._history_tokens = tokens
        self._cache.clear()
        self._update_virtual_size()
        self.refresh()

    def _update_virtual_size(self) -> None:
        self.virtual_size = Size(self.size.width, self.row_count)

    def show_first_rows(self, first: FirstRows) -> None:
        """Draw ``first`` (exact counts) until the transcript is set; rows past it say
        "loading…" and carry no figure."""
        self._first = first
        self._history_tokens = first.history_tokens
        self.set_tokens(first.tokens, estimated=False)

    @property
    def showing_first_rows(self) -> bool:
        """Whether the list shows cached first rows (the transcript is still loading)."""
        return self._first is not None

    def set_transcript(
        self, transcript: Transcript, tokens: tuple[int, ...], *, estimated: bool
    ) -> None:
        self._transcript = transcript
        self._first = None
        self.set_tokens(tokens, estimated=estimated)
        self.cursor = min(self.cursor, max(0, self.count - 1))

    def set_tokens(self, tokens: tuple[int, ...], *, estimated: bool) -> None:
        """Replace per-message tokens (estimated first, exact once counted)."""
        self._tokens = tokens
        running = 0
        cumulative = []
        for t in tokens:
            running += t
            cumulative.append(running)
        self._cumulative = tuple(cumulative)
        self._estimated = estimated
        self._cache.clear()
        self._update_virtual_size()
        self.refresh()

    def set_zones(self, zones: Zones | None, label: str = "") -> None:
        # Cached strips are keyed by zone, so nothing needs evicting: rows whose zone
        # changed simply miss the cache.
        if zones == self._zones and label == self._rule_label:
            return
        had_rule = self._zones is not None
        self._zones = zones
        self._rule_label = label
        if had_rule != (zones is not None):
            self._update_virtual_size()
        self.refresh()

    def set_matches(self, matches: frozenset[int]) -> None:
        self._matches = matches
        self._cache.clear()
        self.refresh()

    # ------------------------------------------------------------- rendering

    def _zone_of(self, index: int) -> str | None:
        z = self._zones
        if z is None:
            return None
        if index < z.start:
            return "head"
        if index < z.end:
            return "middle"
        return "tail"

    def render_line(self, y: int) -> Strip:
        row = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if (self._transcript is None and self._first is None) or row >= self.row_count:
            return Strip.blank(width, self.rich_style)
        if row < self.history_rows:
            return self._render_history(row, width)
        index = self.message_at_row(row)
        if index is None:
            return self._render_rule(width)
        zone = self._zone_of(index)
        key = (index, width, index == self.cursor, zone, index in self._matches)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        strip = self._render_row(index, width, zone)
        self._cache[key] = strip
        return strip

    def _render_history(self, row: int, width: int) -> Strip:
        key = ("history", row, width)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        face = self._history_face(row)
        style = self.rich_style + self.get_component_rich_style("message-list--history")
        if face is None:
            text = f" {row:>6} loading…"
        else:
            tokens = self._history_tokens[row] if row < len(self._history_tokens) else 0
            approx = "~" if self._estimated else " "
            text = (
                f" {row:>6} {GLYPHS[face.role]} {face.role.value[:9]:<9} {approx}{tokens:>7,}"
                f" {'':>10}  [already compacted] {visible(face.preview)}"
            )
        strip = Strip([Segment(text, style)]).crop_extend(0, width, style)
        self._cache[key] = strip
        return strip

    def _render_rule(self, width: int) -> Strip:
        style = self.rich_style + self.get_component_rich_style("message-list--boundary")
        label = f" ✂ {self._rule_label} " if self._rule_label else " ✂ compress above · keep below "
        if self._dragging:
            label = " ✂ dragging… release to set the boundary "
        left = 3
        text = "━" * left + label
        text += "━" * max(0, width - len(text))
        return Strip([Segment(text[:width], style)])

    def _history_face(self, row: int) -> RowFace | None:
        if self._first is None:
            return row_face(self._history[row])
        faces = self._first.history_faces
        return faces[row] if row < len(faces) else None

    def _face(self, index: int) -> RowFace | None:
        if self._transcript is not None:
            return row_face(self._transcript.messages[index])
        assert self._first is not None
        faces = self._first.faces
        return faces[index] if index < len(faces) else None

    def _render_row(self, index: int, width: int, zone: str | None) -> Strip:
        face = self._face(index)
        base = self.rich_style
        if zone is not None:
            base = base + self.get_component_rich_style(f"message-list--{zone}")
        if index in self._matches:
            base = base + self.get_component_rich_style("message-list--match")
        if index == self.cursor:
            base = base + self.get_component_rich_style("message-list--cursor")
        dim = self.get_component_rich_style("message-list--index", partial=True)
        gutter = {"head": "┃", "middle": "╳", "tail": "┃"}.get(zone or "", " ")
        gutter_style = self.get_component_rich_style(
            f"message-list--gutter-{zone}" if zone else "message-list--index", partial=True
        )
        number = Segment(f"{index + self.history_rows:>6} ", base + dim)
        if face is None:  # past the cached first rows: no figure until the load ends
            segments = [
                Segment(gutter, base + gutter_style),
                number,
                Segment("loading…", base + dim),
            ]
            return Strip(segments).crop_extend(0, width, base)
        tok_style = self.get_component_rich_style("message-list--tokens", partial=True)
        role_style = self.get_component_rich_style(face.style, partial=True)
        approx = "~" if self._estimated else " "
        tokens = self._tokens[index] if index < len(self._tokens) else 0
        cumulative = self._cumulative[index] if index < len(self._cumulative) else 0
        indent = "  " if face.role is Role.TOOL else ""
        segments = [
            Segment(gutter, base + gutter_style),
            number,
            Segment(indent + GLYPHS[face.role] + " ", base + role_style),
            Segment(f"{face.role.value[:9]:<9} ", base + role_style),
            Segment(f"{approx}{tokens:>7,} ", base + tok_style),
            Segment(f"{approx}{cumulative:>9,}  ", base + tok_style),
            Segment(face.marker, base + role_style),
            Segment(visible(face.preview), base),
        ]
        return Strip(segments).crop_extend(0, width, base)

    # ------------------------------------------------------------- behaviour

    def watch_cursor(self, old: int, new: int) -> None:
        clamped = max(0, min(new, self.count - 1)) if self.count else 0
        if clamped != new:
            self.cursor = clamped
            return
        # The cache key includes "is the cursor row", so only two rows change.
        self.refresh_line(self.row_of(old))
        self.refresh_line(self.row_of(new))
        self.scroll_to_show(new)
        self.post_message(self.Highlighted(self, new))

    def scroll_to_show(self, index: int) -> None:
        row = self.row_of(index)
        height = self.scrollable_content_region.height or 1
        top = int(self.scroll_y)
        if row < top:
            self.scroll_to(y=row, animate=False)
        elif row >= top + height:
            self.scroll_to(y=row - height + 1, animate=False)

    def show_rule(self) -> None:
        """Scroll so the ✂ rule and a row either side of it are on screen."""
        rule = self.rule_row
        if rule is None:
            return
        height = self.scrollable_content_region.height or 1
        top = int(self.scroll_y)
        if rule - 1 < top:
            self.scroll_to(y=max(0, rule - 1), animate=False)
        elif rule + 1 >= top + height:
            self.scroll_to(y=rule + 2 - height, animate=False)

    def center_on(self, index: int) -> None:
        height = self.scrollable_content_region.height or 1
        self.scroll_to(y=max(0, self.row_of(index) - height // 2), animate=False)

    def action_cursor_up(self) -> None:
        self.cursor = max(0, self.cursor - 1)

    def action_cursor_down(self) -> None:
        self.cursor = min(self.count - 1, self.cursor + 1)

    def action_page_up_cursor(self) -> None:
        self.cursor = max(0, self.cursor - max(1, self.scrollable_content_region.height - 1))

    def action_page_down_cursor(self) -> None:
        step = max(1, self.scrollable_content_region.height - 1)
        self.cursor = min(self.count - 1, self.cursor + step)

    def action_first(self) -> None:
        self.cursor = 0

    def action_last(self) -> None:
        self.cursor = max(0, self.count - 1)

    def _row_at(self, y: int) -> int:
        return int(self.scroll_y) + y

    def on_mouse_down(self, event: events.MouseDown) -> None:
        if self.rule_row is not None and self._row_at(event.y) == self.rule_row:
            self._dragging = True
            self.capture_mouse()
            self.refresh()
            event.stop()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        if not self._dragging:
            return
        row = max(0, min(self._row_at(event.y), self.row_count - 1)) - self.history_rows
        # Dropping the rule at a row puts the boundary before the message shown there.
        self.post_message(self.BoundaryDragged(self, max(0, min(row, self.count))))

    def on_mouse_up(self, event: events.MouseUp) -> None:
        if self._dragging:
            self._dragging = False
            self.release_mouse()
            self.refresh()
            event.stop()

    def on_click(self, event: events.Click) -> None:
        index = self.message_at_row(self._row_at(event.y))
        if index is not None:
            self.cursor = index

    def on_resize(self, event: events.Resize) -> None:
        self._cache.clear()
        self._update_virtual_size()
