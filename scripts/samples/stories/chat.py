"""The OpenAI Chat, Anthropic Messages and ShareGPT samples."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..common import (
    Ids,
    data_json,
    fill,
    parallel_calls,
    rng_for,
    write_json,
    write_jsonl,
)
from ..project import WEBHOOKS, Repo, ledgerline
from ..writers import AnthropicLog, Call, ChatLog, ShareGPTLog
from .steps import LogStory


class OpenAITools:
    """The OpenAI story's tools (see ``steps``): reads and patches on the webhook module."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def read(self, path: str, start: int | None = None, end: int | None = None) -> Call:
        args: dict[str, Any] = {"path": path}
        lines = self.repo.lines(path)
        a, b = start or 1, end or len(lines)
        if start is not None:
            args["start"], args["end"] = a, b
        return ("read_file", args, self.repo.numbered(path, a, b - a + 1))

    def apply(self, path: str, old: str, new: str) -> Call:
        diff = self.repo.patch(path, old, new)
        out = json.dumps({"applied": True, "files": [path]})
        return ("apply_patch", {"diff": diff + "\n"}, out)

    @staticmethod
    def shell(out: str, code: int = 0, err: str = "") -> str:
        return json.dumps({"stdout": out, "stderr": err, "exit_code": code})


def build_openai(out_dir: Path) -> dict[str, Any]:
    c = ChatLog(Ids(rng_for("openai")))
    LogStory({"chat": c}, OpenAITools(ledgerline(WEBHOOKS))).replay("openai")
    doc = {
        "model": "gpt-4.1-2025-04-14",
        "messages": c.messages,
        "tools": data_json("tool_schemas.json")["openai-chat.json"],
    }
    write_json(out_dir / "openai-chat.json", doc)
    invalid = [{"message_index": i} for i in c.invalid_arguments]
    parallel = parallel_calls(c.messages)
    return c.entry(
        "openai", doc["model"], invalid_tool_arguments=invalid, parallel_tool_call_messages=parallel
    )


AnthropicCall = tuple[str, dict[str, Any], str, bool]


class AnthropicTools:
    """The Anthropic story's tools (see ``steps``): views and edits of the web filters."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def view(self, path: str, start: int | None = None, end: int | None = None) -> AnthropicCall:
        args: dict[str, Any] = {"path": path, **({"view_range": [start, end]} if start else {})}
        lines = self.repo.lines(path)
        s, e = start or 1, end or len(lines)
        return ("view_file", args, self.repo.numbered(path, s, e - s + 1, arrow=True), False)

    def edit(self, path: str, old: str, new: str) -> AnthropicCall:
        diff = self.repo.patch(path, old, new)
        out = json.dumps({"path": path, "replaced": 1, "diff": diff})
        return ("edit_file", {"path": path, "old_str": old, "new_str": new}, out, False)

    def edit_many(self, path: str, edits: list[tuple[str, str]]) -> AnthropicCall:
        diff = self.repo.patch_many(path, edits)
        out = json.dumps({"path": path, "applied": True})
        return ("edit_file", {"path": path, "diff": diff}, out, False)


def build_anthropic(out_dir: Path) -> dict[str, Any]:
    a = AnthropicLog(Ids(rng_for("anthropic")))
    repo = ledgerline("src/app/web/filters.py")
    LogStory({"messages": a}, AnthropicTools(repo)).replay("anthropic")

    #: the request around the messages: model, system blocks and tool schemas
    doc = fill(data_json("anthropic_request.json"), messages=a.messages)
    if a.pending:
        raise AssertionError("anthropic: unanswered tool_use blocks")
    write_json(out_dir / "anthropic-messages.json", doc)
    more = {"raw_messages": len(a.messages), "tool_errors": a.tool_errors}
    more["thinking_blocks"] = a.thinking_blocks
    return a.entry("anthropic", doc["model"], **more)


class ShareGPTTools:
    """The ShareGPT story's tools (see ``steps``): reads and patches on named repos."""

    def __init__(self) -> None:
        self.repos = {
            "main": ledgerline(),
            "pristine": ledgerline(),
            "webhooks": ledgerline(WEBHOOKS),
        }

    def read(self, repo: str, path: str, offset: int = 1, limit: int | None = None) -> str:
        return self.repos[repo].numbered(path, offset, limit)

    def patch(self, repo: str, path: str, old: str, new: str) -> str:
        return self.repos[repo].patch(path, old, new)


def build_sharegpt(out_dir: Path) -> dict[str, Any]:
    ids = Ids(rng_for("sharegpt"))
    logs = {f"c{i}": ShareGPTLog(ids) for i in (1, 2, 3)}
    LogStory(logs, ShareGPTTools()).replay("sharegpt")
    run = data_json("agent_records.json")["sharegpt"]  # the model, each conversation's time
    pairs = enumerate(zip(logs.values(), run["stamps"], strict=True))
    write_jsonl(out_dir / "sharegpt.jsonl", [t.row(i, run["model"], s) for i, (t, s) in pairs])
    per = [t.entry("sharegpt", run["model"], raw_turns=len(t.turns)) for t in logs.values()]
    return {**per[0], "trajectories": per}
