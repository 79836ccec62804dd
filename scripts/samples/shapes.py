"""Agents' native message shapes, spelled once for both sample generators.

``scripts/samples`` (the bundled sessions) and ``benchmarks/gen.py`` (the large synthetic
transcripts) build their files from these: each function returns one native dict (or
string) with the agent's own keys in the agent's own order. Serialising, ids, timestamps
and counting stay with the callers. Nothing here imports tinyjuice: the files must test
its readers, not echo its writers.
"""

from __future__ import annotations

from typing import Any

# ------------------------------------------------------------------ OpenAI Chat / Hermes


def openai_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """An entry of an assistant message's ``tool_calls`` (``arguments`` is a JSON string)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def openai_tool_message(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": content}


def hermes_tool_message(content: str, call_id: str, name: str) -> dict[str, Any]:
    """A Hermes tool result: OpenAI's, plus ``tool_name``, content first."""
    return {
        "role": "tool",
        "content": content,
        "tool_call_id": call_id,
        "name": name,
        "tool_name": name,
    }


# ------------------------------------------------------------- Anthropic Messages blocks


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def thinking_block(text: str, signature: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": signature}


def tool_use_block(tool_use_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": arguments}


def image_block(png_base64: str) -> dict[str, Any]:
    source = {"type": "base64", "media_type": "image/png", "data": png_base64}
    return {"type": "image", "source": source}


def tool_result_block(
    tool_use_id: str, content: Any, is_error: bool | None = None, *, claude_code: bool = False
) -> dict[str, Any]:
    """A ``tool_result`` block; ``is_error`` None leaves the key out. Claude Code's logs
    put ``tool_use_id`` before ``type``."""
    if claude_code:
        block = {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}
    else:
        block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error is not None:
        block["is_error"] = is_error
    return block


# -------------------------------------------------------------------------- Claude Code


def cc_assistant_message(
    message_id: str, model: str, block: dict[str, Any], stop: str | None, usage: dict[str, Any]
) -> dict[str, Any]:
    """The ``message`` of one Claude Code assistant line (one content block a line)."""
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [block],
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": usage,
    }


def cc_read_result(path: str, content: str, start: int, lines: int, total: int) -> Any:
    """A Read call's ``toolUseResult``: the text read from ``path`` (absolute)."""
    file = {
        "filePath": path,
        "content": content,
        "numLines": lines,
        "startLine": start,
        "totalLines": total,
    }
    return {"type": "text", "file": file}


def cc_bash_result(stdout: str, stderr: str = "") -> dict[str, Any]:
    """A Bash call's ``toolUseResult``."""
    return {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}


def cc_snapshot(message_id: str, backups: dict[str, Any], timestamp: str) -> dict[str, Any]:
    """A ``file-history-snapshot`` line."""
    return {
        "type": "file-history-snapshot",
        "messageId": message_id,
        "snapshot": {
            "messageId": message_id,
            "trackedFileBackups": backups,
            "timestamp": timestamp,
        },
        "isSnapshotUpdate": False,
    }


# -------------------------------------------------------------------------------- Codex


def codex_line(timestamp: str, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": timestamp, "type": kind, "payload": payload}


def codex_message(role: str, text: str, image_url: str | None = None) -> dict[str, Any]:
    """A ``message`` response item: input_text for the user, output_text for the assistant."""
    content: list[dict[str, Any]] = [
        {"type": "input_text" if role == "user" else "output_text", "text": text}
    ]
    if image_url:
        content.append({"type": "input_image", "image_url": image_url})
    return {"type": "message", "role": role, "content": content}


def codex_reasoning(summary: str, encrypted: str) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": summary}],
        "content": None,
        "encrypted_content": encrypted,
    }


def codex_call(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "name": name, "arguments": arguments, "call_id": call_id}


def codex_output(call_id: str, output: str, custom: bool = False) -> dict[str, Any]:
    kind = "custom_tool_call_output" if custom else "function_call_output"
    return {"type": kind, "call_id": call_id, "output": output}


# ----------------------------------------------------------------------------- ShareGPT


def tagged(tag: str, text: str) -> str:
    """ShareGPT / Hermes-format markup: ``<think>``, ``<tool_call>``, ``<tool_response>``."""
    return f"<{tag}>\n{text}\n</{tag}>"
