"""The Claude Code sample: a JSONL project log with a subagent, a rewind and two compactions.

The story is data (``data/stories/claude_code.jsonl``, see ``steps``), replayed here."""

from __future__ import annotations

import base64
import difflib
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import CWD, noise, prompt_span, seeded, write_jsonl
from ..project import WEBHOOKS, ledgerline
from ..shapes import shape
from ..writers import CC_MODEL, ClaudeCodeLog
from .steps import LogStory

#: A ``structuredPatch`` hunk's keys, in Claude Code's order.
_HUNK_KEYS = ("oldStart", "oldLines", "newStart", "newLines", "lines")

#: A tool result step's arguments: the tool-use id, the content, the ``toolUseResult``.
CCResult = tuple[str, str, dict[str, Any]]


def _hunks(before: str, after: str) -> list[dict[str, Any]]:
    """The ``structuredPatch`` of an edit: unified-diff hunks, 3 lines of context."""
    a, b = before.splitlines(), after.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines = []
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[x1:x2]]
            else:
                lines += ["-" + line for line in a[x1:x2]] + ["+" + line for line in b[y1:y2]]
        values = (i1 + 1, i2 - i1, j1 + 1, j2 - j1, lines)
        hunks.append(dict(zip(_HUNK_KEYS, values, strict=True)))
    return hunks


class ClaudeCodeTools:
    """What the Claude Code steps compute at replay time (``$tool``): a ``result``'s
    arguments for a read or edit on one of the story's repos or a Bash output, and thinking
    blocks (their signatures drawn here)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.repos = {"client": ledgerline(), "webhooks": ledgerline(WEBHOOKS)}

    def read(
        self, tid: str, repo: str, path: str, offset: int = 1, limit: int | None = None
    ) -> CCResult:
        lines = self.repos[repo].lines(path)
        end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
        text = self.repos[repo].numbered(path, offset, limit, arrow=True)
        raw = "\n".join(lines[offset - 1 : end])
        values = {"path": f"{CWD}/{path}", "content": raw, "start": offset, "total": len(lines)}
        return tid, text, shape("cc_read_result", **values, lines=end - offset + 1)

    def edit(self, tid: str, repo: str, path: str, old: str, new: str) -> CCResult:
        files = self.repos[repo]
        before = files.text(path)
        files.patch(path, old, new)
        start = files.find_line(path, new.splitlines()[0]) if new.strip() else 1
        window = files.numbered(path, max(1, start - 2), 8, arrow=True)
        msg = f"The file {CWD}/{path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{window}"
        values = {"path": f"{CWD}/{path}", "old": old, "new": new, "before": before}
        return tid, msg, shape("cc_edit_result", **values, hunks=_hunks(before, files.text(path)))

    @staticmethod
    def bash(tid: str, output: str) -> CCResult:
        return (tid, output, shape("cc_bash_result", stdout=output, stderr=""))

    def thinking(self, text: str) -> dict[str, Any]:
        signature = base64.b64encode(noise(self.rng, 200, 360)).decode()
        block: dict[str, Any] = shape("thinking_block", text=text, signature=signature)
        return block


class ClaudeCodeStory(LogStory):
    """Replays the Claude Code steps (see ``steps``) through a :class:`ClaudeCodeLog`: its
    methods (``prompt``, ``assistant``, ``result``, ``snapshot``, ``compact``, ``finish``),
    and three steps of its own: ``patch`` (the repo before the session: ``[repo, path, old,
    new]``), ``save_tip`` (name the log's tip) and ``set_line`` (a key of a written line)."""

    def __init__(self) -> None:
        ids, clock = seeded("claude-code", datetime(2025, 9, 18, 13, 2, 11, 0, tzinfo=UTC))
        self.session = ids.uuid()
        log = ClaudeCodeLog(ids, clock, self.session)
        self.cc_tools = ClaudeCodeTools(ids.rng)
        super().__init__({"log": log}, self.cc_tools, ids)
        self.cc = log

    def step_patch(self, value: list[str], step: dict[str, Any]) -> None:
        repo, *args = value
        self.cc_tools.repos[repo].patch(*args)

    def step_save_tip(self, name: str, step: dict[str, Any]) -> None:
        self.names[name] = self.cc.tip

    def step_set_line(self, index: int, step: dict[str, Any]) -> None:
        *path, last = step["keys"]
        target = self.cc.lines[index]
        for key in path:
            target = target[key]
        target[last] = self.resolve(step["value"])


def build_claude_code(out_dir: Path) -> dict[str, Any]:
    story = ClaudeCodeStory()
    story.replay("claude_code")
    cc, session = story.cc, story.session
    title = "Idempotent payment retries and webhook dedupe fix"
    cc.lines.insert(0, {"type": "summary", "summary": title, "leafUuid": cc.tip})

    write_jsonl(out_dir / "claude-code.jsonl", cc.lines)
    return cc.entry(
        "claude-code",
        CC_MODEL,
        session_id=session,
        lines=len(cc.lines),
        injected_user_messages=cc.injected,
        subagents=["a7c2e91f"],  # the sidechain lines above all belong to one subagent
        excluded=cc.excluded,
        usage_turns=len(cc.main_prompts),
        prompt_tokens=prompt_span(cc.main_prompts),
        live_messages_after_last_compaction=len(cc.roles) - cc.compactions[-1]["index"],
    )
