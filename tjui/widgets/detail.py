"""The detail pane: the selected message in full."""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from rich.text import Text
from textual import work
from textual.containers import Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Collapsible, Static

from tinyjuice.model import MediaPart, Message, Role, TextPart, ThinkingPart, ToolCall
from tjui.widgets.lazy_text import LazyText, text_lines

#: Messages up to this many characters are prepared on the UI thread (pretty JSON and
#: line splitting take ~1.5 ms per 270 KB); larger ones in a worker, so input never waits.
SYNC_CHARS = 400_000

#: A JSON string field at least this long, with line breaks, is shown as real lines.
UNFOLD_CHARS = 200

#: Most lines of one text shown (they render lazily; copy with y gets everything).
MAX_LINES = 20_000


@dataclass(frozen=True, slots=True)
class Block:
    """One piece of a message, prepared off the UI thread: text lines or a note."""

    lines: tuple[str, ...] = ()
    lexer: str | None = None
    #: Fold at the width (output, JSON) instead of word-wrapping (prose).
    fold: bool = False
    #: A one-line note instead of text (media, redacted thinking, elided lines).
    note: str = ""
    #: A tool call: its title above the lines.
    title: Text | None = None
    reasoning: bool = False


def _looks_like_json(text: str) -> bool:
    t = text.lstrip()
    return t[:1] in "{[" and t.rstrip()[-1:] in "}]"


def _pretty_json(raw: str) -> tuple[str, bool]:
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw, False
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode(), True


def _lines_blocks(
    text: str, *, lexer: str | None, fold: bool, title: Text | None = None
) -> list[Block]:
    """``text`` as one block of display lines (at most MAX_LINES, the rest counted)."""
    lines = text_lines(text)
    blocks = [Block(tuple(lines[:MAX_LINES]), lexer=lexer, fold=fold, title=title)]
    if len(lines) > MAX_LINES:
        more = len(lines) - MAX_LINES
        blocks.append(Block(note=f"… {more:,} more lines (press y to copy the whole message)"))
    return blocks


def _json_blocks(raw: str) -> list[Block] | None:
    """A JSON tool result, pretty; a long multi-line string field (a command's
    ``output``) follows as its own block of real lines instead of one escaped line."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    long: dict[str, str] = {}
    if isinstance(value, dict):
        long = {
            k: v
            for k, v in value.items()
            if isinstance(v, str) and len(v) >= UNFOLD_CHARS and "\n" in v
        }
        value = {
            k: f"‹{len(long[k].splitlines()):,} lines, below›" if k in long else v
            for k, v in value.items()
        }
    pretty = orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()
    blocks = _lines_blocks(pretty, lexer="json", fold=True)
    for key, text in long.items():
        blocks += _lines_blocks(text, lexer=None, fold=True, title=Text(key, style="bold"))
    return blocks


def _text_blocks(text: str, *, tool_output: bool) -> list[Block]:
    if tool_output and _looks_like_json(text):
        blocks = _json_blocks(text)
        if blocks is not None:
            return blocks
    return _lines_blocks(text, lexer=None, fold=tool_output)


def _call_block(call: ToolCall) -> Block:
    pretty, ok = _pretty_json(call.arguments) if call.arguments else ("", True)
    title = Text(f"→ {call.name}", style="bold")
    title.append(f"  (id {call.id})", style="dim")
    if not ok:
        title.append("  invalid JSON arguments, shown verbatim", style="italic")
    lines = tuple(text_lines(pretty)[:MAX_LINES])
    return Block(lines, lexer="json" if ok else None, fold=True, title=title)


def _size(message: Message) -> int:
    """Characters the pane has to prepare for ``message``."""
    size = sum(len(p.text) for p in message.parts if isinstance(p, TextPart | ThinkingPart))
    return size + len(message.reasoning or "") + sum(len(c.arguments) for c in message.tool_calls)


def message_blocks(message: Message) -> list[Block]:
    """Everything the pane shows below the heading (pure: runs in a worker thread)."""
    blocks: list[Block] = []
    reasoning = [p.text for p in message.parts if isinstance(p, ThinkingPart) and p.text]
    if message.reasoning:
        reasoning.insert(0, message.reasoning)
    if reasoning:
        blocks.append(Block(tuple(text_lines("\n\n".join(reasoning))), reasoning=True))
    tool_output = message.role is Role.TOOL
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            blocks.extend(_text_blocks(part.text, tool_output=tool_output))
        elif isinstance(part, MediaPart):
            blocks.append(
                Block(note=f"[image: {part.media_type}, {part.byte_size:,} bytes, {part.source}]")
            )
        elif isinstance(part, ThinkingPart) and part.redacted:
            blocks.append(Block(note="[redacted thinking]"))
    blocks.extend(_call_block(call) for call in message.tool_calls)
    if not blocks:
        blocks.append(Block(note="(no content)"))
    return blocks


def message_heading(message: Message, index: int, tokens: int | None, estimated: bool) -> Text:
    heading = Text()
    heading.append(f"#{index} ", style="bold")
    heading.append(message.role.value, style="bold")
    if message.tool_name:
        heading.append(f" · {message.tool_name}")
    if tokens is not None:
        heading.append(f" · {'~' if estimated else ''}{tokens:,} tokens", style="dim")
    flags = []
    if message.meta.is_summary:
        flags.append("compaction summary")
    if message.meta.is_injected:
        flags.append(f"injected context ({message.meta.injected_kind or 'unknown'})")
    if message.meta.orphan:
        flags.append("tool result without its call")
    if message.meta.is_error:
        flags.append("tool error")
    if message.tool_call_id:
        flags.append(f"call id {message.tool_call_id}")
    if message.meta.source_id:
        flags.append(f"source id {message.meta.source_id}")
    if flags:
        heading.append("\n" + " · ".join(flags), style="italic")
    return heading


class DetailPane(VerticalScroll):
    """Shows one message: text, tool calls as pretty JSON, output, reasoning, media.

    The body is drawn by ``LazyText`` widgets, which highlight only the rows on screen —
    selecting a 70k-token output costs a few milliseconds. Bodies over ``SYNC_CHARS`` are
    prepared (pretty JSON, line splitting) in a worker thread while the heading shows, so
    input never waits on them either.
    """

    DEFAULT_CSS = """
    DetailPane { padding: 0 1; }
    DetailPane .detail--heading { margin-bottom: 1; color: $text; }
    DetailPane .detail--call { height: auto; border-left: outer $primary; padding-left: 1; margin-bottom: 1; }
    DetailPane .detail--media { color: $text-muted; text-style: italic; }
    DetailPane .detail--filling { color: $text-muted; text-style: italic; }
    DetailPane Collapsible { margin-bottom: 1; }
    """

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._generation = 0
        #: True from a new selection until its body is mounted.
        self.filling = False

    def show(
        self, message: Message | None, index: int, tokens: int | None, *, estimated: bool
    ) -> None:
        self._generation += 1
        self.remove_children()
        if message is None:
            self.filling = False
            self.mount(Static("No message selected.", classes="detail--heading"))
            return
        heading = Static(
            message_heading(message, index, tokens, estimated), classes="detail--heading"
        )
        self.scroll_home(animate=False)
        if _size(message) <= SYNC_CHARS:
            # Small enough to prepare at once (a few ms): one mount, one layout.
            self.filling = False
            self.mount(heading, *(_widget(b, self._theme()) for b in message_blocks(message)))
            return
        self.filling = True
        self.mount(heading, Static("…", classes="detail--filling"))
        self._prepare(self._generation, message)

    def _theme(self) -> str:
        return "monokai" if self.app.current_theme.dark else "default"

    @work(thread=True, exclusive=True, group="detail", exit_on_error=False)
    def _prepare(self, generation: int, message: Message) -> None:
        blocks = message_blocks(message)
        self.app.call_from_thread(self._fill, generation, blocks)

    def _fill(self, generation: int, blocks: list[Block]) -> None:
        if generation != self._generation:
            return  # another message was selected meanwhile
        theme = self._theme()
        self.query(".detail--filling").remove()
        self.mount_all([_widget(block, theme) for block in blocks])
        self.filling = False


def _widget(block: Block, theme: str) -> Widget:
    if block.note:
        return Static(block.note, classes="detail--media", markup=False)
    body = LazyText(block.lines, lexer=block.lexer, fold=block.fold, theme=theme)
    if block.reasoning:
        return Collapsible(body, title="Reasoning", collapsed=True)
    if block.title is not None:
        return Vertical(Static(block.title), body, classes="detail--call")
    return body
