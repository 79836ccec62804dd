"""Aider chat history: ``.aider.chat.history.md`` (read-only).

Aider appends Markdown as the chat goes: ``# aider chat started at <time>`` opens each
run of the program; every line the user typed is written as ``#### <line>``; the
model's replies are written as they are (prose, code fences, edit blocks); Aider's own
output — the start-up banner, "Applied edit to …", commit notes, lint and test output,
``Tokens: … sent, … received`` — is written as ``> `` lines (``>`` alone for a blank).

What we map: one run (the last, or the one ``--session N`` numbers from 1); ``####``
lines to a user message (a ``/command`` is injected context of kind ``command``, not
an ask); reply prose to an assistant message (``####`` and ``>`` inside a code fence
stay prose); a block of ``>`` lines after a reply to the result of a synthetic
``aider`` call on that reply (what Aider did with it), and elsewhere to injected
context of kind ``aider_output``. ``Tokens: 2.1k sent, 1.6k cache write, 900 cache hit,
120 received`` lines are usage, measured at the reply before them; ``Main model: X``
names the model. ``/clear`` and ``/reset`` empty Aider's chat: each is a compaction
event (manual, no summary) at the message after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

from tinyjuice.formats._base import LoadError, LoadOptions, Source
from tinyjuice.formats._common import finish
from tinyjuice.formats._records import reset_event, text_message, tool_call_of, tool_result
from tinyjuice.model import CompactionEvent, Message, Role, TextPart, Transcript, Trigger, Usage

__all__ = ["HEADER", "HISTORY_FILE", "NAME", "read", "sniff"]

NAME = "aider"
HISTORY_FILE = ".aider.chat.history.md"
HEADER = "# aider chat started at "
_RESETS = ("/clear", "/reset")
_TOKENS = re.compile(r"^Tokens:\s*(.+?)\.?\s*(Cost:.*)?$")
_AMOUNT = re.compile(r"([\d.]+)\s*([kKmM]?)\s+(sent|received|cache write|cache hit)")
_MODEL = re.compile(r"^(?:Main )?[Mm]odel:\s*(\S+)")


def sniff(source: Source) -> int:
    if source.kind != "text":
        return 0
    head = source.doc[:4096].lstrip("\ufeff \t\r\n")
    if head.startswith(HEADER):
        return 95
    return 40 if "\n#### " in head or head.startswith("#### ") else 0


# ------------------------------------------------------------------------------ parse


@dataclass(slots=True)
class _Block:
    kind: str  # "user" | "output" | "reply"
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        lines = [ln[:-2] if ln.endswith("  ") else ln for ln in self.lines]
        return "\n".join(lines).strip("\n")


def _kind(line: str) -> str:
    if line == "####" or line.startswith("#### "):
        return "user"
    if line == ">" or line.startswith("> "):
        return "output"
    return "reply"


def _blocks(lines: list[str]) -> list[_Block]:
    """The user, output and reply blocks of one run. A blank line ends a user or output
    block: Aider starts each input with one (the lines of one input are not apart)."""
    blocks: list[_Block] = []
    fence = closed = False
    for line in lines:
        kind = "reply" if fence else _kind(line.rstrip("\r"))
        if kind == "reply" and line.lstrip().startswith("```"):
            fence = not fence
        body = line.rstrip("\r")
        if kind == "user":
            body = body[5:]
        elif kind == "output":
            body = body[2:]
        if not body.strip() and blocks and kind == "reply" and blocks[-1].kind != "reply":
            closed = True  # the blank line after a user or output block
            continue
        if blocks and blocks[-1].kind == kind and not (closed and kind != "reply"):
            blocks[-1].lines.append(body)
        else:
            blocks.append(_Block(kind, [body]))
        closed = False
    return [b for b in blocks if b.text.strip()]


def _sessions(text: str) -> list[tuple[str, list[str]]]:
    """(start time, lines) of each run; lines before the first header form a run too."""
    runs: list[tuple[str, list[str]]] = []
    current: list[str] = []
    started = ""
    for line in text.split("\n"):
        if line.startswith(HEADER):
            if any(ln.strip() for ln in current):
                runs.append((started, current))
            started, current = line[len(HEADER) :].strip(), []
        else:
            current.append(line)
    if any(ln.strip() for ln in current) or not runs:
        runs.append((started, current))
    return runs


# ----------------------------------------------------------------------------- build


def _tokens(text: str) -> dict[str, int]:
    amounts: dict[str, int] = {}
    for number, unit, what in _AMOUNT.findall(text):
        scale = {"k": 1_000, "m": 1_000_000}.get(unit.lower(), 1)
        amounts[what] = int(float(number) * scale)
    return amounts


@dataclass(slots=True)
class _Built:
    messages: list[Message] = field(default_factory=list)
    usage: list[Usage] = field(default_factory=list)
    events: list[CompactionEvent] = field(default_factory=list)
    model: str | None = None
    reset_pending: bool = False


def _scan_output(built: _Built, text: str, reply: int | None) -> None:
    for line in text.splitlines():
        line = line.strip()
        found = _MODEL.match(line)
        if found and built.model is None:
            built.model = found.group(1)
        tokens = _TOKENS.match(line)
        if tokens and reply is not None:
            amounts = _tokens(tokens.group(1))
            built.usage.append(
                Usage(
                    input_tokens=amounts.get("sent", 0),
                    cache_write_tokens=amounts.get("cache write", 0),
                    cache_read_tokens=amounts.get("cache hit", 0),
                    output_tokens=amounts.get("received", 0),
                    message_index=reply,
                )
            )


def _add(built: _Built, m: Message) -> None:
    if built.reset_pending:
        i = len(built.messages)
        built.events.append(reset_event(i, summary_index=None, trigger=Trigger.MANUAL))
        built.reset_pending = False
    built.messages.append(m)


def _output(built: _Built, block: _Block) -> None:
    text = block.text
    last = built.messages[-1] if built.messages else None
    if last is not None and last.role is Role.ASSISTANT and not last.tool_calls:
        i = len(built.messages) - 1
        call_id = f"aider_{i}"
        call = tool_call_of(call_id, "aider", {})
        built.messages[-1] = replace(
            last, tool_calls=(call,), hints={"synthetic_call_ids": (call_id,)}
        )
        built.messages.append(tool_result(call_id, "aider", text))
        _scan_output(built, text, i)
        return
    m = text_message(Role.USER, [TextPart(text)])
    _add(built, replace(m, meta=replace(m.meta, is_injected=True, injected_kind="aider_output")))
    _scan_output(built, text, None)


def _build(blocks: list[_Block]) -> _Built:
    built = _Built()
    for block in blocks:
        if block.kind == "output":
            _output(built, block)
            continue
        text = block.text
        if block.kind == "reply":
            _add(built, text_message(Role.ASSISTANT, [TextPart(text)]))
            continue
        m = text_message(Role.USER, [TextPart(text)])
        command = text.strip().split()[0] if text.strip().startswith("/") else None
        if command is not None:
            m = replace(m, meta=replace(m.meta, is_injected=True, injected_kind="command"))
        _add(built, m)
        if command in _RESETS:
            built.reset_pending = True
    if built.reset_pending:  # a reset as the last thing: the chat after it is empty
        built.events.append(
            reset_event(len(built.messages), summary_index=None, trigger=Trigger.MANUAL)
        )
    return built


def _pick(runs: list[tuple[str, list[str]]], session: str | None, source: Source) -> int:
    if session is None:
        return len(runs) - 1
    number = session.removeprefix("#")
    if number.isdigit() and 1 <= int(number) <= len(runs):
        return int(number) - 1
    for k, (started, _) in enumerate(runs):
        if started and started == session:
            return k
    raise LoadError(
        source.path,
        f"no chat {session!r} among the {len(runs)} in the file",
        expected=f"a number from 1 to {len(runs)} or a start time",
    )


def read(source: Source, options: LoadOptions) -> Transcript:
    if source.kind != "text":
        raise LoadError(
            source.path, "not Markdown text", expected="an Aider .aider.chat.history.md file"
        )
    runs = _sessions(source.doc)
    k = _pick(runs, options.session, source)
    started, lines = runs[k]
    built = _build(_blocks(lines))
    if not built.messages:
        raise LoadError(
            source.path,
            "the chat holds no messages",
            expected="'#### ' user lines and the replies after them",
        )
    msgs, warnings = finish(built.messages)
    if len(runs) > 1 and options.session is None:
        warnings.insert(
            0,
            f"file holds {len(runs)} chats; loaded the last (--session N picks another)",
        )
    return Transcript(
        messages=msgs,
        format=NAME,
        model=built.model,
        path=str(source.path),
        session_id=started or None,
        compactions=tuple(built.events),
        usage=tuple(built.usage),
        warnings=tuple(warnings),
    )
