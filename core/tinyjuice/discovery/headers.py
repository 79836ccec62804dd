"""The cheap read behind each row: the first and last records of a file, its size and mtime.

Nothing here loads a whole transcript (a JSON document — Hermes session logs, Gemini
chats, Cline tasks — is parsed whole only when small); the exact figures come later
from :mod:`tinyjuice.discovery.figures`. A file whose header cannot be read still
gets a row (with what ``stat`` gives), never an exception.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from tinyjuice.discovery.rows import SessionRow

__all__ = ["HEAD_BYTES", "first_line", "header_row", "jsonl_sample"]

#: Bytes read from each end of a JSONL file.
HEAD_BYTES = 64 * 1024
#: A JSON document up to this size is parsed whole for its header.
DOC_BYTES = 4 * 1024 * 1024
#: Characters kept of a title or first ask.
TITLE_CHARS = 120

#: Injected context that opens a Codex or Claude Code session but is not the user's ask.
_INJECTED = ("<environment_context", "<user_instructions", "# AGENTS.md", "<command-", "<local-")


def first_line(text: str) -> str | None:
    """The first non-blank line of ``text``, shortened for a list row."""
    for line in text.splitlines():
        line = line.strip()
        if line:
            return line if len(line) <= TITLE_CHARS else line[: TITLE_CHARS - 1] + "…"
    return None


def _text_of(content: Any) -> str:
    """Text of a message content: a string, or a list of text blocks/parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for block in content:
            if (
                isinstance(block, dict)
                and isinstance(block.get("text"), str)
                and block.get("type") in (None, "text", "input_text", "output_text")
            ):
                out.append(block["text"])
        return "\n".join(out)
    return ""


def _ask(content: Any) -> str | None:
    text = _text_of(content).lstrip()
    if not text or text.startswith(_INJECTED):
        return None
    return first_line(text)


def jsonl_sample(path: Path, size: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """(head records, tail records, sample lines): complete lines from both ends.

    ``sample lines`` is how many lines the sample covered, for estimating the total.
    """
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
        whole = size <= 2 * HEAD_BYTES
        if whole:
            head += fh.read()
            tail = b""
        else:
            fh.seek(max(0, size - HEAD_BYTES))
            tail = fh.read().split(b"\n", 1)[-1]  # drop the partial first line
    head_lines = head.split(b"\n")
    if not whole:
        head_lines = head_lines[:-1]  # the last line may be cut
    heads = list(_records(head_lines))
    tails = list(_records(tail.split(b"\n")))
    return heads, tails, len(heads) + len(tails)


def _records(lines: list[bytes]) -> Iterator[dict[str, Any]]:
    for line in lines:
        if not line.strip():
            continue
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            yield value


def _estimate(
    heads: list[dict[str, Any]],
    tails: list[dict[str, Any]],
    size: int,
    is_message: Callable[[dict[str, Any]], bool],
) -> int:
    """Messages in the file: exact when the sample is the whole file, else scaled."""
    sample = heads + tails
    count = sum(1 for r in sample if is_message(r))
    if size <= 2 * HEAD_BYTES or not sample:
        return count
    sampled_bytes = 2 * HEAD_BYTES
    return round(count * size / sampled_bytes)


# ------------------------------------------------------------------- per agent


def _claude(path: Path, size: int) -> dict[str, Any]:
    heads, tails, _ = jsonl_sample(path, size)
    title = ask = cwd = None
    for r in heads + tails:
        kind = r.get("type")
        if kind == "summary" and isinstance(r.get("summary"), str):
            title = title or first_line(r["summary"])
        if cwd is None and isinstance(r.get("cwd"), str):
            cwd = r["cwd"]
        if ask is None and kind == "user" and not r.get("isMeta") and not r.get("isCompactSummary"):
            message = r.get("message")
            if isinstance(message, dict):
                ask = _ask(message.get("content"))
    if cwd is None:  # the project directory is the cwd with "/" written as "-"
        parent = path.parent.parent.name if path.parent.name == "subagents" else path.parent.name
        cwd = parent
    return {
        "project": cwd,
        "title": title or ask,
        "messages_estimate": _estimate(
            heads, tails, size, lambda r: r.get("type") in ("user", "assistant")
        ),
    }


def _codex_ask(r: dict[str, Any]) -> str | None:
    payload = r.get("payload")
    if not isinstance(payload, dict):
        return None
    if r.get("type") == "event_msg" and payload.get("type") == "user_message":
        return _ask(payload.get("message"))
    if (
        r.get("type") == "response_item"
        and payload.get("type") == "message"
        and payload.get("role") == "user"
    ):
        return _ask(payload.get("content"))
    return None


def _codex(path: Path, size: int) -> dict[str, Any]:
    heads, tails, _ = jsonl_sample(path, size)
    ask = cwd = None
    for r in heads:
        payload = r.get("payload")
        if r.get("type") == "session_meta" and isinstance(payload, dict):
            cwd = cwd or payload.get("cwd")
        ask = ask or _codex_ask(r)
    items = ("message", "function_call", "function_call_output", "custom_tool_call")

    def is_message(r: dict[str, Any]) -> bool:
        p = r.get("payload")
        return r.get("type") == "response_item" and isinstance(p, dict) and p.get("type") in items

    return {
        "project": cwd if isinstance(cwd, str) else None,
        "title": ask,
        "messages_estimate": _estimate(heads, tails, size, is_message),
    }


def _messages_doc(doc: Any, key: str = "messages") -> list[Any] | None:
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and isinstance(doc.get(key), list):
        return list(doc[key])
    return None


def _json_doc(path: Path, size: int) -> Any:
    if size > DOC_BYTES:
        return None
    try:
        return orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None


def _first_user(messages: list[Any], role_key: str, user: str, content_key: str) -> str | None:
    for m in messages:
        if isinstance(m, dict) and m.get(role_key) == user:
            ask = _ask(m.get(content_key))
            if ask:
                return ask
    return None


def _hermes_file(path: Path, size: int) -> dict[str, Any]:
    if path.suffix == ".jsonl":  # gateway layout: a session_meta line, then messages
        heads, tails, _ = jsonl_sample(path, size)
        roles = ("user", "assistant", "tool", "system")
        return {
            "title": _first_user(heads, "role", "user", "content"),
            "messages_estimate": _estimate(heads, tails, size, lambda r: r.get("role") in roles),
        }
    doc = _json_doc(path, size)
    messages = _messages_doc(doc) or []
    return {
        "title": _first_user(messages, "role", "user", "content"),
        "messages_estimate": len(messages) if doc is not None else None,
    }


def _gemini(path: Path, size: int) -> dict[str, Any]:
    project = path.parent.parent.name  # tmp/<project hash>/chats/session-*.json
    if path.suffix == ".jsonl":
        heads, tails, _ = jsonl_sample(path, size)
        kinds = ("user", "gemini")
        return {
            "project": project,
            "title": _first_user(heads, "type", "user", "content"),
            "messages_estimate": _estimate(heads, tails, size, lambda r: r.get("type") in kinds),
        }
    doc = _json_doc(path, size)
    messages = _messages_doc(doc) or []
    return {
        "project": project,
        "title": _first_user(messages, "type", "user", "content"),
        "messages_estimate": len(messages) if doc is not None else None,
    }


def _cline(path: Path, size: int) -> dict[str, Any]:
    """``tasks/<id>/api_conversation_history.json``; the first ask is in its first message."""
    doc = _json_doc(path, size)
    messages = _messages_doc(doc) or []
    title = None
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "user":
            # Cline wraps the ask in <task>…</task> and adds <environment_details>.
            text = _text_of(m.get("content")).replace("<task>", "").replace("</task>", "")
            title = first_line(text)
            break
    return {"title": title, "messages_estimate": len(messages) if doc is not None else None}


def _opencode_file(path: Path, size: int) -> dict[str, Any]:
    """``storage/session/<project>/<id>.json``: a session record; messages beside it."""
    doc = _json_doc(path, size)
    info = doc if isinstance(doc, dict) else {}
    title = info.get("title")
    storage = path.parent.parent.parent  # storage/session/<project>/<id>.json
    msg_dir = storage / "message" / str(info.get("id") or path.stem)
    try:
        count: int | None = sum(1 for _ in msg_dir.glob("*.json"))
    except OSError:
        count = None
    directory = info.get("directory")
    return {
        "project": directory if isinstance(directory, str) else path.parent.name,
        "title": first_line(title) if isinstance(title, str) else None,
        "messages_estimate": count,
    }


_READERS: dict[str, Callable[[Path, int], dict[str, Any]]] = {
    "claude-code": _claude,
    "codex": _codex,
    "hermes": _hermes_file,
    "gemini": _gemini,
    "cline": _cline,
    "roo": _cline,
    "opencode": _opencode_file,
    # The bundled demo is a Hermes session log.
    "demo": _hermes_file,
}


def header_row(
    agent: str, path: Path, st: os.stat_result, *, parent: str | None = None
) -> SessionRow:
    """The row for one session file, from its header read (fields it cannot read stay None)."""
    try:
        fields = _READERS[agent](path, st.st_size)
        error = None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        fields, error = {}, f"header unreadable: {exc}"
    return SessionRow(
        agent=agent,
        path=str(path),
        size=st.st_size,
        mtime=st.st_mtime,
        parent=parent,
        error=error,
        **fields,
    )
