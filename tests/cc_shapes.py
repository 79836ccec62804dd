"""Claude Code session JSONL written line by line in the CLI's on-disk shape.

Shared by the live-context tests (CLI and inspector). The content is made up; the
shapes follow Claude Code: each line parented on the previous one, a
``compact_boundary`` system line (``parentUuid: null``, ``logicalParentUuid``,
``compactMetadata``) followed by the ``isCompactSummary`` user line, subagents in
``<session-id>/subagents/agent-<id>.jsonl`` beside the session file, every line of them
``isSidechain: true`` with its ``agentId``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SESSION = "5b1e0c7a-2f3d-4c9e-8a71-0d6f3e2b9c14"
MODEL = "claude-sonnet-4-5-20250929"


class Chain:
    """Claude Code lines, each parented on the previous one (as the CLI writes them)."""

    def __init__(self, session: str = SESSION, *, sidechain: bool = False, agent: str = "") -> None:
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.n = 0
        self.session = session
        self.sidechain = sidechain
        self.agent = agent

    def _base(self, kind: str) -> dict[str, Any]:
        self.n += 1
        uuid = f"{'s' if self.sidechain else 'm'}{self.agent}-{self.n:04d}"
        line: dict[str, Any] = {
            "parentUuid": self.parent,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": "/home/ana/inventory",
            "sessionId": self.session,
            "version": "2.0.14",
            "gitBranch": "main",
            "type": kind,
            "uuid": uuid,
            "timestamp": f"2025-10-07T09:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
        }
        if self.agent:
            line["agentId"] = self.agent
        self.parent = uuid
        self.lines.append(line)
        return line

    def user(self, text: str, **kw: Any) -> None:
        line = self._base("user")
        line["message"] = {"role": "user", "content": text}
        line.update(kw)

    def assistant(self, text: str, prompt: int, calls: list[tuple[str, str]] = ()) -> None:
        line = self._base("assistant")
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        content += [
            {"type": "tool_use", "id": cid, "name": name, "input": {"description": text}}
            for cid, name in calls
        ]
        line["requestId"] = f"req_{self.n:04d}"
        line["message"] = {
            "id": f"msg_{self.n:04d}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 12,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": prompt - 12,
                "output_tokens": 40,
            },
        }

    def result(self, call_id: str, text: str) -> None:
        line = self._base("user")
        line["message"] = {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call_id, "content": text}],
        }

    def compact(self, summary: str, pre: int, trigger: str = "manual") -> None:
        logical = self.parent
        line = self._base("system")
        line.update(
            parentUuid=None,
            logicalParentUuid=logical,
            subtype="compact_boundary",
            content="Conversation compacted",
            isMeta=False,
            level="info",
            compactMetadata={"trigger": trigger, "preTokens": pre},
        )
        self.user(
            "This session is being continued from a previous conversation that ran out of"
            f" context. The conversation is summarized below:\n{summary}",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        )

    def write(self, path: Path) -> Path:
        path.write_text("\n".join(json.dumps(ln) for ln in self.lines) + "\n")
        return path


def turns(c: Chain, tag: str, n: int, prompt: int) -> None:
    for i in range(n):
        c.user(f"{tag}: step {i} — check the stock levels in warehouse {i} and report")
        c.assistant(f"{tag}: warehouse {i} holds {100 + i} pallets; " + f"row {i} " * 600, prompt)
        prompt += 300


def two_compactions(tmp_path: Path) -> Path:
    c = Chain()
    turns(c, "before-first", 4, 20_000)
    c.compact("Ana asked for stock levels of warehouses 0-3.", pre=41_000, trigger="auto")
    turns(c, "between", 3, 9_000)
    c.compact("Warehouses 0-3 counted; then the between steps.", pre=38_000)
    turns(c, "after-second", 4, 7_000)
    c.user("latest ask: write the totals to stock.csv")
    return c.write(tmp_path / f"{SESSION}.jsonl")


def subagent_session(tmp_path: Path) -> Path:
    main_chain = Chain()
    main_chain.user("audit the inventory module for dead code")
    main_chain.assistant("Delegating the search.", 5_000, [("toolu_01", "Task")])
    main_chain.result("toolu_01", "The subagent found 3 unused functions in inventory/util.py")
    main_chain.assistant("Three unused functions; removing them.", 5_400)
    path = main_chain.write(tmp_path / f"{SESSION}.jsonl")
    sub = Chain(sidechain=True, agent="a91c2f0")
    sub.user("Find unused functions in inventory/")
    sub.assistant("Searching with grep.", 3_000)
    sub.user("grep output: util.py: def legacy_sum, def old_round, def tmp_fix")
    sub.assistant("3 unused functions in inventory/util.py", 3_200)
    folder = tmp_path / SESSION / "subagents"
    folder.mkdir(parents=True)
    sub.write(folder / "agent-a91c2f0.jsonl")
    return path
