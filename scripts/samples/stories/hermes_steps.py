"""Hermes stories as data: the tools their steps call and the replayer (see ``steps``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..project import Repo, Suite
from ..tools import Call
from ..writers import ChatLog
from .steps import LogStory


def suite_part(suite: Suite, part: dict[str, Any]) -> str:
    """A step's simulated test run: ``{"run": targets, "take": all | head | body | last}``
    (head: before the summary section; body: all but the last line; last: the last line)."""
    out = suite.run(tuple(part["run"]))[0]
    take = part["take"]
    if take == "head":
        return out.split("\n=")[0]
    if take == "body":
        return "\n".join(out.split("\n")[:-1])
    return out.split("\n")[-1] if take == "last" else out


def _json(doc: Any) -> str:
    return json.dumps(doc, ensure_ascii=False)


class HermesTools:
    """Hermes tool calls a step names, each computed from the repo and the suite (if the story
    has one) at the time it runs."""

    def __init__(self, repo: Repo, suite: Suite | None = None) -> None:
        self.repo = repo
        self.suite = suite

    def sh(self, command: str, output: str, code: int = 0, **extra: Any) -> Call:
        out = _json({"output": output, "exit_code": code, "error": None})
        return ("terminal", {"command": command, **extra}, out)

    def pytest(self, *targets: str, flags: str = "-q") -> Call:
        assert self.suite is not None, "this story has no test suite"
        output, code = self.suite.run(targets or ("tests",), stop_first="-x" in flags)
        cmd = f"python -m pytest {flags} {' '.join(targets)}".rstrip()
        return self.sh(cmd, output, code)

    def read(self, path: str, offset: int | None = None, limit: int | None = None) -> Call:
        more = {"offset": offset, "limit": limit}
        args = {"path": path, **{k: v for k, v in more.items() if v is not None}}
        start, total = offset or 1, len(self.repo.lines(path))
        truncated = limit is not None and start - 1 + limit < total
        body: dict[str, Any] = {
            "content": self.repo.numbered(path, start, limit),
            "total_lines": total,
            "file_size": len(self.repo.text(path).encode()),
            "truncated": truncated,
        }
        if limit is not None and truncated:
            shown = f"showing {start}-{start + limit - 1} of {total} lines"
            body["hint"] = f"Use offset={start + limit} to continue reading ({shown})"
        return ("read_file", args, _json(body))

    def edit(self, path: str, old: str, new: str) -> Call:
        args = {"mode": "replace", "path": path, "old_string": old, "new_string": new}
        diff = self.repo.patch(path, old, new)
        return ("patch", args, _json({"success": True, "diff": diff, "files_modified": [path]}))

    def edit_many(self, path: str, edits: Sequence[tuple[str, str]]) -> Call:
        diff = self.repo.patch_many(path, edits)
        out = {"success": True, "diff": diff, "files_modified": [path]}
        return ("patch", {"mode": "patch", "patch": diff + "\n"}, _json(out))

    def search(
        self, pattern: str, needle: str, paths: Sequence[str], path: str = "src", glob: str = "*.py"
    ) -> Call:
        args = {"pattern": pattern, "path": path, "file_glob": glob}
        lines = ((p, i, ln) for p in paths for i, ln in enumerate(self.repo.lines(p), start=1))
        hits = [{"path": p, "line": i, "content": ln.strip()} for p, i, ln in lines if needle in ln]
        return ("search_files", args, _json({"total_count": len(hits), "matches": hits}))

    def todo(self, items: Sequence[tuple[str, str, str]], merge: bool = False) -> Call:
        todos = [{"id": i, "content": c, "status": st} for i, c, st in items]
        states = ("pending", "in_progress", "completed")
        counts = {k: sum(1 for _, _, st in items if st == k) for k in states}
        args: dict[str, Any] = {"todos": todos, **({"merge": True} if merge else {})}
        return ("todo", args, _json({"todos": todos, "summary": {"total": len(todos), **counts}}))

    def git_diff_file(self, path: str, before: str) -> Call:
        head = f"diff --git a/{path} b/{path}\nindex 3f1c2a9..8e0b7d4 100644\n"
        return self.sh(f"git diff {path}", head + Repo.diff(path, before, self.repo.text(path)))


class HermesStory(LogStory):
    """Replays Hermes steps: ``user`` and ``assistant`` (its text, then its tool calls: each a
    ``$tool`` of :class:`HermesTools` or a literal ``[name, args, result]``) are
    :class:`ChatLog` calls; ``mark`` keeps the last message's index in ``marks`` for the
    manifest, ``fix`` fixes a bug of the suite, and ``{"run": ...}`` parts are test runs."""

    def __init__(self, logs: dict[str, ChatLog], tools: HermesTools, ids: Any = None) -> None:
        super().__init__(logs, tools, ids)
        self.marks: dict[str, Any] = {}

    def step_mark(self, name: str, step: dict[str, Any]) -> None:
        index = len(self.log.messages) - 1
        if isinstance(self.marks.get(name), list):
            self.marks[name].append(index)
        else:
            self.marks[name] = index

    def step_fix(self, bug: str, step: dict[str, Any]) -> None:
        self.tools.suite.fix(bug)

    def part(self, part: dict[str, Any]) -> str:
        return suite_part(self.tools.suite, part)
