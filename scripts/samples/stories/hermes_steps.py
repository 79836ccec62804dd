"""Hermes stories as data: the tools their steps call and the replayer (see ``steps``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ..project import Repo, Suite
from ..tools import Call, grep_repo, patch_out, read_out, search_out, term
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


class HermesTools:
    """Hermes tool calls a step names, each computed from the repo and the suite (if the story
    has one) at the time it runs."""

    def __init__(self, repo: Repo, suite: Suite | None = None) -> None:
        self.repo = repo
        self.suite = suite

    def sh(self, command: str, output: str, code: int = 0, **extra: Any) -> Call:
        return ("terminal", {"command": command, **extra}, term(output, code))

    def pytest(self, *targets: str, flags: str = "-q") -> Call:
        assert self.suite is not None, "this story has no test suite"
        output, code = self.suite.run(targets or ("tests",), stop_first="-x" in flags)
        cmd = f"python -m pytest {flags} {' '.join(targets)}".rstrip()
        return self.sh(cmd, output, code)

    def read(self, path: str, offset: int | None = None, limit: int | None = None) -> Call:
        more = {"offset": offset, "limit": limit}
        args = {"path": path, **{k: v for k, v in more.items() if v is not None}}
        return ("read_file", args, read_out(self.repo, path, offset or 1, limit))

    def edit(self, path: str, old: str, new: str) -> Call:
        args = {"mode": "replace", "path": path, "old_string": old, "new_string": new}
        return ("patch", args, patch_out(self.repo, path, old, new))

    def edit_many(self, path: str, edits: Sequence[tuple[str, str]]) -> Call:
        diff = self.repo.patch_many(path, edits)
        out = {"success": True, "diff": diff, "files_modified": [path]}
        args = {"mode": "patch", "patch": diff + "\n"}
        return ("patch", args, json.dumps(out, ensure_ascii=False))

    def search(
        self, pattern: str, needle: str, paths: Sequence[str], path: str = "src", glob: str = "*.py"
    ) -> Call:
        args = {"pattern": pattern, "path": path, "file_glob": glob}
        return ("search_files", args, search_out(grep_repo(self.repo, needle, paths)))

    def todo(self, items: Sequence[tuple[str, str, str]], merge: bool = False) -> Call:
        todos = [{"id": i, "content": c, "status": st} for i, c, st in items]
        states = ("pending", "in_progress", "completed")
        counts = {k: sum(1 for _, _, st in items if st == k) for k in states}
        args: dict[str, Any] = {"todos": todos, **({"merge": True} if merge else {})}
        out = {"todos": todos, "summary": {"total": len(todos), **counts}}
        return ("todo", args, json.dumps(out, ensure_ascii=False))

    def git_diff_file(self, path: str, before: str) -> Call:
        head = f"diff --git a/{path} b/{path}\nindex 3f1c2a9..8e0b7d4 100644\n"
        return self.sh(f"git diff {path}", head + Repo.diff(path, before, self.repo.text(path)))


class HermesStory(LogStory):
    """Replays Hermes steps: ``user`` and ``assistant`` (its text, then its tool calls: each a
    ``$tool`` of :class:`HermesTools` or a literal ``[name, args, result]``) are
    :class:`ChatLog` calls, ``session`` switches logs, and ``mark`` keeps the last
    message's index in ``marks`` for the manifest. Other steps change the story's world
    (``fix``: a bug of the suite); subclasses handle more in :meth:`play_world`."""

    def __init__(self, logs: dict[str, ChatLog], tools: HermesTools, ids: Any = None) -> None:
        super().__init__(logs, tools, ids)
        self.marks: dict[str, Any] = {}

    def play(self, step: dict[str, Any]) -> None:
        kind, value = next(iter(step.items()))
        if kind in ("user", "assistant", "session"):
            super().play(step)
        elif kind == "mark":
            index = len(self.log.messages) - 1
            if isinstance(self.marks.get(value), list):
                self.marks[value].append(index)
            else:
                self.marks[value] = index
        else:
            self.play_world(kind, value)

    def play_world(self, kind: str, value: Any) -> None:
        if kind != "fix" or self.tools.suite is None:
            raise ValueError(f"unknown step {kind!r}")
        self.tools.suite.fix(value)
