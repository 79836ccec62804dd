"""Claude Code session JSONL (``~/.claude/projects/<cwd>/<sessionId>.jsonl``). Read-only.

Details: docs/formats.md (`tinyjuice.formats.claude_code`).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import orjson

from tinyjuice.formats._io import (
    JsonLine,
    JsonlResult,
    LoadError,
    LoadOptions,
    Source,
    bad_line_warnings,
    json_type,
)
from tinyjuice.formats._messages import (
    FinishState,
    base64_size,
    finish,
    finish_from,
    media_from_url,
    new_message,
    new_meta,
    text_flags,
    text_part,
    thinking_part,
    tool_call,
)
from tinyjuice.model import (
    EMPTY,
    CompactionEvent,
    MediaPart,
    Message,
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

NAME = "claude-code"

_MESSAGE_TYPES = frozenset({"user", "assistant"})
#: Line types that are known and carry nothing the transcript models.
_SKIP_TYPES = frozenset(
    {"file-history-snapshot", "queue-operation", "attachment", "progress", "ai-title"}
)
_KNOWN_TYPES = _MESSAGE_TYPES | _SKIP_TYPES | {"system", "summary"}
_SYNTHETIC_MODEL = "<synthetic>"
#: Type given to a malformed line skipped in lenient mode (kept only as a tree node).
_INVALID = "\x00invalid"
_TRIGGERS = {"manual": Trigger.MANUAL, "auto": Trigger.AUTO}


# ------------------------------------------------------------------------------ sniff


def sniff(source: Source) -> int:
    if source.kind != "jsonl":
        return 0
    head = source.head_lines(100)
    typed = [ln for ln in head if isinstance(ln.get("type"), str)]
    if not typed or any("payload" in ln for ln in typed):
        return 0  # Codex rollouts also have "type", always beside "payload"
    if any(
        ln["type"] in _MESSAGE_TYPES and isinstance(ln.get("message"), dict) and "uuid" in ln
        for ln in typed
    ):
        return 95
    if any(ln["type"] in _KNOWN_TYPES and ("sessionId" in ln or "leafUuid" in ln) for ln in typed):
        return 60  # only titles / snapshots so far, but Claude Code's own fields
    return 0


# ------------------------------------------------------------------------------ lines


@dataclass(slots=True)
class _Line:
    number: int
    raw: dict[str, Any]
    type: str
    uuid: str | None
    #: ``parentUuid``, else ``logicalParentUuid`` (a compaction boundary).
    parent: str | None
    sidechain: bool
    #: Whether the line says who its parent is (``parentUuid``/``logicalParentUuid``
    #: present, null included); lines without either key follow the previous line.
    parent_known: bool = True
    #: Validated content blocks of user/assistant lines (a string became one text block).
    blocks: tuple[dict[str, Any], ...] = ()
    #: Assistant merge key: (message.id, requestId).
    group: tuple[str, str] | None = None

    @property
    def is_message(self) -> bool:
        return self.type in _MESSAGE_TYPES

    @property
    def result_ids(self) -> tuple[str, ...]:
        if self.type != "user":
            return ()
        return tuple(b["tool_use_id"] for b in self.blocks if b.get("type") == "tool_result")


def _fail(source: Source, n: int, problem: str, json_path: str, expected: str) -> LoadError:
    return LoadError(source.path, problem, line=n, json_path=json_path, expected=expected)


def _blocks(source: Source, n: int, content: Any, role: str) -> tuple[dict[str, Any], ...]:
    if isinstance(content, str):
        return ({"type": "text", "text": content},)
    if not isinstance(content, list):
        raise _fail(
            source,
            n,
            f"{role} content is a JSON {json_type(content)}",
            "$.message.content",
            "a string or a list of content blocks",
        )
    for j, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if not isinstance(kind, str):
            raise _fail(
                source,
                n,
                "content block has no type",
                f"$.message.content[{j}]",
                "an object with a string 'type'",
            )
        if kind == "text" or kind == "thinking":
            if not isinstance(block.get(kind), str):
                raise _fail(
                    source,
                    n,
                    f"{kind} block without {kind!r}",
                    f"$.message.content[{j}]",
                    f"a string {kind!r}",
                )
        elif kind == "tool_use":
            if not (isinstance(block.get("id"), str) and isinstance(block.get("name"), str)):
                raise _fail(
                    source,
                    n,
                    "tool_use block without id or name",
                    f"$.message.content[{j}]",
                    "string id and name",
                )
        elif kind == "tool_result":
            if not isinstance(block.get("tool_use_id"), str):
                raise _fail(
                    source,
                    n,
                    "tool_result without tool_use_id",
                    f"$.message.content[{j}]",
                    "a string tool_use_id",
                )
            inner = block.get("content")
            if inner is not None and not isinstance(inner, (str, list)):
                raise _fail(
                    source,
                    n,
                    f"tool_result content is a JSON {json_type(inner)}",
                    f"$.message.content[{j}].content",
                    "a string or a list of blocks",
                )
    return tuple(content)


def _skeleton(n: int, raw: dict[str, Any], kind: str) -> _Line:
    """A line's place in the tree, before its content is looked at."""
    uuid = raw.get("uuid") if isinstance(raw.get("uuid"), str) else None
    parent = raw.get("parentUuid")
    if not isinstance(parent, str):
        logical = raw.get("logicalParentUuid")
        parent = logical if isinstance(logical, str) else None
    known = "parentUuid" in raw or "logicalParentUuid" in raw
    return _Line(n, raw, kind, uuid, parent, raw.get("isSidechain") is True, known)


def _link_unparented(lines: list[_Line]) -> int:
    """Chain lines that have a uuid but no parent key to the previous such line.

    Some exporters write ``uuid`` without ``parentUuid``: every line would be a root
    and only the last one a chain. File order is the order they were written in.
    Returns how many lines were linked.
    """
    linked = 0
    previous: dict[bool, str] = {}
    for line in lines:
        if line.uuid is None:
            continue
        if not line.parent_known and line.parent is None:
            line.parent = previous.get(line.sidechain)
            linked += line.parent is not None
        previous[line.sidechain] = line.uuid
    return linked


def _parse_line(source: Source, n: int, raw: dict[str, Any]) -> _Line:
    kind = raw.get("type")
    if not isinstance(kind, str):
        raise _fail(source, n, "line has no type", "$.type", "a Claude Code line with a 'type'")
    line = _skeleton(n, raw, kind)
    if kind not in _MESSAGE_TYPES:
        return line
    uuid = line.uuid
    if uuid is None:
        raise _fail(source, n, f"{kind} line has no uuid", "$.uuid", "a string uuid")
    message = raw.get("message")
    if not isinstance(message, dict):
        raise _fail(
            source,
            n,
            f"{kind} line has no message",
            "$.message",
            "a 'message' object with role and content",
        )
    line.blocks = _blocks(source, n, message.get("content"), kind)
    if kind == "assistant":
        mid = message.get("id")
        rid = raw.get("requestId")
        line.group = (
            (mid, rid if isinstance(rid, str) else "")
            if isinstance(mid, str)
            else (
                f"uuid:{uuid}",
                "",
            )
        )
    return line


# ------------------------------------------------------------------------------ parts


def _media(block: dict[str, Any]) -> MediaPart:
    src = block.get("source")
    if isinstance(src, dict):
        if src.get("type") == "base64" and isinstance(src.get("data"), str):
            return MediaPart(
                media_type=str(src.get("media_type") or "application/octet-stream"),
                byte_size=base64_size(src["data"]),
                source="base64",
                data=src["data"],
            )
        if src.get("type") == "url" and isinstance(src.get("url"), str):
            return media_from_url(src["url"])
    return MediaPart(
        media_type=f"application/x-claude-{block.get('type')}",
        byte_size=len(orjson.dumps(block)),
        source="placeholder",
        extra={"_raw": block},
    )


def _other(block: dict[str, Any]) -> TextPart:
    """A block the model does not name: kept as its JSON text, so it is counted."""
    return TextPart(orjson.dumps(block).decode(), extra={"block_type": block.get("type")})


def _content_part(block: dict[str, Any]) -> Part:
    kind = block.get("type")
    if kind == "text" and isinstance(block.get("text"), str):
        return TextPart(block["text"])
    if kind in ("image", "document"):
        return _media(block)
    return _other(block)


def _result_parts(content: Any) -> tuple[Part, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (text_part(content),)
    return tuple([_content_part(b) if isinstance(b, dict) else TextPart(str(b)) for b in content])


# --------------------------------------------------------------------------- messages


def _repeats(block: dict[str, Any], seen: list[dict[str, Any]]) -> bool:
    """Whether ``block`` serialises exactly like an earlier block of the turn.

    Dict equality is the cheap filter (the same JSON text means equal values); the
    exact test, key order included, runs only for an equal pair.
    """
    for earlier in seen:
        if earlier == block and orjson.dumps(earlier) == orjson.dumps(block):
            return True
    return False


def _assistant(lines: list[_Line], index: int, trusted: dict[int, str]) -> Message:
    parts: list[Part] = []
    calls: list[ToolCall] = []
    seen: list[dict[str, Any]] = []
    for line in lines:
        for block in line.blocks:
            if seen and _repeats(block, seen):
                continue  # older versions repeat earlier blocks on later lines
            seen.append(block)
            kind = block["type"]
            if kind == "text":
                parts.append(text_part(block["text"]))
            elif kind == "thinking":
                sig = block.get("signature")
                sig = sig if isinstance(sig, str) else None
                parts.append(thinking_part(block["thinking"], sig, False, EMPTY))
            elif kind == "redacted_thinking":
                parts.append(ThinkingPart("", redacted=True, extra={"data": block.get("data")}))
            elif kind in ("tool_use", "server_tool_use") and isinstance(block.get("id"), str):
                args = orjson.dumps(block.get("input", {})).decode()
                trusted[id(args)] = args  # orjson's own output: valid JSON
                calls.append(
                    tool_call(
                        block["id"],
                        str(block.get("name", "")),
                        args,
                        "function" if kind == "tool_use" else kind,
                        EMPTY,
                    )
                )
            elif kind in ("image", "document"):
                parts.append(_media(block))
            else:
                parts.append(_other(block))
    first, last = lines[0], lines[-1]
    message = last.raw["message"]
    extra = {
        "timestamp": first.raw.get("timestamp"),
        "model": message.get("model"),
        "message_id": message.get("id"),
        "request_id": last.raw.get("requestId"),
        "stop_reason": message.get("stop_reason"),
        "usage": message.get("usage"),
        "lines": [ln.number for ln in lines],
    }
    meta = new_meta(False, False, None, first.uuid, index, False, False, first.sidechain, None)
    return new_message(
        Role.ASSISTANT,
        tuple(parts),
        tuple(calls),
        None,
        None,
        None,
        meta,
        {k: v for k, v in extra.items() if v is not None},
        EMPTY,
    )


def _user(line: _Line, tool_names: dict[str, str], start: int) -> list[Message]:
    """One user line → its messages: runs of tool results and of other blocks, in order.

    ``start`` is the index the first of them will have.
    """
    raw = line.raw
    base_extra: dict[str, Any] = {"line": line.number}
    if isinstance(raw.get("timestamp"), str):
        base_extra["timestamp"] = raw["timestamp"]
    out: list[Message] = []
    pending: list[Part] = []
    tool_use_result = raw.get("toolUseResult", ...)

    def flush_user() -> None:
        if not pending:
            return
        text = "\n".join(p.text for p in pending if isinstance(p, TextPart))
        index = start + len(out)
        if raw.get("isCompactSummary") is True:
            is_summary, kind = True, None
        else:
            is_summary, kind = text_flags(Role.USER, text)
            if raw.get("isMeta") is True and kind is None:
                kind = "meta"
        meta = new_meta(
            is_summary, kind is not None, kind, line.uuid, index, False, False, line.sidechain, None
        )
        out.append(
            new_message(Role.USER, tuple(pending), (), None, None, None, meta, base_extra, EMPTY)
        )
        pending.clear()

    for block in line.blocks:
        if block["type"] != "tool_result":
            pending.append(_content_part(block))
            continue
        flush_user()
        extra = dict(base_extra)
        if tool_use_result is not ...:
            extra["toolUseResult"] = tool_use_result
            tool_use_result = ...
        call_id = block["tool_use_id"]
        meta = new_meta(
            False,
            False,
            None,
            line.uuid,
            start + len(out),
            False,
            block.get("is_error") is True,
            line.sidechain,
            None,
        )
        out.append(
            new_message(
                Role.TOOL,
                _result_parts(block.get("content")),
                (),
                call_id,
                tool_names.get(call_id),
                None,
                meta,
                extra,
                EMPTY,
            )
        )
    flush_user()
    return out


# ------------------------------------------------------------------------------- tree


class _Tree:
    """The uuid tree of one file's lines (main and sidechain alike)."""

    def __init__(self, lines: list[_Line]) -> None:
        self.nodes: dict[str, _Line] = {}
        self.duplicates = 0
        for line in lines:
            if line.uuid is None:
                continue
            if line.uuid in self.nodes:
                self.duplicates += 1
                continue
            self.nodes[line.uuid] = line
        self.groups: dict[tuple[str, str], list[_Line]] = {}
        for line in self.nodes.values():
            if line.group is not None:
                self.groups.setdefault(line.group, []).append(line)
        self._anchor: dict[str, str | None] = {}
        self._root: dict[str, str] = {}

    def ancestors(self, line: _Line) -> Iterator[_Line]:
        """``line`` and its ancestors, nearest first; stops at a missing parent or a cycle."""
        seen: set[str] = set()
        cur: _Line | None = line
        while cur is not None and cur.uuid not in seen:
            seen.add(cur.uuid or "")
            yield cur
            cur = self.nodes.get(cur.parent) if cur.parent else None

    def sidechain_root(self, line: _Line) -> str:
        """The uuid of the first line of the sidechain ``line`` is on (memoised)."""
        walked: list[str] = []
        root = line.uuid or ""
        for node in self.ancestors(line):
            if not node.sidechain:
                break
            if node.uuid in self._root:
                root = self._root[node.uuid or ""]
                break
            walked.append(node.uuid or "")
            root = node.uuid or ""
        for uuid in walked:
            self._root[uuid] = root
        return root

    def anchor(self, line: _Line, on_chain: set[str]) -> str | None:
        """The nearest ancestor of an off-chain line that is on the chain (memoised)."""
        walked: list[str] = []
        found: str | None = None
        for node in self.ancestors(line):
            uuid = node.uuid or ""
            if uuid in on_chain:
                found = uuid
                break
            if uuid in self._anchor:
                found = self._anchor[uuid]
                break
            walked.append(uuid)
        for uuid in walked:
            self._anchor[uuid] = found
        return found


@dataclass(slots=True)
class _Chain:
    #: Message and boundary lines, root first, each merged turn at its first line.
    lines: list[_Line]
    #: Every uuid on the path from the root to the leaf (including skipped lines).
    uuids: set[str]
    warnings: list[str]
    abandoned: int
    #: The uuid of the path's last line (None: no chain).
    leaf: str | None = None


def _main_chain(tree: _Tree, side: bool = False) -> _Chain:
    """The chain of the main lines (``side``: of the sidechain lines, a subagent file)."""
    main = [ln for ln in tree.nodes.values() if ln.sidechain is side]
    parents = {ln.parent for ln in main if ln.parent}
    leaf = next((ln for ln in reversed(main) if ln.uuid not in parents), None)
    warnings: list[str] = []
    if leaf is None:
        return _Chain([], set(), warnings, 0)
    path = list(tree.ancestors(leaf))
    root = path[-1]
    if root.parent is not None:
        why = "a cycle" if root.parent in tree.nodes else "a parent not in this file"
        warnings.append(
            f"main chain starts at line {root.number}: its parent is {why}; "
            "earlier history is not loaded"
        )
    path.reverse()
    on_chain = {ln.uuid or "" for ln in path}

    # Collapse merged assistant turns to their first chain line; keep boundaries.
    seq: list[_Line] = []
    emitted: set[tuple[str, str]] = set()
    for line in path:
        if line.sidechain is not side:
            continue
        if line.group is not None:
            if line.group in emitted:
                continue
            emitted.add(line.group)
            seq.append(line)
        elif line.type == "user" or _is_boundary(line):
            seq.append(line)

    rescued = _rescue_parallel_results(tree, seq, on_chain, emitted, side)
    used = on_chain | {ln.uuid or "" for ln in rescued}
    off = [
        ln
        for ln in main
        if ln.is_message and (ln.uuid or "") not in used and ln.group not in emitted
    ]
    if off:
        forks = {tree.anchor(ln, on_chain) for ln in off}
        warnings.append(
            f"{len(off)} message line(s) on {len(forks)} abandoned branch(es) (rewinds) "
            "are not in the main chain"
        )
    return _Chain(seq, on_chain, warnings, len(off), leaf.uuid)


def _rescue_parallel_results(
    tree: _Tree,
    seq: list[_Line],
    on_chain: set[str],
    emitted: set[tuple[str, str]],
    side: bool = False,
) -> list[_Line]:
    """Put back results of an on-chain turn's calls that sit on a sibling branch.

    Claude Code parents each parallel tool result on the block line of its own call,
    so all but one result are off the leaf's path. A result is put back when it
    answers a call of an on-chain turn that the chain itself does not answer (the
    newest such line per call); it goes among that turn's results in file order.
    ``seq`` is updated in place; returns the lines put back.
    """
    answered = {i for ln in seq for i in ln.result_ids}
    owner: dict[str, tuple[str, str]] = {}
    for key in emitted:
        for line in tree.groups.get(key, ()):
            for block in line.blocks:
                if block["type"] == "tool_use" and block["id"] not in answered:
                    owner[block["id"]] = key
    if not owner:
        return []
    by_call: dict[str, _Line] = {}
    for line in tree.nodes.values():
        if line.sidechain is side and line.type == "user" and (line.uuid or "") not in on_chain:
            for call_id in line.result_ids:
                if call_id in owner:
                    by_call[call_id] = line
    found: dict[tuple[str, str], dict[str, _Line]] = {}
    for call_id, line in by_call.items():
        found.setdefault(owner[call_id], {})[line.uuid or ""] = line
    out: list[_Line] = []
    i = 0
    while i < len(seq):
        line = seq[i]
        out.append(line)
        i += 1
        extra = found.get(line.group) if line.group is not None else None
        if extra:
            run: list[_Line] = []
            while i < len(seq) and seq[i].type == "user" and _only_results(seq[i]):
                run.append(seq[i])
                i += 1
            out.extend(sorted([*run, *extra.values()], key=lambda ln: ln.number))
    seq[:] = out
    return [ln for extra in found.values() for ln in extra.values()]


def _only_results(line: _Line) -> bool:
    return bool(line.blocks) and all(b["type"] == "tool_result" for b in line.blocks)


def _is_boundary(line: _Line) -> bool:
    return line.type == "system" and line.raw.get("subtype") == "compact_boundary"


# ------------------------------------------------------------------------------- read


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _usage(message: Message, lines: list[_Line], index: int) -> Usage | None:
    raw = lines[-1].raw["message"].get("usage")
    if not isinstance(raw, dict) or message.extra.get("model") == _SYNTHETIC_MODEL:
        return None
    return Usage(
        input_tokens=_int(raw.get("input_tokens")),
        cache_read_tokens=_int(raw.get("cache_read_input_tokens")),
        cache_write_tokens=_int(raw.get("cache_creation_input_tokens")),
        output_tokens=_int(raw.get("output_tokens")),
        message_index=index,
    )


def _boundary_event(line: _Line, index: int) -> CompactionEvent:
    meta = line.raw.get("compactMetadata")
    meta = meta if isinstance(meta, dict) else {}
    pre = meta.get("preTokens")
    extra: dict[str, Any] = {"boundary": line.raw, "line": line.number}
    if "preservedSegment" in meta:
        extra["preserved_segment"] = meta["preservedSegment"]
    return CompactionEvent(
        message_index=index,
        trigger=_TRIGGERS.get(str(meta.get("trigger")), Trigger.UNKNOWN),
        pre_tokens=pre if isinstance(pre, int) and not isinstance(pre, bool) else None,
        source_id=line.uuid,
        extra=extra,
    )


def _tool_names(tree: _Tree) -> dict[str, str]:
    return {
        b["id"]: b["name"]
        for ln in tree.nodes.values()
        for b in ln.blocks
        if b["type"] == "tool_use"
    }


def _convert(
    seq: list[_Line], tree: _Tree, names: dict[str, str], trusted: dict[int, str]
) -> tuple[list[Message], list[Usage], list[CompactionEvent]]:
    """The messages of ``seq`` (each with its index in the list), usage and boundaries."""
    messages: list[Message] = []
    usage: list[Usage] = []
    events: list[CompactionEvent] = []
    for line in seq:
        if _is_boundary(line):
            events.append(_boundary_event(line, len(messages)))
        elif line.group is not None:
            group = tree.groups[line.group]
            msg = _assistant(group, len(messages), trusted)
            u = _usage(msg, group, len(messages))
            if u is not None:
                usage.append(u)
            messages.append(msg)
        else:
            messages.extend(_user(line, names, len(messages)))
    # A boundary's summary is the first message after it when that is a compact summary.
    linked = []
    for ev in events:
        i = ev.message_index
        is_summary = i < len(messages) and messages[i].meta.is_summary
        linked.append(replace(ev, summary_index=i) if is_summary else ev)
    return messages, usage, linked


def _sidechains(
    tree: _Tree, names: dict[str, str]
) -> tuple[dict[str, tuple[Message, ...]], list[str]]:
    by_key: dict[str, list[_Line]] = {}
    for line in tree.nodes.values():
        if not (line.sidechain and line.is_message):
            continue
        agent = line.raw.get("agentId")
        key = agent if isinstance(agent, str) and agent else tree.sidechain_root(line)
        by_key.setdefault(key, []).append(line)
    out: dict[str, tuple[Message, ...]] = {}
    warnings: list[str] = []
    for key, lines in by_key.items():
        seq: list[_Line] = []
        emitted: set[tuple[str, str]] = set()
        for line in lines:
            if line.group is not None:
                if line.group in emitted:
                    continue
                emitted.add(line.group)
            seq.append(line)
        trusted: dict[int, str] = {}
        messages, _, _ = _convert(seq, tree, names, trusted)
        out[key], notes = finish(messages, valid_args=trusted)
        warnings += [f"sidechain {key}: {w}" for w in notes]
    return out, warnings


def _conversation_chain(tree: _Tree) -> tuple[_Chain, bool]:
    """The main chain, or for a subagent file (every message line a sidechain) the
    subagent's own chain; and whether it is a subagent's."""
    chain = _main_chain(tree)
    subagent = not any(ln.is_message for ln in chain.lines) and any(
        ln.sidechain and ln.is_message for ln in tree.nodes.values()
    )
    return (_main_chain(tree, side=True), True) if subagent else (chain, False)


def _agent_id(chain: _Chain) -> str | bool:
    """A subagent chain's ``agentId`` (True when its lines do not record one)."""
    agent = next((ln.raw.get("agentId") for ln in chain.lines if ln.raw.get("agentId")), None)
    return agent if isinstance(agent, str) else True


def _lines_of(source: Source) -> list[JsonLine]:
    if source.kind == "jsonl":
        return list(source.doc.lines)
    if source.kind == "json" and isinstance(source.doc, dict):
        return [JsonLine(1, source.doc)]
    raise LoadError(source.path, "not JSON lines", expected="a Claude Code session (.jsonl)")


@dataclass(slots=True)
class _State:
    """What a read of a followed file keeps, so the next read extends it (see
    :func:`_extended`): everything :func:`_transcript` needs, and what tells whether
    appended lines leave the earlier lines' reading unchanged."""

    lenient: bool
    #: JSON lines read, and the last of them (the next source must start with them).
    count: int
    last: JsonLine
    bad: int
    #: Warnings about the lines (bad, unknown, duplicate, unparented lines).
    head_warnings: list[str]
    uuids: set[str]
    parents: set[str]
    chain: _Chain
    groups: dict[tuple[str, str], list[_Line]]
    names: dict[str, str]
    trusted: dict[int, str]
    #: Result ids of main lines off the chain's path, and of every line.
    off_results: set[str]
    all_results: set[str]
    messages: list[Message]
    usage: list[Usage]
    events: list[CompactionEvent]
    sidechains: dict[str, tuple[Message, ...]]
    side_warnings: list[str]
    subagent: bool
    titles: list[tuple[str, str | None]]
    #: cwd, gitBranch, version, sessionId: newest on the chain, newest of all lines.
    chain_keys: dict[str, str]
    line_keys: dict[str, str]
    skipped: Counter[str]
    path: str
    #: ``finish``'s state before the last message (set by :func:`_transcript`).
    finished: FinishState | None = None


_KEYS = ("cwd", "gitBranch", "version", "sessionId")
_STATE = NAME + "/state"


def _newest_keys(lines: list[_Line]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key in _KEYS:
        value = next(
            (ln.raw[key] for ln in reversed(lines) if isinstance(ln.raw.get(key), str)), None
        )
        if value is not None:
            out[key] = value
    return out


def _count_line(
    line: _Line, skipped: Counter[str], unknown: Counter[str], titles: list[tuple[str, str | None]]
) -> None:
    if line.type == "summary":
        if isinstance(line.raw.get("summary"), str):
            leaf = line.raw.get("leafUuid")
            titles.append((line.raw["summary"], leaf if isinstance(leaf, str) else None))
    elif line.type == "system":
        if not _is_boundary(line):
            skipped[f"system/{line.raw.get('subtype', '?')}"] += 1
    elif line.type in _SKIP_TYPES:
        skipped[line.type] += 1
    elif line.type not in _MESSAGE_TYPES and line.type != _INVALID:
        unknown[line.type] += 1
        skipped[line.type] += 1


# Long for speed: one pass over every line with no per-field helper calls (it loads
# 100k-line sessions); tests/core/test_scan_equivalence.py and the format tests pin it.
def read(source: Source, options: LoadOptions) -> Transcript:
    parsed: list[_Line] = []
    skipped_bad: list[tuple[int, str]] = []
    # A followed file read again: lines parsed last time (the same JsonLine) are reused.
    memo: dict[int, tuple[JsonLine, _Line]] | None = (
        None if source.memo is None else source.memo.setdefault(NAME, {})
    )
    kept = source.memo
    previous = None if kept is None else kept.get(_STATE)
    if kept is not None and isinstance(previous, _State):
        # Only lines appended to the chain's end: extend the last reading.
        state = _extended(previous, source, options, memo)
        if state is not None:
            kept[_STATE] = state
            return _transcript(state)
    lines = _lines_of(source)
    for jl in lines:
        if memo is not None:
            hit = memo.get(id(jl))
            if hit is not None and hit[0] is jl:
                parsed.append(_copy(hit[1]))  # a copy: _link_unparented sets .parent
                continue
        try:
            line = _parse_line(source, jl.number, jl.value)
            if memo is not None:
                memo[id(jl)] = (jl, _copy(line))
            parsed.append(line)
        except LoadError as exc:
            if not options.lenient:
                raise
            skipped_bad.append((jl.number, exc.problem))
            bare = _skeleton(jl.number, jl.value, _INVALID)
            if bare.uuid is not None:  # keep the tree linked through it
                parsed.append(bare)

    skipped: Counter[str] = Counter()
    unknown: Counter[str] = Counter()
    titles: list[tuple[str, str | None]] = []
    for line in parsed:
        _count_line(line, skipped, unknown, titles)

    linked = _link_unparented(parsed)
    tree = _Tree(parsed)
    names = _tool_names(tree)
    chain, subagent = _conversation_chain(tree)
    trusted: dict[int, str] = {}
    messages, usage, events = _convert(chain.lines, tree, names, trusted)
    sidechains, side_warnings = ({}, []) if subagent else _sidechains(tree, names)

    parse_bad = source.doc.bad_lines if source.kind == "jsonl" else []
    warnings = list(bad_line_warnings(JsonlResult(bad_lines=sorted([*parse_bad, *skipped_bad]))))
    if unknown:
        kinds = ", ".join(sorted(unknown))
        warnings.append(f"skipped {sum(unknown.values())} line(s) of unknown type: {kinds}")
    if tree.duplicates:
        warnings.append(f"ignored {tree.duplicates} line(s) repeating an earlier uuid")
    if linked:
        warnings.append(f"{linked} line(s) without parentUuid follow the previous line")
    nodes = tree.nodes.values()
    on_path = chain.uuids
    # What only an extension reads (the tree's ids and results) is built for a followed
    # file alone: a plain load never extends its reading.
    follow = kept is not None and source.kind == "jsonl" and bool(lines)
    state = _State(
        lenient=options.lenient,
        count=len(lines),
        last=lines[-1] if lines else JsonLine(0, None),
        bad=len(parse_bad),
        head_warnings=warnings,
        uuids=set(tree.nodes) if follow else set(),
        parents={ln.parent for ln in nodes if ln.parent} if follow else set(),
        chain=chain,
        groups=tree.groups,
        names=names,
        trusted=trusted,
        off_results={
            i
            for ln in nodes
            if not ln.sidechain and (ln.uuid or "") not in on_path
            for i in ln.result_ids
        }
        if follow
        else set(),
        all_results={i for ln in parsed for i in ln.result_ids} if follow else set(),
        messages=messages,
        usage=usage,
        events=events,
        sidechains=sidechains,
        side_warnings=side_warnings,
        subagent=subagent,
        titles=titles,
        chain_keys=_newest_keys(chain.lines),
        line_keys=_newest_keys(parsed),
        skipped=skipped,
        path=str(source.path),
    )
    if follow and kept is not None:
        kept[_STATE] = state
    return _transcript(state)


def _copy(t: _Line) -> _Line:
    return _Line(
        t.number, t.raw, t.type, t.uuid, t.parent, t.sidechain, t.parent_known, t.blocks, t.group
    )


# Long (~100 lines) on purpose: it mirrors read()'s steps one for one (parse, count,
# group, build messages) so the two read side by side; the fit test is _extension_fits.
def _extended(
    state: _State,
    source: Source,
    options: LoadOptions,
    memo: dict[int, tuple[JsonLine, _Line]] | None,
) -> _State | None:
    """``state`` extended by the lines appended since (None: read the file whole).

    Only when the reading of every earlier line stays what it was: the new lines
    continue the main chain at its leaf (each the parent of the next), bring no
    compaction boundary, sidechain, rewind, repeated uuid, unknown type or bad line,
    and no tool call or result that an earlier line's reading depends on; an assistant
    line may continue the chain's last turn (a streamed turn), which is rebuilt.
    ``state`` itself is left as it was.
    """
    if (
        source.kind != "jsonl"
        or options.lenient != state.lenient
        or state.subagent
        or state.chain.leaf is None
        or str(source.path) != state.path
        or len(source.doc.bad_lines) != state.bad
    ):
        return None
    lines = source.doc.lines
    n = state.count
    if len(lines) < n or lines[n - 1] is not state.last:
        return None
    if any(ev.message_index >= len(state.messages) for ev in state.events):
        return None  # a boundary at the end: its summary may be the next message
    new: list[_Line] = []
    for jl in lines[n:]:
        try:
            new.append(_parse_line(source, jl.number, jl.value))
        except LoadError:
            return None
    fit = _extension_fits(state, new)
    if fit is None:
        return None
    leaf, uuids, results, calls = fit
    chain = state.chain

    # The new lines fit: extend copies of what the last reading made.
    groups = dict(state.groups)
    names = {**state.names, **calls}
    trusted = dict(state.trusted)
    messages = list(state.messages)
    usage = list(state.usage)
    seq = list(chain.lines)
    skipped = Counter(state.skipped)
    unknown: Counter[str] = Counter()
    titles = list(state.titles)
    for line in new:
        _count_line(line, skipped, unknown, titles)
        group = line.group
        if group is not None:
            groups[group] = [*groups.get(group, ()), line]
    added: list[_Line] = []  # the new lines on the chain's sequence
    for line in new:
        if line.type == "user":
            seq.append(line)
            added.append(line)
            messages.extend(_user(line, names, len(messages)))
            continue
        group = line.group
        if line.type != "assistant" or group is None:
            continue
        if seq and seq[-1].group == group and seq[-1] is not line:
            # A streamed turn grew: its message (the last) is built again.
            messages.pop()
            if usage and usage[-1].message_index == len(messages):
                usage.pop()
        else:
            seq.append(line)
            added.append(line)
        msg = _assistant(groups[group], len(messages), trusted)
        u = _usage(msg, groups[group], len(messages))
        if u is not None:
            usage.append(u)
        messages.append(msg)
    if memo is not None:
        for jl, line in zip(lines[n:], new, strict=True):
            memo[id(jl)] = (jl, _copy(line))
    return dataclasses.replace(
        state,
        count=len(lines),
        last=lines[-1],
        uuids=state.uuids | uuids,
        parents=state.parents | {ln.parent for ln in new if ln.parent},
        chain=_Chain(seq, chain.uuids | uuids, chain.warnings, chain.abandoned, leaf),
        groups=groups,
        names=names,
        trusted=trusted,
        all_results=state.all_results | results,
        messages=messages,
        usage=usage,
        titles=titles,
        chain_keys={**state.chain_keys, **_newest_keys(added)},
        line_keys={**state.line_keys, **_newest_keys(new)},
        skipped=skipped,
    )


def _extension_fits(
    state: _State, new: list[_Line]
) -> tuple[str | None, set[str], set[str], dict[str, str]] | None:
    """Whether ``new`` lines extend ``state`` without changing how an earlier line
    reads: ``(the chain's new leaf, their uuids, result ids, call names)``, or None."""
    chain = state.chain
    leaf = chain.leaf
    tip = chain.lines[-1].group if chain.lines else None
    uuids: set[str] = set()
    results: set[str] = set()
    calls: dict[str, str] = {}
    fresh: set[tuple[str, str]] = set()
    for line in new:
        if line.type not in _KNOWN_TYPES or _is_boundary(line):
            return None
        if line.uuid is None:
            continue  # no tree node: a title or metadata line
        uuid = line.uuid
        if (
            line.sidechain
            or not line.parent_known
            or line.parent != leaf
            or uuid in state.uuids
            or uuid in state.parents
            or uuid in uuids
        ):
            return None
        uuids.add(uuid)
        leaf = uuid
        if line.type == "user":
            ids = line.result_ids
            if any(i in state.off_results for i in ids):
                return None  # it answers a call an off-chain result answered
            results.update(ids)
            tip = None
        elif line.type == "assistant":
            group = line.group
            assert group is not None
            if group in state.groups or group in fresh:
                if group != tip:
                    return None  # a turn continued after the chain moved on
            else:
                fresh.add(group)
                tip = group
            for b in line.blocks:
                if b["type"] == "tool_use":
                    call = b["id"]
                    if (
                        call in state.names
                        or call in calls
                        or call in state.all_results
                        or call in results
                    ):
                        return None  # an earlier result would get its name
                    calls[call] = b["name"]
    return leaf, uuids, results, calls


def _transcript(state: _State) -> Transcript:
    """The transcript of a reading (a whole file's, or one extended by appended lines)."""
    chain = state.chain
    # Finished from where the last reading left off (every message but its last is
    # kept as it was when the file grew).
    msgs, finish_warnings, state.finished = finish_from(
        state.messages, state.finished, valid_args=state.trusted
    )
    warnings = list(state.head_warnings)
    if not msgs:
        warnings.append("no main-chain messages (the file holds only metadata lines)")
    warnings += chain.warnings + finish_warnings + state.side_warnings

    extra: dict[str, Any] = {}
    titles = state.titles
    title = next((t for t, leaf in reversed(titles) if leaf in chain.uuids), None)
    if title is None and titles:
        title = titles[-1][0]
    if title is not None:
        extra["title"] = title
    session_id = None
    for key in _KEYS:
        value = state.chain_keys.get(key)
        if value is None:
            value = state.line_keys.get(key)
        if value is None:
            continue
        if key == "sessionId":
            session_id = value
        else:
            extra[key] = value
    if state.skipped:
        extra["skipped_lines"] = dict(state.skipped)
    if chain.abandoned:
        extra["abandoned_lines"] = chain.abandoned
    if state.subagent:
        extra["subagent"] = _agent_id(chain)

    model = next(
        (
            m.extra["model"]
            for m in reversed(msgs)
            if m.role is Role.ASSISTANT
            and isinstance(m.extra.get("model"), str)
            and m.extra["model"] != _SYNTHETIC_MODEL
        ),
        None,
    )
    return Transcript(
        messages=msgs,
        format=NAME,
        model=model,
        path=state.path,
        session_id=session_id,
        compactions=tuple(state.events),
        usage=tuple(state.usage),
        sidechains=state.sidechains or EMPTY,
        extra=extra or EMPTY,
        warnings=tuple(warnings),
    )
