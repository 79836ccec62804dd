"""SWE-agent ``.traj`` files (read-only).

Details: docs/formats.md (`tinyjuice.formats.swe_agent`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import orjson

from tinyjuice.formats._io import LoadError, LoadOptions, Source, expect, json_type, key_state
from tinyjuice.formats._messages import fast_paths, finish, meta_for_text, rest, with_meta
from tinyjuice.formats.openai import fast_message, known_keys, message_from_dict
from tinyjuice.model import (
    EMPTY,
    Message,
    Part,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
)

__all__ = ["NAME", "read", "sniff"]

NAME = "swe-agent"

#: Message keys this reader models itself (kept out of ``extra``).
_HANDLED = ("tool_call_ids", "thinking_blocks")
#: Keys that mark a message as SWE-agent's rather than plain OpenAI.
_SWE_KEYS = ("thought", "action", "message_type", "agent", "is_demo")
_KNOWN = known_keys(_HANDLED)


# ------------------------------------------------------------------------------ sniff


def sniff(source: Source) -> int:
    if source.kind != "json" or not isinstance(source.doc, dict):
        return 0
    doc = source.doc
    if "session_id" in doc or "conversations" in doc:
        return 0
    history = doc.get("history")
    if isinstance(history, list):
        head = history[:20]
        if not all(isinstance(m, dict) and "role" in m for m in head):
            return 0
        if "trajectory" in doc or "info" in doc:
            return 95
        return 90 if any(k in m for m in head for k in _SWE_KEYS) else 60
    fmt = doc.get("trajectory_format")
    if (
        isinstance(fmt, str)
        and fmt.startswith("mini-swe-agent")
        and isinstance(doc.get("messages"), list)
    ):
        return 85
    steps = doc.get("trajectory")
    first = steps[0] if isinstance(steps, list) and steps else None
    if isinstance(first, dict) and ("action" in first or "observation" in first):
        return 80
    return 0


# ------------------------------------------------------------------------------- read


def _thinking_blocks(source: Source, raw: Any, jp: str) -> list[Part]:
    expect(source.path, raw, list, jp, "a list of thinking blocks")
    parts: list[Part] = []
    for j, block in enumerate(raw):
        bp = f"{jp}[{j}]"
        expect(source.path, block, dict, bp, "a thinking block object")
        if block.get("type") == "redacted_thinking":
            parts.append(ThinkingPart("", redacted=True, extra=rest(block, ("type",))))
            continue
        text = expect(source.path, block.get("thinking", ""), str, f"{bp}.thinking", "a string")
        sig = block.get("signature")
        parts.append(
            ThinkingPart(
                text,
                signature=sig if isinstance(sig, str) else None,
                extra=rest(block, ("type", "thinking", "signature")),
            )
        )
    return parts


def _fast_message(raw: Any, index: int, hints_out: list[str]) -> Message | None:
    """The common shapes (no thinking blocks, well-typed ids), or None for :func:`_message`."""
    if type(raw) is not dict or raw.get("thinking_blocks") is not None:
        return None
    ids = raw.get("tool_call_ids")
    many = False
    if ids is not None and raw.get("role") == "tool" and type(raw.get("tool_call_id")) is not str:
        if type(ids) is not list or not all(type(v) is str for v in ids):
            return None  # the generic path names the bad value
        if ids:
            raw = {**raw, "tool_call_id": ids[0]}
            many = len(ids) > 1
    m = fast_message(raw, index, _KNOWN)
    if m is not None and many:
        # (The fast path's own, new hints dict: completed here, before any use.)
        assert isinstance(m.hints, dict) and isinstance(ids, list)
        m.hints["tool_call_ids"] = tuple(ids)
        hints_out.append(f"#{index}")
    return m


def _message(
    source: Source, raw: Any, jp: str, hints_out: list[str], index: int | None = None
) -> Message:
    expect(source.path, raw, dict, jp, "a message object with a role")
    if not isinstance(raw.get("role"), str):
        raise LoadError(
            source.path,
            f"role is {key_state(raw, 'role')}",
            json_path=f"{jp}.role",
            expected="system, user, assistant or tool",
        )
    ids: list[Any] = []
    if (
        raw["role"] == "tool"
        and raw.get("tool_call_ids") is not None
        and not isinstance(raw.get("tool_call_id"), str)
    ):
        ids = expect(
            source.path,
            raw["tool_call_ids"],
            list,
            f"{jp}.tool_call_ids",
            "a list of tool call ids",
        )
        for k, value in enumerate(ids):
            expect(source.path, value, str, f"{jp}.tool_call_ids[{k}]", "a string tool call id")
        if ids:
            # The plural form answers its first call; a shallow copy is cheaper than
            # rebuilding the message afterwards.
            raw = {**raw, "tool_call_id": ids[0]}
    m = message_from_dict(source, raw, jp, extra_known=_HANDLED, index=index)
    changes: dict[str, Any] = {}
    if len(ids) > 1:
        changes["hints"] = {**m.hints, "tool_call_ids": tuple(ids)}
        hints_out.append(jp)
    if raw.get("thinking_blocks") is not None:
        thinking = _thinking_blocks(source, raw["thinking_blocks"], f"{jp}.thinking_blocks")
        changes["parts"] = (*thinking, *m.parts)
    return replace(m, **changes) if changes else m


def _flag_context(messages: list[Message], raws: list[Any]) -> list[Message]:
    """Mark demonstrations and post-task observations: they are not real user asks."""
    out: list[Message] = []
    seen_task = False
    for m, raw in zip(messages, raws, strict=True):
        if m.role is Role.USER and not m.meta.is_summary:
            kind = None
            if raw.get("is_demo") is True:
                kind = "demonstration"
            elif not seen_task and not m.meta.is_injected:
                seen_task = True
            elif raw.get("message_type") in (None, "observation") and not m.meta.is_injected:
                kind = "observation"
            if kind is not None:
                m = with_meta(m, is_injected=True, injected_kind=kind)
        out.append(m)
    return out


#: mini-SWE-agent's one action: the fenced ``bash``/``sh`` block of a response.
_BASH_BLOCK = re.compile(r"```(?:bash|sh|shell)?[ \t]*\n(.*?)\n?```", re.S)


def _action(m: Message, raw: Any) -> str | None:
    """The command an assistant message ran: SWE-agent's ``action``, else mini-SWE-agent's
    fenced bash block; None when it made no (parsable) action or already made tool calls."""
    if m.role is not Role.ASSISTANT or m.tool_calls:
        return None
    action = raw.get("action") if isinstance(raw, dict) else None
    if isinstance(action, str) and action.strip():
        return action.strip()
    # mini-SWE-agent runs a reply's one bash block; with none or several it runs nothing
    # and answers with a format-error notice instead.
    blocks = _BASH_BLOCK.findall(m.text)
    return blocks[0].strip() if len(blocks) == 1 and blocks[0].strip() else None


def _observations_as_tool_output(messages: list[Message], raws: list[Any]) -> int:
    """Turn each observation that answers an action into a tool result, in place.

    SWE-agent and mini-SWE-agent send the environment's output back with role ``user``;
    it is tool output, not an ask. The action becomes a synthetic ``bash`` call on the
    assistant message (listed in its ``synthetic_call_ids`` hint) and the observation
    its result (hint ``observation_role``: "user"). An observation with no action before
    it (a format error, a timeout notice) stays injected context. Returns the count.
    """
    done = 0
    for i in range(1, len(messages)):
        m = messages[i]
        if m.role is not Role.USER or m.meta.injected_kind != "observation":
            continue
        action = _action(messages[i - 1], raws[i - 1])
        if action is None:
            continue
        prev, call_id = messages[i - 1], f"call_obs_{i}"
        call = ToolCall(call_id, "bash", orjson.dumps({"command": action}).decode())
        messages[i - 1] = replace(
            prev, tool_calls=(call,), hints={**prev.hints, "synthetic_call_ids": (call_id,)}
        )
        meta = replace(m.meta, is_injected=False, injected_kind=None)
        messages[i] = replace(
            m,
            role=Role.TOOL,
            tool_call_id=call_id,
            tool_name="bash",
            meta=meta,
            hints={**m.hints, "observation_role": "user"},
        )
        done += 1
    return done


def _from_steps(source: Source, steps: list[Any]) -> tuple[list[Message], list[Any]]:
    """Messages rebuilt from ``trajectory`` steps (response, then observation)."""
    messages: list[Message] = []
    raws: list[Any] = []
    for k, step in enumerate(steps):
        sp = f"$.trajectory[{k}]"
        expect(source.path, step, dict, sp, "a step object with 'action' and 'observation'")
        response = step.get("response")
        if not isinstance(response, str):
            pieces = [step.get(key) for key in ("thought", "action")]
            response = "\n".join(p for p in pieces if isinstance(p, str) and p)
        messages.append(
            Message(
                role=Role.ASSISTANT,
                parts=(TextPart(response),),
                meta=meta_for_text(Role.ASSISTANT, response),
                hints={"step": k},
            )
        )
        raws.append({})
        observation = step.get("observation")
        if observation is not None:
            text = expect(source.path, observation, str, f"{sp}.observation", "a string")
            # No task message is recorded here: every observation is environment output.
            meta = replace(
                meta_for_text(Role.USER, text), is_injected=True, injected_kind="observation"
            )
            messages.append(
                Message(role=Role.USER, parts=(TextPart(text),), meta=meta, hints={"step": k})
            )
            raws.append({"message_type": "observation"})
    return messages, raws


def _config_model(config: Any) -> str | None:
    if isinstance(config, str):
        try:
            config = orjson.loads(config)
        except orjson.JSONDecodeError:
            return None
    if not isinstance(config, dict):
        return None
    agent = config.get("agent")
    candidates = [agent.get("model") if isinstance(agent, dict) else None, config.get("model")]
    for model in candidates:
        if isinstance(model, dict):
            for key in ("name", "model_name"):
                if isinstance(name := model.get(key), str):
                    return name
        elif isinstance(model, str):
            return model
    return None


def _model_name(doc: Mapping[str, Any]) -> str | None:
    info = doc.get("info")
    if isinstance(info, dict):
        for key in ("model_name", "model"):
            if isinstance(name := info.get(key), str):
                return name
        found = _config_model(info.get("config"))
        if found:
            return found
    return _config_model(doc.get("replay_config"))


def read(source: Source, options: LoadOptions) -> Transcript:
    doc = expect(
        source.path,
        source.doc,
        dict,
        "$",
        "a SWE-agent trajectory object with 'history' (and 'trajectory', 'info')",
    )
    warnings: list[str] = []
    multi: list[str] = []
    if "history" in doc:
        key = "history"
    elif isinstance(doc.get("trajectory_format"), str) and "messages" in doc:
        key = "messages"
    else:
        key = None
    if key is not None:
        raws = expect(source.path, doc[key], list, f"$.{key}", "a list of messages")
        messages = []
        fast = fast_paths()
        for i, raw in enumerate(raws):
            m = _fast_message(raw, i, multi) if fast else None
            if m is None:
                m = _message(source, raw, f"$.{key}[{i}]", multi, i)
            messages.append(m)
    elif "trajectory" in doc:
        steps = expect(source.path, doc["trajectory"], list, "$.trajectory", "a list of steps")
        messages, raws = _from_steps(source, steps)
        warnings.append("no 'history': messages rebuilt from 'trajectory' steps")
    else:
        raise LoadError(
            source.path,
            "no 'history' or 'trajectory'",
            json_path="$",
            expected="a SWE-agent trajectory with a 'history' list of messages",
        )
    flagged = _flag_context(messages, raws)
    _observations_as_tool_output(flagged, raws)
    msgs, finish_warnings = finish(flagged)
    warnings += finish_warnings
    if multi:
        warnings.append(
            f"{len(multi)} tool result(s) answer several calls (tool_call_ids); each is paired"
            " to its first call"
        )
    extra: dict[str, Any] = dict(rest(doc, (key,) if key else ()))
    info = doc.get("info")
    if isinstance(info, dict) and isinstance(info.get("model_stats"), dict):
        extra["model_stats"] = info["model_stats"]
    elif "info" in doc and not isinstance(info, dict):
        warnings.append(f"'info' is a JSON {json_type(info)}, not an object (kept as is)")
    return Transcript(
        messages=msgs,
        format=NAME,
        model=_model_name(doc),
        path=str(source.path),
        extra=extra or EMPTY,
        warnings=tuple(warnings),
    )
