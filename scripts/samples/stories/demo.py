"""demo.json: the Hermes session the inspector and the pipeline are shown on.

The story is data: ``data/stories/demo.jsonl``, one step a line (see ``steps``), replayed
here through the Hermes log, the virtual repo and the simulated test suite. A step is a user message, an
assistant message with its tool calls, or a change to the world between messages (a bug
fixed, a file written, tests added, a mark for the manifest). Tool calls name a tool of
:class:`DemoTools` and its arguments, so reads, edits, searches and test runs are computed
from the repo and suite as they stand at that step, never copied.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import (
    LATEST_ASK,
    Clock,
    Ids,
    data_text,
    data_url,
    env_file,
    make_secrets,
    png_ci_dashboard,
    png_invoice,
    rng_for,
    role_counts,
    write_text,
)
from ..project import PROJECT_FILES, Repo, Suite, build_inventory, demo_bugs
from ..tools import (
    HERMES_TOOLS,
    Call,
    grep_repo,
    hermes_system_prompt,
    patch_out,
    read_out,
    search_out,
    term,
)
from ..writers import HermesLog
from .steps import Values, read_steps

START = datetime(2025, 9, 16, 8, 41, 7, 118233, tzinfo=UTC)

#: The screenshots users paste, by the name steps give them.
IMAGES = {
    "ci_dashboard": lambda: data_url(png_ci_dashboard(rng_for("demo-png-ci"))),
    "invoice": lambda: data_url(png_invoice(rng_for("demo-png-invoice"))),
}


class DemoTools:
    """The demo's tool calls, each computed from the repo and the suite at the time it runs."""

    def __init__(self, repo: Repo, suite: Suite) -> None:
        self.repo = repo
        self.suite = suite

    def sh(self, command: str, output: str, code: int = 0, **extra: Any) -> Call:
        return ("terminal", {"command": command, **extra}, term(output, code))

    def pytest(self, *targets: str, flags: str = "-q") -> Call:
        output, code = self.suite.run(targets or ("tests",), stop_first="-x" in flags)
        cmd = f"python -m pytest {flags} {' '.join(targets)}".rstrip()
        return self.sh(cmd, output, code)

    def read(self, path: str, offset: int | None = None, limit: int | None = None) -> Call:
        args: dict[str, Any] = {"path": path}
        if offset is not None:
            args["offset"] = offset
        if limit is not None:
            args["limit"] = limit
        return ("read_file", args, read_out(self.repo, path, offset or 1, limit))

    def edit(self, path: str, old: str, new: str) -> Call:
        args = {"mode": "replace", "path": path, "old_string": old, "new_string": new}
        return ("patch", args, patch_out(self.repo, path, old, new))

    def edit_many(self, path: str, edits: Sequence[tuple[str, str]]) -> Call:
        diff = self.repo.patch_many(path, edits)
        out = {"success": True, "diff": diff, "files_modified": [path]}
        return (
            "patch",
            {"mode": "patch", "patch": diff + "\n"},
            json.dumps(out, ensure_ascii=False),
        )

    def search(
        self, pattern: str, needle: str, paths: Sequence[str], path: str = "src", glob: str = "*.py"
    ) -> Call:
        hits = grep_repo(self.repo, needle, paths)
        return (
            "search_files",
            {"pattern": pattern, "path": path, "file_glob": glob},
            search_out(hits),
        )

    def todo(self, items: Sequence[tuple[str, str, str]], merge: bool = False) -> Call:
        todos = [{"id": i, "content": c, "status": st} for i, c, st in items]
        states = ("pending", "in_progress", "completed")
        counts = {k: sum(1 for _, _, st in items if st == k) for k in states}
        args: dict[str, Any] = {"todos": todos}
        if merge:
            args["merge"] = True
        out = {"todos": todos, "summary": {"total": len(todos), **counts}}
        return ("todo", args, json.dumps(out, ensure_ascii=False))

    def git_diff_file(self, path: str, before: str) -> Call:
        head = f"diff --git a/{path} b/{path}\nindex 3f1c2a9..8e0b7d4 100644\n"
        return self.sh(f"git diff {path}", head + Repo.diff(path, before, self.repo.text(path)))


class DemoStory(Values):
    """Replays the demo's steps; ``marks`` are the message indexes the manifest points at."""

    def __init__(self) -> None:
        super().__init__()
        rng = rng_for("demo")
        self.ids = Ids(rng)
        self.clock = Clock(START, rng)
        self.repo = Repo(PROJECT_FILES)
        self.repo.write("CHANGELOG.md", data_text("ledgerline/CHANGELOG.md"))
        self.repo.write(".env", env_file(make_secrets(rng_for("demo-secrets"))))
        self.suite = Suite(build_inventory(), rng_for("demo-suite"), self.repo)
        for bug in demo_bugs(self.repo):
            self.suite.add(bug, active=bug.key != "flaky_dedupe")
        self.tools = DemoTools(self.repo, self.suite)
        self.log = HermesLog(self.ids, self.clock)
        self.marks: dict[str, Any] = {"invoice_reads": []}

    def part(self, part: dict[str, Any]) -> str:
        if "image" in part:
            return IMAGES[part["image"]]()
        if "verbose_log" in part:
            return self.suite.verbose_log(part["verbose_log"])[0]
        out = self.suite.run(tuple(part["run"]))[0]
        take = part["take"]
        if take == "head":
            return out.split("\n=")[0]
        if take == "body":
            return "\n".join(out.split("\n")[:-1])
        return out.split("\n")[-1] if take == "last" else out

    def call(self, spec: dict[str, Any]) -> Call:
        if "call" in spec:
            name, args, result = self.resolve(spec["call"])
            return (name, args, result)
        (tool,) = (k for k in spec if k != "kw")
        return getattr(self.tools, tool)(
            *self.resolve(spec[tool]), **self.resolve(spec.get("kw", {}))
        )

    def play(self, step: dict[str, Any]) -> None:
        kind = next(iter(step))
        value = step[kind]
        suite = self.suite
        if kind == "user":
            self.log.user(self.resolve(value))
        elif kind == "assistant":
            calls = [self.call(c) for c in step.get("calls", ())]
            self.log.assistant(value, *calls, reasoning=step.get("reasoning"))
        elif kind == "mark":
            index = len(self.log.messages) - 1
            if isinstance(self.marks.get(value), list):
                self.marks[value].append(index)
            else:
                self.marks[value] = index
        elif kind == "fix":
            suite.fix(value)
        elif kind == "write":
            self.repo.write(*self.resolve(value))
        elif kind == "extend":
            suite.inventory.extend(value)
        elif kind == "activate":
            suite.active.add(value)
        elif kind == "deactivate":
            suite.active.discard(value)
        elif kind == "skip_hex":  # an id the story drew here (a background process id)
            self.ids.hex(value)
        else:
            raise ValueError(f"demo: unknown step {kind!r}")


def build_demo(out_dir: Path) -> dict[str, Any]:
    story = DemoStory()
    for step in read_steps("demo"):
        story.play(step)
    h, marks = story.log, story.marks
    doc = {
        "session_id": "20250916_084107_a3f9c1",
        "model": "anthropic/claude-sonnet-4",
        "base_url": "https://openrouter.ai/api/v1",
        "platform": "cli",
        "session_start": START.replace(tzinfo=None).isoformat(),
        "last_updated": story.clock.local(),
        "system_prompt": hermes_system_prompt(),
        "tools": HERMES_TOOLS,
        "message_count": len(h.messages),
        "messages": h.messages,
    }
    write_text(out_dir / "demo.json", json.dumps(doc, ensure_ascii=False, indent=2) + "\n")

    reads = [h.messages[i]["content"] for i in marks["invoice_reads"]]
    if len(set(reads)) != 1 or len(reads) != 3:
        raise AssertionError("demo: the three invoice.py reads must be identical")
    if len(json.loads(h.messages[marks["long_output"]]["content"])["output"].split("\n")) != 3000:
        raise AssertionError("demo: the long output must be exactly 3,000 lines")
    return {
        "format": "hermes",
        "rule": "Hermes session log: every entry of `messages` is one message, in order; the top-level "
        "system_prompt is not a message. Tool calls are the entries of assistant `tool_calls`. A message "
        "whose content starts with the compaction prefix is a summary (user role here). Hermes logs do not "
        "record what triggered a compaction or the token count before it, so trigger is unknown and "
        "pre_tokens null.",
        "messages": len(h.messages),
        "roles": role_counts(m["role"] for m in h.messages),
        "tool_calls": h.tool_calls,
        "tool_results": sum(1 for m in h.messages if m["role"] == "tool"),
        "compactions": h.compactions,
        "images": h.images,
        "model": doc["model"],
        "session_id": doc["session_id"],
        "system_prompt_chars": len(doc["system_prompt"]),
        "tools": len(HERMES_TOOLS),
        "parallel_tool_call_messages": sum(
            1 for m in h.messages if len(m.get("tool_calls") or ()) > 1
        ),
        "repeated_read": {
            "path": "src/app/billing/invoice.py",
            "tool_message_indexes": marks["invoice_reads"],
        },
        "long_output": {"tool_message_index": marks["long_output"], "lines": 3000},
        "failing_command": {"tool_message_index": marks["failing_command"], "exit_code": 1},
        "secrets": {
            "tool_message_index": marks["env_read"],
            "kinds": [
                "openai_api_key",
                "aws_access_key_id",
                "aws_secret_access_key",
                "github_token",
                "postgres_url_password",
                "jwt",
                "stripe_secret_key",
                "stripe_webhook_secret",
            ],
        },
        "latest_user_ask": {"index": marks["latest_ask"], "text": LATEST_ASK},
    }
