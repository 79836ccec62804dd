"""Cline and Roo Code task histories (read-only).

A task directory (``…/tasks/<task id>/``) holds ``api_conversation_history.json`` — the
messages sent to the model, a JSON list in Anthropic's shape (``role`` user/assistant,
``content`` a string or blocks), each with a few keys of the agent's own (``ts``; Roo
adds ``isSummary``, ``condenseId``, ``condenseParent``, ``truncationParent``…) — and
beside it ``ui_messages.json`` (what the panel showed: ``{"ts", "type": "say"|"ask",
"say"/"ask", "text", …}``) and ``task_metadata.json`` (``model_usage``, files in context).

What we map: the history as Anthropic messages (the extra keys stay in each message's
``extra``); the model from ``task_metadata.json``'s last ``model_usage`` entry; usage from
the ``api_req_started`` panel messages (``text`` is JSON with ``tokensIn``,
``tokensOut``, ``cacheWrites``, ``cacheReads``), the k-th one measured at the k-th
assistant message. Condense events: Roo's summary message (``isSummary: true``; the
turns it replaced carry ``condenseParent``) with the token counts of the matching
``condense_context`` panel message (``contextCondense.prevContextTokens`` /
``newContextTokens``); Cline's ``condense`` tool call (the summary is its argument;
manual: the user accepts it) and ``summarize_task`` (Cline's automatic compaction).
Roo's sliding-window truncation (a message with ``isTruncationMarker``; the turns it hid
carry ``truncationParent``) is an automatic compaction with no summary at the marker.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson

from tinyjuice.formats import anthropic
from tinyjuice.formats._base import LoadError, LoadOptions, Source, json_type
from tinyjuice.formats._records import count, reset_event
from tinyjuice.model import (
    EMPTY,
    CompactionEvent,
    Message,
    Role,
    Transcript,
    Trigger,
    Usage,
)

__all__ = ["NAME", "read", "sniff"]

NAME = "cline"

HISTORY_FILE = "api_conversation_history.json"
UI_FILE = "ui_messages.json"
METADATA_FILE = "task_metadata.json"
#: Message keys only Cline / Roo Code write beside Anthropic's.
_OWN_KEYS = ("isSummary", "condenseId", "condenseParent", "truncationParent", "isTruncationMarker")
#: Cline's summary tools: (name, trigger).
_SUMMARY_TOOLS = {"condense": Trigger.MANUAL, "summarize_task": Trigger.AUTO}


# ------------------------------------------------------------------------------ sniff


def sniff(source: Source) -> int:
    doc = source.doc
    if source.kind != "json" or not isinstance(doc, list) or not doc:
        return 0
    head = doc[:20]
    if not all(isinstance(m, dict) and m.get("role") in ("user", "assistant") for m in head):
        return 0
    if source.path.name == HISTORY_FILE or (source.path.parent / UI_FILE).is_file():
        return 97
    if any(k in m for m in head for k in _OWN_KEYS):
        return 95
    return 0


# ------------------------------------------------------------------------------ sides


def _side_file(source: Source, name: str, warnings: list[str]) -> Any:
    """A JSON file beside the history, or None (a bad one is warned about, never fatal)."""
    path = source.path.parent / name
    if source.path.name != HISTORY_FILE and not (source.path.parent / UI_FILE).is_file():
        return None
    try:
        return orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError) as exc:
        warnings.append(f"{name} beside the history could not be read ({exc}); ignored")
        return None


def _model(metadata: Any) -> str | None:
    usage = metadata.get("model_usage") if isinstance(metadata, dict) else None
    for entry in reversed(usage if isinstance(usage, list) else []):
        if isinstance(entry, dict) and isinstance(model_id := entry.get("model_id"), str):
            return model_id
    return None


def _requests(ui: list[Any]) -> list[dict[str, Any]]:
    """The token counts of each ``api_req_started`` panel message, in order."""
    out: list[dict[str, Any]] = []
    for m in ui:
        if isinstance(m, dict) and m.get("say") == "api_req_started":
            try:
                info = orjson.loads(m.get("text") or "{}")
            except (orjson.JSONDecodeError, TypeError):
                continue
            if isinstance(info, dict) and ("tokensIn" in info or "tokensOut" in info):
                out.append(info)
    return out


def _usage(messages: tuple[Message, ...], ui: list[Any]) -> list[Usage]:
    assistants = [i for i, m in enumerate(messages) if m.role is Role.ASSISTANT]
    return [
        Usage(
            input_tokens=count(info.get("tokensIn")),
            cache_read_tokens=count(info.get("cacheReads")),
            cache_write_tokens=count(info.get("cacheWrites")),
            output_tokens=count(info.get("tokensOut")),
            message_index=i,
        )
        for i, info in zip(assistants, _requests(ui), strict=False)
    ]


# ----------------------------------------------------------------------------- events


def _summary_trigger(m: Message) -> Trigger | None:
    """The trigger when ``m`` holds a condense summary, else None."""
    if m.extra.get("isSummary") is True:
        return Trigger.UNKNOWN
    if m.role is not Role.ASSISTANT:
        return None
    for call in m.tool_calls:
        if call.name in _SUMMARY_TOOLS:
            return _SUMMARY_TOOLS[call.name]
    text = m.text
    for name, trigger in _SUMMARY_TOOLS.items():
        if f"<{name}>" in text and f"</{name}>" in text:
            return trigger
    return None


def _condensed(ui: list[Any]) -> list[dict[str, Any]]:
    return [
        m["contextCondense"]
        for m in ui
        if isinstance(m, dict)
        and m.get("say") == "condense_context"
        and isinstance(m.get("contextCondense"), dict)
    ]


def _events(
    messages: tuple[Message, ...], ui: list[Any]
) -> tuple[tuple[Message, ...], list[CompactionEvent]]:
    counts = _condensed(ui)
    out = list(messages)
    events: list[CompactionEvent] = []
    for i, m in enumerate(messages):
        if m.extra.get("isTruncationMarker") is True:
            # Roo's sliding window hid the turns before this marker (no summary).
            meta = replace(m.meta, is_injected=True, injected_kind="truncation_marker")
            out[i] = replace(m, meta=meta)
            events.append(reset_event(i, summary_index=None, trigger=Trigger.AUTO))
            continue
        trigger = _summary_trigger(m)
        if trigger is None:
            continue
        if not m.meta.is_summary:
            out[i] = replace(m, meta=replace(m.meta, is_summary=True))
        k = sum(1 for e in events if e.summary_index is not None)
        info = counts[k] if k < len(counts) else {}
        pre, post = info.get("prevContextTokens"), info.get("newContextTokens")
        events.append(
            reset_event(
                i,
                summary_index=i,
                trigger=trigger,
                pre=count(pre) if pre is not None else None,
                post=count(post) if post is not None else None,
                source_id=m.extra.get("condenseId")
                if isinstance(m.extra.get("condenseId"), str)
                else None,
            )
        )
    return tuple(out), events


# ------------------------------------------------------------------------------- read


def read(source: Source, options: LoadOptions) -> Transcript:
    doc = source.doc
    if source.kind != "json" or not isinstance(doc, list):
        raise LoadError(
            source.path,
            f"found {json_type(doc)}" if source.kind == "json" else "not a JSON document",
            json_path="$",
            expected=f"{HISTORY_FILE}: a JSON list of messages",
        )
    base = anthropic.read(source, options)
    warnings = list(base.warnings)
    ui_raw = _side_file(source, UI_FILE, warnings)
    ui = ui_raw if isinstance(ui_raw, list) else []
    metadata = _side_file(source, METADATA_FILE, warnings)
    messages, events = _events(base.messages, ui)
    condensed = sum(1 for m in messages if isinstance(m.extra.get("condenseParent"), str))
    if condensed:
        warnings.append(f"{condensed} message(s) were condensed away (condenseParent)")
    extra: dict[str, Any] = {}
    if isinstance(metadata, dict):
        extra["task_metadata"] = metadata
    return Transcript(
        messages=messages,
        format=NAME,
        model=_model(metadata) or base.model,
        path=str(source.path),
        session_id=source.path.parent.name if source.path.name == HISTORY_FILE else None,
        compactions=tuple(events),
        usage=tuple(_usage(messages, ui)) or base.usage,
        extra=extra or EMPTY,
        warnings=tuple(warnings),
    )


def task_history(directory: Path) -> Path | None:
    """The history file of a task directory, or None."""
    path = directory / HISTORY_FILE
    return path if path.is_file() else None
