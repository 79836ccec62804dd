"""OpenAI Codex CLI rollout JSONL (``~/.codex/sessions/.../rollout-*.jsonl``). Read-only.

Each line is ``{"timestamp", "type", "payload"}``. How the file becomes a
:class:`~tinyjuice.model.Transcript`:

- ``session_meta``: ``id`` → ``session_id``; ``instructions`` (or
  ``base_instructions.text``) → ``system_prompt``; ``cwd``, ``cli_version``,
  ``model_provider``, ``git`` → ``extra``. ``turn_context``: the last ``model`` →
  ``Transcript.model``.
- ``response_item``s are the conversation. Consecutive model outputs form one
  assistant message: a ``reasoning`` item attaches (summary texts joined, as
  ``Message.reasoning``) to the assistant output that follows it; a reasoning item
  that no output follows becomes its own assistant message holding a
  :class:`ThinkingPart`. Consecutive calls (``function_call``, ``custom_tool_call``,
  ``local_shell_call`` → ``local_shell`` with the action as JSON arguments,
  ``web_search_call`` → ``web_search``) are parallel calls on one assistant message.
  ``*_output`` items become ``tool`` messages paired by ``call_id``; orphans are flagged.
  ``role: developer`` messages stay developer messages; AGENTS.md /
  ``<user_instructions>`` / ``<environment_context>`` user messages are injected context.
  ``compaction`` / ``compaction_summary`` items (a remote compaction's encrypted
  summary) become user messages with no text, marked ``is_summary``.
- ``event_msg`` ``user_message`` / ``agent_message`` repeat response items. Rule: every
  response-item message text (per role) pays for one event with the same text; an
  event that finds nothing to pay for (a rollout written without the item) becomes a
  message at its position. Nothing is counted twice.
- ``token_count`` with ``info`` → one :class:`Usage` per measurement (``input`` minus
  ``cached`` as input, ``cached`` as cache reads, ``reasoning_output_tokens`` as
  reasoning, ``message_index`` = the last message so far in the full list); a repeat
  of the same ``total_token_usage`` is the same measurement and is skipped;
  ``info: null`` is skipped. ``model_context_window`` (also from ``task_started``) →
  ``context_window``.
- The message list is the **full history in file order**, as the Claude Code reader
  keeps it across compaction boundaries: nothing before a compaction is dropped.
- Compaction: a ``compacted`` line and an ``event_msg`` ``context_compacted`` with no
  response item between them (either order) are one :class:`CompactionEvent`. The
  ``compacted`` line puts ONE summary message at its position: role user, text =
  ``payload.message`` (the summary Codex wrote), ``meta.is_summary``; the event's
  ``message_index`` and ``summary_index`` are that message's index. A ``compacted``
  line with an empty ``message`` and a lone ``context_compacted`` add no message:
  ``summary_index`` is None and ``message_index`` is the index of the next message.
  ``trigger`` is UNKNOWN (the rollout does not record whether ``/compact`` or the
  automatic limit started it); ``pre_tokens`` is the last measured prompt before it.
  A ``replacement_history`` (the list Codex resumes from: initial context, the user
  asks it kept, the prefixed summary) is what the agent's context holds after the
  compaction: its items are added as messages at the compaction's position (each
  flagged ``extra["replayed"]``; the one ending with ``payload.message`` is the summary,
  else the summary message follows them). The event's ``message_index`` is the first
  of them (the live context starts there) and ``summary_index`` the summary. The raw
  items are also kept in ``event.extra["replacement_history"]``; ``extra["lines"]``
  holds the line numbers of the compaction's line(s).
- ``thread_rolled_back{num_turns}`` means the user undid the last ``num_turns`` turns;
  Codex drops them from the model's context, so the reader removes them too: the
  list is cut at the ``num_turns``-th last real user ask, but never before the point
  of the last compaction (the turns it summarised stay, and so does its summary).
  Usage measured on a removed message gets ``message_index`` None; a warning counts
  the removed messages.

Bad input raises :class:`LoadError` naming the line; with ``lenient`` the line is
skipped and counted. Unknown line, item and event types are skipped and counted.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import orjson

from tinyjuice.formats._base import (
    JsonLine,
    JsonlResult,
    LoadError,
    LoadOptions,
    Source,
    bad_line_warnings,
    clip,
    json_type,
)
from tinyjuice.formats._common import (
    finish,
    media_from_url,
    meta_for_text,
    new_message,
    new_meta,
    plain_meta,
    text_part,
    tool_call,
)
from tinyjuice.model import (
    EMPTY,
    CompactionEvent,
    Message,
    MessageMeta,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
    Trigger,
    Usage,
)

__all__ = ["NAME", "read", "sniff"]

NAME = "codex"

_LINE_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
_ROLES = {
    "user": Role.USER,
    "assistant": Role.ASSISTANT,
    "developer": Role.DEVELOPER,
    "system": Role.SYSTEM,
}
_CALLS = {
    "function_call": "function",
    "custom_tool_call": "custom",
    "local_shell_call": "local_shell",
    "web_search_call": "web_search",
}
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output"})
#: Items Codex records that are not model context (undo snapshots).
_IGNORED_ITEMS = frozenset({"ghost_snapshot"})
#: Remote-compaction items: an encrypted summary the model reads back.
_COMPACTION_ITEMS = frozenset({"compaction", "compaction_summary"})


# ------------------------------------------------------------------------------ sniff


def sniff(source: Source) -> int:
    if source.kind != "jsonl":
        return 0
    head = source.head_lines(50)
    hits = sum(1 for ln in head if _kind(ln) in _LINE_TYPES and isinstance(ln.get("payload"), dict))
    if not hits or hits * 2 < len(head):
        return 0
    return 95 if head[0].get("type") == "session_meta" else 85


# ------------------------------------------------------------------------------ parts


def _kind(obj: dict[str, Any]) -> str:
    """``obj["type"]`` when it is a string, else "" (raw values may be any JSON)."""
    kind = obj.get("type")
    return kind if isinstance(kind, str) else ""


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_TEXT_ITEMS = ("input_text", "output_text", "text")  # (a tuple: "type" may be any JSON)


def _part(item: Any) -> Part:
    if isinstance(item, dict):
        kind = item.get("type")
        if kind in _TEXT_ITEMS and isinstance(item.get("text"), str):
            return text_part(item["text"])
        if kind == "input_image" and isinstance(item.get("image_url"), str):
            return media_from_url(item["image_url"])
        return TextPart(orjson.dumps(item).decode(), extra={"block_type": kind})
    return TextPart(item if isinstance(item, str) else orjson.dumps(item).decode())


def _text(parts: list[Part] | tuple[Part, ...]) -> str:
    return "\n".join([p.text for p in parts if isinstance(p, TextPart)])


def _item_text(item: Any) -> str | None:
    """The text ``_part(item)`` would hold (None for media), without building the part."""
    if isinstance(item, dict):
        kind = item.get("type")
        text = item.get("text")
        if kind in _TEXT_ITEMS and isinstance(text, str):
            return text
        if kind == "input_image" and isinstance(item.get("image_url"), str):
            return None
        return orjson.dumps(item).decode()
    return item if isinstance(item, str) else orjson.dumps(item).decode()


def _output_parts(output: Any) -> tuple[tuple[Part, ...], bool]:
    """A call output → (parts, is_error). ``output`` is a string, a list of content
    items, or ``{content, success}`` (``content`` a string or items)."""
    if output is None:
        return (), False
    if isinstance(output, str):
        return (text_part(output),), False
    if isinstance(output, list):
        return tuple(_part(i) for i in output), False
    if isinstance(output, dict):
        inner = output.get("content", output.get("content_items"))
        parts, _ = _output_parts(inner)
        return parts, output.get("success") is False
    return (TextPart(orjson.dumps(output).decode()),), False


# ---------------------------------------------------------------------------- builder


@dataclass(slots=True)
class _Open:
    """An assistant message being assembled from consecutive model outputs."""

    parts: list[Part] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    encrypted: list[str] = field(default_factory=list)
    lines: list[int] = field(default_factory=list)
    timestamp: Any = None


class _Builder:
    """Turns response items, in file order, into the message list."""

    def __init__(self, source: Source, unknown: Counter[str]) -> None:
        self.source = source
        self.messages: list[Message] = []
        self.open: _Open | None = None
        self.names: dict[str, str] = {}  # call_id → tool name
        self.unknown = unknown
        #: Arguments rendered here by orjson (valid JSON): ``id(s) -> s`` for finish().
        self.trusted: dict[int, str] = {}

    def last_index(self) -> int | None:
        """Index the last message so far has (or will have, for the open one)."""
        i = len(self.messages) - 1 + (self.open is not None)
        return i if i >= 0 else None

    def flush(self) -> None:
        o, self.open = self.open, None
        if o is None:
            return
        extra: dict[str, Any] = {"lines": o.lines}
        if o.timestamp is not None:
            extra["timestamp"] = o.timestamp
        if o.encrypted:
            extra["encrypted_reasoning"] = tuple(o.encrypted)
        reasoning = "\n\n".join([t for t in o.reasoning if t]) or None
        # Messages are only ever appended or cut from the end, so a message's index is
        # the list's length when it joins.
        index = len(self.messages)
        if o.parts or o.calls:
            parts = tuple(o.parts)
            meta = new_meta(False, False, None, None, index, False, False, False, None)
            msg = new_message(
                Role.ASSISTANT, parts, tuple(o.calls), None, None, reasoning, meta, extra, EMPTY
            )
        else:  # reasoning that no output followed
            thinking = ThinkingPart(reasoning or "", redacted=reasoning is None)
            meta = new_meta(False, False, None, None, index, False, False, False, None)
            msg = new_message(Role.ASSISTANT, (thinking,), (), None, None, None, meta, extra, EMPTY)
        self.messages.append(msg)

    def _opened(self, n: int, ts: Any) -> _Open:
        if self.open is None:
            self.open = _Open(timestamp=ts)
        self.open.lines.append(n)
        return self.open

    def _bad(self, n: int, problem: str, jp: str, expected: str) -> LoadError:
        return LoadError(self.source.path, problem, line=n, json_path=jp, expected=expected)

    def add_message(
        self,
        role: Role,
        parts: tuple[Part, ...],
        n: int,
        ts: Any,
        meta: MessageMeta | None = None,
        **extra: Any,
    ) -> None:
        if role is Role.ASSISTANT:
            o = self.open
            if o is not None and (o.parts or o.calls):
                self.flush()
            self._opened(n, ts).parts.extend(parts)
            return
        self.flush()
        index = len(self.messages)
        if meta is None:
            meta = plain_meta(role, _text(parts), index)
        base = {"line": n, "timestamp": ts, **extra}
        self.messages.append(
            new_message(
                role,
                parts,
                (),
                None,
                None,
                None,
                meta,
                {k: v for k, v in base.items() if v is not None},
                EMPTY,
            )
        )

    def item(self, p: dict[str, Any], n: int, ts: Any, jp: str = "$.payload") -> None:
        kind = _kind(p)
        if not kind:
            raise self._bad(n, "response item has no type", f"{jp}.type", "a string type")
        if kind == "message":
            role_name = p.get("role")
            role = _ROLES.get(role_name) if isinstance(role_name, str) else None
            if role is None:
                raise self._bad(
                    n,
                    f"unknown role {clip(p.get('role'))}",
                    f"{jp}.role",
                    "user, assistant or developer",
                )
            content = p.get("content")
            if isinstance(content, str):
                content = [{"type": "input_text", "text": content}]
            if not isinstance(content, list):
                raise self._bad(
                    n,
                    f"message content is a JSON {json_type(content)}",
                    f"{jp}.content",
                    "a list of content items",
                )
            self.add_message(role, tuple([_part(c) for c in content]), n, ts)
        elif kind == "reasoning":
            texts = [
                s["text"]
                for key in ("summary", "content")
                if isinstance(p.get(key), list)
                for s in p[key]
                if isinstance(s, dict) and isinstance(s.get("text"), str)
            ]
            o = self.open
            if o is not None and (o.parts or o.calls):
                self.flush()
            o = self._opened(n, ts)
            o.reasoning.extend(texts)
            if isinstance(p.get("encrypted_content"), str):
                o.encrypted.append(p["encrypted_content"])
        elif kind in _CALLS:
            self._call(kind, p, n, ts, jp)
        elif kind in _OUTPUTS:
            call_id = p.get("call_id")
            if not isinstance(call_id, str):
                raise self._bad(n, f"{kind} without call_id", f"{jp}.call_id", "a string call_id")
            self.flush()
            parts, is_error = _output_parts(p.get("output"))
            meta = new_meta(
                False, False, None, None, len(self.messages), False, is_error, False, None
            )
            extra = {"line": n, "timestamp": ts} if ts is not None else {"line": n}
            self.messages.append(
                new_message(
                    Role.TOOL,
                    parts,
                    (),
                    call_id,
                    self.names.get(call_id),
                    None,
                    meta,
                    extra,
                    EMPTY,
                )
            )
        elif kind in _COMPACTION_ITEMS:
            self.flush()
            extra = {"line": n, "type": kind, "encrypted_content": p.get("encrypted_content")}
            self.messages.append(
                Message(role=Role.USER, meta=MessageMeta(is_summary=True), extra=extra)
            )
        elif kind not in _IGNORED_ITEMS:
            self.unknown[str(kind)] += 1

    def _call(self, kind: str, p: dict[str, Any], n: int, ts: Any, jp: str) -> None:
        call_id = p.get("call_id") or p.get("id")
        if kind in ("function_call", "custom_tool_call"):
            name = p.get("name")
            args = p.get("arguments" if kind == "function_call" else "input", "")
            if not isinstance(name, str) or not isinstance(call_id, str):
                raise self._bad(n, f"{kind} without name or call_id", jp, "string name and call_id")
            if not isinstance(args, str):
                args = orjson.dumps(args).decode()
                self.trusted[id(args)] = args  # orjson's own output: valid JSON
        else:
            name = _CALLS[kind]
            detail = p.get("action", {})
            args = orjson.dumps(detail if detail is not None else {}).decode()
            self.trusted[id(args)] = args
            if not isinstance(call_id, str):
                call_id = f"{name}@line{n}"  # web searches carry no call id
        self.names[call_id] = name
        extra = {"status": p["status"]} if "status" in p else EMPTY
        self._opened(n, ts).calls.append(tool_call(call_id, name, args, _CALLS[kind], extra))


# ------------------------------------------------------------------------------- read


@dataclass(slots=True)
class _Compaction:
    """One compaction: a ``compacted`` line and/or its ``context_compacted`` event."""

    pre_tokens: int | None
    #: The summary message's index, else the index the next message will have.
    message_index: int
    lines: list[int] = field(default_factory=list)
    summary_index: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    #: The message count once the compaction's messages (summary, replayed items) joined.
    end: int = 0


def _event_texts(lines: list[JsonLine]) -> Counter[tuple[str, str]]:
    """(role, text) of every response-item message: what duplicate events are paid with."""
    texts: Counter[tuple[str, str]] = Counter()
    for jl in lines:
        raw = jl.value
        p = raw.get("payload")
        if raw.get("type") != "response_item" or not isinstance(p, dict):
            continue
        content = p.get("content")
        if p.get("type") != "message" or not isinstance(content, (list, str)):
            continue
        if isinstance(content, str):
            text = content.strip()
        else:
            found = [t for t in (_item_text(c) for c in content) if t is not None]
            text = "\n".join(found).strip()
        if text:
            texts[(str(p.get("role")), text)] += 1
    return texts


class _Reader:
    def __init__(self, source: Source, options: LoadOptions) -> None:
        self.source = source
        self.options = options
        self.unknown: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.b = _Builder(source, self.unknown)
        self.usage: list[Usage] = []
        self.events: list[_Compaction] = []
        self.session_id: str | None = None
        self.system_prompt: str | None = None
        self.model: str | None = None
        self.window: int | None = None
        self.extra: dict[str, Any] = {}
        self.last_prompt: int | None = None
        self.last_total: Any = None
        #: The previous compaction marker ("compacted" | "event", event index) until an item.
        self.marker: tuple[str, int] | None = None
        self.rolled_back = 0
        self.bad: list[tuple[int, str]] = []
        self.event_texts: Counter[tuple[str, str]] = Counter()

    def run(self, lines: list[JsonLine]) -> Transcript:
        self.event_texts = _event_texts(lines)
        for jl in lines:
            try:
                self.line(jl.number, jl.value)
            except LoadError as exc:
                if not self.options.lenient:
                    raise
                self.bad.append((jl.number, exc.problem))
        self.b.flush()
        return self.transcript()

    def _bad(self, n: int, problem: str, jp: str, expected: str) -> LoadError:
        return LoadError(self.source.path, problem, line=n, json_path=jp, expected=expected)

    def line(self, n: int, raw: dict[str, Any]) -> None:
        kind = raw.get("type")
        if not isinstance(kind, str):
            raise self._bad(n, "line has no type", "$.type", "a rollout line with type and payload")
        if kind not in _LINE_TYPES:
            self.unknown[kind] += 1
            return
        p = raw.get("payload")
        if not isinstance(p, dict):
            raise self._bad(n, f"payload is a JSON {json_type(p)}", "$.payload", "an object")
        ts = raw.get("timestamp")
        if kind == "response_item":
            self.marker = None
            if _kind(p) in _IGNORED_ITEMS:
                self.skipped[_kind(p)] += 1
            self.b.item(p, n, ts)
        elif kind == "event_msg":
            self.event(p, n, ts)
        elif kind == "compacted":
            self.compaction("compacted", p, n, ts)
        elif kind == "session_meta":
            self.session_meta(p)
        elif kind == "turn_context":
            if isinstance(p.get("model"), str):
                self.model = p["model"]
            if isinstance(p.get("effort"), str):
                self.extra["effort"] = p["effort"]

    def session_meta(self, p: dict[str, Any]) -> None:
        if self.session_id is not None:
            self.skipped["session_meta (repeated)"] += 1
            return
        if isinstance(p.get("id"), str):
            self.session_id = p["id"]
        instructions = p.get("instructions")
        base = p.get("base_instructions")
        if not isinstance(instructions, str) and isinstance(base, dict):
            instructions = base.get("text")
        if isinstance(instructions, str) and instructions:
            self.system_prompt = instructions
        for key in ("cwd", "cli_version", "model_provider", "git"):
            if p.get(key) is not None:
                self.extra[key] = p[key]

    def event(self, p: dict[str, Any], n: int, ts: Any) -> None:
        kind = p.get("type")
        if kind in ("user_message", "agent_message"):
            text = p.get("message")
            if not isinstance(text, str):
                return
            role = Role.USER if kind == "user_message" else Role.ASSISTANT
            key = (role.value, text.strip())
            if self.event_texts[key] > 0:
                self.event_texts[key] -= 1  # the response item carries it
                return
            parts: list[Part] = [TextPart(text)] if text else []
            images = p.get("images") if role is Role.USER else None
            if isinstance(images, list):
                parts += [media_from_url(u) for u in images if isinstance(u, str)]
            self.marker = None
            self.b.add_message(role, tuple(parts), n, ts, from_event=True)
        elif kind == "token_count":
            self.token_count(p)
        elif kind == "task_started":
            if isinstance(p.get("model_context_window"), int):
                self.window = p["model_context_window"]
        elif kind == "context_compacted":
            self.compaction("event", p, n, ts)
        elif kind == "thread_rolled_back":
            self.rollback(_int(p.get("num_turns")))
        else:
            self.skipped[f"event_msg/{kind}"] += 1

    def token_count(self, p: dict[str, Any]) -> None:
        info = p.get("info")
        if info is None and "input_tokens" in p:  # early rollouts: the usage itself
            info = {"last_token_usage": p}
        if not isinstance(info, dict):
            return
        window = info.get("model_context_window")
        if isinstance(window, int) and not isinstance(window, bool):
            self.window = window
        last = info.get("last_token_usage")
        if not isinstance(last, dict):
            return
        total = info.get("total_token_usage")
        if total is not None and total == self.last_total:
            return  # the same measurement reported again
        self.last_total = total
        prompt = _int(last.get("input_tokens"))
        cached = _int(last.get("cached_input_tokens"))
        self.usage.append(
            Usage(
                input_tokens=max(prompt - cached, 0),
                cache_read_tokens=cached,
                output_tokens=_int(last.get("output_tokens")),
                reasoning_tokens=_int(last.get("reasoning_output_tokens")),
                message_index=self.b.last_index(),
                context_window=self.window,
            )
        )
        self.last_prompt = prompt

    def compaction(self, kind: str, p: dict[str, Any], n: int, ts: Any) -> None:
        self.b.flush()
        if self.marker is not None and self.marker[0] != kind:
            ev = self.events[self.marker[1]]  # the other half of the same compaction
            self.marker = None
        else:
            ev = _Compaction(pre_tokens=self.last_prompt, message_index=len(self.b.messages))
            self.events.append(ev)
            self.marker = (kind, len(self.events) - 1)
        ev.lines.append(n)
        if kind != "compacted":
            return
        self.compacted(ev, p, n, ts)
        ev.end = len(self.b.messages)

    def compacted(self, ev: _Compaction, p: dict[str, Any], n: int, ts: Any) -> None:
        """The ``compacted`` line's messages: the replayed history and/or the summary."""
        # Nothing joins the list between the two halves, so this is ev.message_index.
        at = len(self.b.messages)
        summary = p.get("message")
        summary = summary if isinstance(summary, str) and summary.strip() else None
        history = p.get("replacement_history")
        if isinstance(history, list):
            ev.extra["replacement_history"] = history
            found = self.replay(history, summary, n, ts)
            ev.message_index = at
            if found is not None:
                ev.summary_index = found
                return
        if summary is None:
            return
        meta = replace(
            meta_for_text(Role.USER, summary),
            is_summary=True,
            is_injected=False,
            injected_kind=None,
        )
        index = len(self.b.messages)
        self.b.add_message(Role.USER, (TextPart(summary),), n, ts, meta=meta, compacted=True)
        if ev.summary_index is None and index == at:
            ev.message_index = at
        ev.summary_index = index

    def replay(self, history: list[Any], summary: str | None, n: int, ts: Any) -> int | None:
        """Add the ``replacement_history`` items (what Codex resumes from) as messages.

        They are the live context's first messages, each flagged ``extra["replayed"]``;
        the one holding ``summary`` (Codex prefixes it) becomes the summary, else a
        replayed ``compaction`` item (a remote compaction's encrypted summary) is. Returns
        its index, or None when there is none. A bad item adds nothing (it raises).
        """
        b = self.b
        at = len(b.messages)
        try:
            for k, item in enumerate(history):
                if not isinstance(item, dict):
                    jp = f"$.payload.replacement_history[{k}]"
                    raise self._bad(n, f"item is a JSON {json_type(item)}", jp, "an object")
                b.item(item, n, ts, f"$.payload.replacement_history[{k}]")
            b.flush()
        except LoadError:
            del b.messages[at:]
            b.open = None
            raise
        found = None
        for i in range(at, len(b.messages)):
            m = b.messages[i]
            b.messages[i] = replace(m, extra={**m.extra, "replayed": True})
            if (
                summary is not None
                and m.role is Role.USER
                and m.text.strip().endswith(summary.strip())
            ):
                found = i
        if found is not None:
            m = b.messages[found]
            meta = replace(m.meta, is_summary=True, is_injected=False, injected_kind=None)
            b.messages[found] = replace(m, meta=meta)
            return found
        # A remote compaction replays its encrypted summary item (already a summary).
        return next(
            (i for i in range(len(b.messages) - 1, at - 1, -1) if b.messages[i].meta.is_summary),
            None,
        )

    def rollback(self, turns: int) -> None:
        """Drop the last ``turns`` user turns, as Codex does on ``thread_rolled_back``.

        The cut never reaches back past the last compaction point, so the history a
        compaction summarised, and its summary, stay in the list."""
        self.b.flush()
        msgs = self.b.messages
        floor = max((max(ev.message_index, ev.end) for ev in self.events), default=0)
        asks = [i for i in range(floor, len(msgs)) if msgs[i].is_real_user]
        if turns <= 0 or not asks:
            return
        cut = asks[-min(turns, len(asks))]
        self.rolled_back += len(msgs) - cut
        del msgs[cut:]
        self.usage = [
            u
            if u.message_index is None or u.message_index < cut
            else replace(u, message_index=None)
            for u in self.usage
        ]

    def transcript(self) -> Transcript:
        msgs, notes = finish(self.b.messages, valid_args=self.b.trusted)
        parse_bad = self.source.doc.bad_lines if self.source.kind == "jsonl" else []
        warnings = list(bad_line_warnings(JsonlResult(bad_lines=sorted([*parse_bad, *self.bad]))))
        if self.unknown:
            kinds = ", ".join(sorted(self.unknown))
            warnings.append(
                f"skipped {sum(self.unknown.values())} item(s) of unknown type: {kinds}"
            )
        if self.rolled_back:
            warnings.append(f"thread rolled back: {self.rolled_back} message(s) dropped")
        if not msgs:
            warnings.append("no messages in the rollout")
        warnings += notes
        events = tuple(
            CompactionEvent(
                message_index=min(ev.message_index, len(msgs)),
                trigger=Trigger.UNKNOWN,
                pre_tokens=ev.pre_tokens,
                summary_index=ev.summary_index,
                extra={"lines": ev.lines, **ev.extra},
            )
            for ev in self.events
        )
        extra = dict(self.extra)
        if self.skipped:
            extra["skipped_lines"] = dict(self.skipped)
        return Transcript(
            messages=msgs,
            format=NAME,
            system_prompt=self.system_prompt,
            model=self.model,
            context_window=self.window,
            path=str(self.source.path),
            session_id=self.session_id,
            compactions=events,
            usage=tuple(self.usage),
            extra=extra or EMPTY,
            warnings=tuple(warnings),
        )


def read(source: Source, options: LoadOptions) -> Transcript:
    if source.kind == "jsonl":
        lines = list(source.doc.lines)
    elif source.kind == "json" and isinstance(source.doc, dict):
        lines = [JsonLine(1, source.doc)]
    else:
        raise LoadError(source.path, "not JSON lines", expected="a Codex rollout (.jsonl)")
    return _Reader(source, options).run(lines)
