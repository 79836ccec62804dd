"""The list of samples, the manifest and README, ``--check`` and the command line.

Every file is written in its agent's native shape (plain dicts and JSON lines, never through
tinyjuice's writers); every random draw comes from a generator seeded per file and every
timestamp from a fixed start, so the output is byte for byte deterministic. SQLite bytes
can differ between library versions, so ``--check`` falls back to comparing a database's
schema and rows. The manifest's counts come from the writers' own bookkeeping, never from
re-reading the files.
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any

from .common import ROLE_ORDER, SEED, SESSIONS, data_json, data_text, write_json, write_text
from .stories.agents import (
    build_aider,
    build_cline,
    build_codex,
    build_gemini_cli,
    build_glaive,
    build_mini_swe_agent,
    build_opencode,
    build_swe_agent,
)
from .stories.chat import build_anthropic, build_openai, build_sharegpt
from .stories.claude_code import build_claude_code
from .stories.hermes import build_demo, build_gateway, build_state_db

#: Per sample, how a faithful reader turns the file into messages (the manifest's ``rule``).
_RULES: dict[str, str] = data_json("rules.json")
_DESCRIPTIONS: dict[str, str] = data_json("descriptions.json")  # the README's, per sample

#: Each sample's (first) file and its builder, in manifest order.
BUILDERS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "demo.json": build_demo,
    "openai-chat.json": build_openai,
    "anthropic-messages.json": build_anthropic,
    "hermes-gateway.jsonl": build_gateway,
    "hermes-state.db": build_state_db,
    "claude-code.jsonl": build_claude_code,
    "codex-rollout.jsonl": build_codex,
    "sharegpt.jsonl": build_sharegpt,
    "swe-agent.traj": build_swe_agent,
    "gemini-cli-session.jsonl": build_gemini_cli,
    "cline-task/api_conversation_history.json": build_cline,
    "opencode.db": build_opencode,
    "aider-chat-history.md": build_aider,
    "sharegpt-glaive.jsonl": build_glaive,
    "mini-swe-agent.traj.json": build_mini_swe_agent,
}

#: Formats whose files keep the history a compaction replaced: the agent's live context
#: starts again at the last compaction's summary. The other samples hold the compacted
#: list itself (a summary between a protected head and the tail), all of it live.
_RESETTING_FORMATS = frozenset({"claude-code", "codex", "gemini-cli", "cline", "opencode", "aider"})


def _entry(name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """A sample's manifest entry: its format, its reading rule (``data/rules.json``), what
    its builder counted, and the ``live`` / ``history`` split a reader should report."""
    start = 0
    if entry["format"] in _RESETTING_FORMATS and entry.get("compactions"):
        start = entry["compactions"][-1]["index"]
    live = {"from_index": start, "messages": entry["messages"] - start}
    return {
        "format": entry.pop("format"),
        "rule": _RULES[name],
        **entry,
        "live": live,
        "history": {"messages": start},
    }


def _readme(manifest: dict[str, Any]) -> str:
    rows = "\n".join(
        f"| `{name}` | {entry['format']} | {entry['messages']} | {entry['tool_calls']} | {len(entry['compactions'])} | {entry['images']} |"
        for name, entry in manifest["files"].items()
    )
    details = "\n".join(f"- **`{name}`** — {_DESCRIPTIONS[name]}" for name in manifest["files"])
    return data_text("text/sessions_readme.md").format(rows=rows, details=details)


def generate(out_dir: Path) -> dict[str, Any]:
    """Write every sample, the manifest and the README into ``out_dir``; return the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {name: _entry(name, builder(out_dir)) for name, builder in BUILDERS.items()}
    manifest = {
        "generator": "scripts/make_sessions.py",
        "seed": SEED,
        "roles_order": list(ROLE_ORDER),
        "files": files,
    }
    write_json(out_dir / "manifest.json", manifest)
    write_text(out_dir / "README.md", _readme(manifest))
    return manifest


def file_names(out_dir: Path) -> list[str]:
    """Every file under ``out_dir`` (what ``generate`` wrote there), sorted."""
    return sorted(p.relative_to(out_dir).as_posix() for p in out_dir.rglob("*") if p.is_file())


def _db_rows(path: Path) -> list[str]:
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as con:
        return list(con.iterdump())


def check(sessions: Path, workdir: Path | None = None) -> list[str]:
    """Regenerate into a temporary directory and list every difference from ``sessions``."""
    problems: list[str] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        fresh = Path(tmp)
        generate(fresh)
        for name in file_names(fresh):
            new, old = fresh / name, sessions / name
            if not old.exists():
                problems.append(f"{name}: missing from {sessions}")
                continue
            if new.read_bytes() != old.read_bytes():
                problems += _drift(name, new, old)
    return problems


def _drift(name: str, new: Path, old: Path) -> list[str]:
    """The problem with a file whose bytes differ from a fresh generation's (none for a
    database with the same schema and rows: only SQLite's own header bytes differ)."""
    if name.endswith(".db"):
        try:
            if _db_rows(new) == _db_rows(old):
                return []
        except sqlite3.DatabaseError as exc:
            return [f"{name}: not a readable SQLite database ({exc})"]
    return [f"{name}: differs from a fresh generation"]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate tjui's sample sessions deterministically."
    )
    check_help = "regenerate into a temp dir; exit 1 on any difference"
    parser.add_argument("--check", action="store_true", help=check_help)
    sessions_help = "the sessions directory (default: %(default)s)"
    parser.add_argument("--sessions", type=Path, default=SESSIONS, help=sessions_help)
    parser.add_argument("--workdir", type=Path, help="parent directory for --check's temp dir")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.sessions, args.workdir)
        for problem in problems:
            print(f"drift: {problem}", file=sys.stderr)
        if problems:
            print("run `python scripts/make_sessions.py` and commit the result", file=sys.stderr)
            return 1
        print(f"{args.sessions}: up to date ({len(file_names(args.sessions))} files)")
        return 0
    manifest = generate(args.sessions)
    for name, entry in manifest["files"].items():
        print(f"{name:26} {entry['format']:12} {entry['messages']:>4} messages")
    return 0
