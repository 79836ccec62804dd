"""The Claude Code sample: a JSONL project log with a subagent, a rewind and two compactions.

The story is data (``data/stories/claude_code.jsonl``, see ``steps``), replayed here."""

from __future__ import annotations

import base64
import difflib
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import CWD, Clock, Ids, prompt_span, rng_for, roles_counts, write_jsonl
from ..project import PROJECT_FILES, Repo
from ..shapes import cc_bash_result, cc_read_result
from ..writers import CC_MODEL, ClaudeCodeLog
from .steps import Values, read_steps


def _cc_read_result(
    repo: Repo, path: str, offset: int = 1, limit: int | None = None
) -> tuple[str, dict[str, Any]]:
    lines = repo.lines(path)
    end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
    text = repo.numbered(path, offset, limit, arrow=True)
    raw = "\n".join(lines[offset - 1 : end])
    return text, cc_read_result(f"{CWD}/{path}", raw, offset, end - offset + 1, len(lines))


def _cc_edit_result(repo: Repo, path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
    before = repo.text(path)
    repo.patch(path, old, new)
    after = repo.text(path)
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
        hunks.append(
            {
                "oldStart": i1 + 1,
                "oldLines": i2 - i1,
                "newStart": j1 + 1,
                "newLines": j2 - j1,
                "lines": lines,
            }
        )
    start = repo.find_line(path, new.splitlines()[0]) if new.strip() else 1
    window = repo.numbered(path, max(1, start - 2), 8, arrow=True)
    msg = f"The file {CWD}/{path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{window}"
    return msg, {
        "filePath": f"{CWD}/{path}",
        "oldString": old,
        "newString": new,
        "originalFile": before,
        "structuredPatch": hunks,
        "userModified": False,
        "replaceAll": False,
    }


class ClaudeCodeStory(Values):
    """Replays the Claude Code steps (see ``steps``) through a :class:`ClaudeCodeLog`.

    Steps: ``patch`` (the repo before the session), ``prompt``, ``assistant`` (content
    blocks: text, think, tool), ``result`` (a read or edit computed on a repo, a bash
    output, or literal content), ``snapshot``, ``compact`` and ``finish``; and the log's
    own plumbing the story turns by hand: ``set`` an attribute (the subagent's sidechain,
    the rewind's tip and counting), ``set_line`` a key of a written line, ``save_tip`` and
    ``uuid`` to name a value for later steps.
    """

    def __init__(self) -> None:
        super().__init__()
        self.rng = rng_for("claude-code")
        self.ids = Ids(self.rng)
        clock = Clock(datetime(2025, 9, 18, 13, 2, 11, 0, tzinfo=UTC), self.rng)
        self.session = self.ids.uuid()
        self.log = ClaudeCodeLog(self.ids, clock, self.session, "fix/payments-idempotency")
        wh = "src/app/payments/webhooks.py"
        self.repos = {"client": Repo(PROJECT_FILES), "webhooks": Repo({wh: PROJECT_FILES[wh]})}

    def block(self, spec: dict[str, Any]) -> dict[str, Any]:
        if "tool" in spec:
            return {"type": "tool_use", "name": spec["tool"], "input": self.resolve(spec["input"])}
        if "text" in spec:
            return {"type": "text", "text": spec["text"]}
        rng = self.rng
        signature = bytes(rng.getrandbits(8) for _ in range(rng.randint(200, 360)))
        return {
            "type": "thinking",
            "thinking": spec["think"],
            "signature": base64.b64encode(signature).decode(),
        }

    def result(self, step: dict[str, Any], kw: dict[str, Any]) -> None:
        tur: Any
        if "read" in step:
            repo, *args = step["read"]
            content, tur = _cc_read_result(self.repos[repo], *args)
        elif "edit" in step:
            repo, *args = step["edit"]
            content, tur = _cc_edit_result(self.repos[repo], *args)
        elif "bash" in step:
            content, tur = step["bash"], cc_bash_result(step["bash"])
        else:
            content, tur = self.resolve(step["content"]), self.resolve(step["tool_use_result"])
        self.log.result(self.resolve(step["result"]), content, tur, **kw)

    def play(self, step: dict[str, Any]) -> None:
        kind = next(iter(step))
        value = step[kind]
        kw = self.resolve(step.get("kw", {}))
        log = self.log
        if kind == "prompt":
            self.name(step, log.prompt(self.resolve(value), **kw))
        elif kind == "assistant":
            self.name(step, log.assistant(*(self.block(b) for b in value), **kw))
        elif kind == "result":
            self.result(step, kw)
        elif kind in ("snapshot", "compact"):
            getattr(log, kind)(*self.resolve(value))
        elif kind == "patch":  # a change made before the session (``[repo, path, old, new]``)
            repo, *args = value
            self.repos[repo].patch(*args)
        elif kind == "finish":
            log.finish(value)
        elif kind == "uuid":
            self.names[value] = self.ids.uuid()
        elif kind == "save_tip":
            self.names[value] = log.tip
        elif kind == "set":
            setattr(log, value, self.resolve(step["value"]))
        elif kind == "set_line":
            *path, last = step["keys"]
            target = log.lines[value]
            for key in path:
                target = target[key]
            target[last] = self.resolve(step["value"])
        else:
            raise ValueError(f"claude-code: unknown step {kind!r}")


def build_claude_code(out_dir: Path) -> dict[str, Any]:
    story = ClaudeCodeStory()
    for step in read_steps("claude_code"):
        story.play(step)
    cc, session = story.log, story.session
    title = "Idempotent payment retries and webhook dedupe fix"
    cc.lines.insert(0, {"type": "summary", "summary": title, "leafUuid": cc.tip})

    write_jsonl(out_dir / "claude-code.jsonl", cc.lines)
    return {
        "format": "claude-code",
        **roles_counts(cc.roles, cc.tool_calls),
        "compactions": cc.compactions,
        "images": cc.images,
        "model": CC_MODEL,
        "session_id": session,
        "lines": len(cc.lines),
        "injected_user_messages": cc.injected,
        # The sidechain lines above all belong to one subagent.
        "subagents": ["a7c2e91f"],
        "excluded": {
            "sidechain_messages": cc.excluded["sidechain"],
            "sidechain_lines": cc.excluded_lines["sidechain"],
            "abandoned_branch_messages": cc.excluded["abandoned"],
            "abandoned_branch_lines": cc.excluded_lines["abandoned"],
        },
        "usage_turns": len(cc.main_prompts),
        "prompt_tokens": prompt_span(cc.main_prompts),
        "live_messages_after_last_compaction": len(cc.roles) - cc.compactions[-1]["index"],
    }
