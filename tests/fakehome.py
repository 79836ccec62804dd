"""A fake home directory holding one or two sessions of every agent tjui discovers.

Real on-disk layouts (Claude Code projects with a subagent, Codex rollouts, a Hermes
state.db and session log, Gemini CLI chats, opencode's database and JSON storage,
Cline and Roo tasks), with made-up content. Every file gets a fixed mtime so lists
sort the same way on every run.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

#: The fixed "now" of tests that show ages; files are this many seconds older.
NOW = 1_795_000_000.0

#: opencode's tables, as the sample generator writes them (one copy of the schema).
OPENCODE_SCHEMA = (
    Path(__file__).resolve().parents[1] / "scripts/samples/data/text/opencode_schema.sql"
).read_text(encoding="utf-8")

ROOT_VARS = (
    "TJUI_CLAUDE_HOME",
    "TJUI_CODEX_HOME",
    "TJUI_HERMES_HOME",
    "TJUI_GEMINI_HOME",
    "TJUI_OPENCODE_HOME",
    "TJUI_VSCODE_STORAGE",
)


def _jsonl(path: Path, records: list[dict[str, object]], age: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    os.utime(path, (NOW - age, NOW - age))
    return path


def _json(path: Path, doc: object, age: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1), encoding="utf-8")
    os.utime(path, (NOW - age, NOW - age))
    return path


def _claude_line(
    kind: str, n: int, content: object, sid: str, **extra: object
) -> dict[str, object]:
    line: dict[str, object] = {
        "parentUuid": f"u{n - 1}" if n > 1 else None,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/home/ana/src/birdfeed",
        "sessionId": sid,
        "version": "2.0.30",
        "type": kind,
        "uuid": f"u{n}",
        "timestamp": f"2026-11-20T10:00:{n:02d}.000Z",
    }
    if kind == "user":
        line["message"] = {"role": "user", "content": content}
    else:
        line["message"] = {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": content,
            "stop_reason": "end_turn",
            "usage": {
                "input_tokens": 900 + n,
                "output_tokens": 40,
                "cache_read_input_tokens": 0,
                "cache_creation_input_tokens": 0,
            },
        }
        line["requestId"] = f"req_{n}"
    line.update(extra)
    return line


def claude_records(sid: str, turns: int = 2) -> list[dict[str, object]]:
    """A Claude Code session: a title line, then ``turns`` user/assistant exchanges."""
    out: list[dict[str, object]] = [
        {"type": "summary", "summary": "Birdfeed RSS parser fix", "leafUuid": f"u{2 * turns}"}
    ]
    for t in range(turns):
        n = 2 * t + 1
        ask = (
            "Why does the RSS parser drop items with an empty guid?" if t == 0 else f"And step {t}?"
        )
        out.append(_claude_line("user", n, ask, sid))
        out.append(
            _claude_line("assistant", n + 1, [{"type": "text", "text": f"Answer {t}."}], sid)
        )
    return out


def _claude(base: Path) -> None:
    sid = "6f1c2a90-1111-4c3e-9d2b-000000000001"
    project = base / "projects" / "-home-ana-src-birdfeed"
    _jsonl(project / f"{sid}.jsonl", claude_records(sid), age=60)
    sub = [
        _claude_line(
            "user", 1, "Search the repo for guid handling.", sid, isSidechain=True, agentId="a1"
        ),
        _claude_line(
            "assistant",
            2,
            [{"type": "text", "text": "Found two places."}],
            sid,
            isSidechain=True,
            agentId="a1",
        ),
    ]
    _jsonl(project / sid / "subagents" / "agent-a1.jsonl", sub, age=90)


def _codex(base: Path) -> None:
    ts = "2026-11-19T09:00:00.000Z"

    def item(kind: str, payload: dict[str, object]) -> dict[str, object]:
        return {"timestamp": ts, "type": kind, "payload": payload}

    records = [
        item(
            "session_meta",
            {
                "id": "0199aaaa-2222-7000-8000-000000000002",
                "timestamp": ts,
                "cwd": "/home/ana/src/tidepool",
                "originator": "codex_cli_rs",
                "cli_version": "0.50.0",
                "instructions": "You are Codex.",
            },
        ),
        item("turn_context", {"cwd": "/home/ana/src/tidepool", "model": "gpt-5-codex"}),
        item(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {
                        "type": "input_text",
                        "text": "<environment_context>\n  <cwd>/home/ana/src/tidepool</cwd>\n</environment_context>",
                    }
                ],
            },
        ),
        item(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Add a --dry-run flag to the tide importer."}
                ],
            },
        ),
        item(
            "event_msg",
            {"type": "user_message", "message": "Add a --dry-run flag to the tide importer."},
        ),
        item(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "Added --dry-run; nothing is written with it."}
                ],
            },
        ),
        item(
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "last_token_usage": {
                        "input_tokens": 5000,
                        "cached_input_tokens": 0,
                        "output_tokens": 30,
                        "reasoning_output_tokens": 0,
                        "total_tokens": 5030,
                    },
                    "model_context_window": 272000,
                },
            },
        ),
    ]
    name = "rollout-2026-11-19T09-00-00-0199aaaa-2222-7000-8000-000000000002.jsonl"
    _jsonl(base / "sessions" / "2026" / "11" / "19" / name, records, age=3600)


def _hermes(base: Path) -> None:
    from tinyjuice.formats._hermes_state import create_schema

    base.mkdir(parents=True, exist_ok=True)
    db = base / "state.db"
    with sqlite3.connect(db) as conn:
        create_schema(conn)
        conn.execute(
            "INSERT INTO sessions (id, model, system_prompt, started_at) VALUES (?,?,?,?)",
            ("20261118_080000_abc123", "anthropic/claude-sonnet-4", "You are Hermes.", NOW - 7200),
        )
        for i, (role, text) in enumerate(
            [
                ("user", "Rename the kiln module to furnace."),
                ("assistant", "Renamed; imports updated."),
            ]
        ):
            conn.execute(
                "INSERT INTO messages (session_id, role, content, timestamp) VALUES (?,?,?,?)",
                ("20261118_080000_abc123", role, text, NOW - 7200 + i),
            )
    conn.close()
    os.utime(db, (NOW - 7000, NOW - 7000))
    _json(
        base / "sessions" / "session_20261117_070000_def456.json",
        {
            "session_id": "20261117_070000_def456",
            "model": "anthropic/claude-sonnet-4",
            "platform": "cli",
            "session_start": "2026-11-17T07:00:00",
            "last_updated": "2026-11-17T07:10:00",
            "system_prompt": "You are Hermes.",
            "tools": [],
            "message_count": 2,
            "messages": [
                {"role": "user", "content": "Summarise the open kiln issues."},
                {"role": "assistant", "content": "Three are open: #4, #9, #12."},
            ],
        },
        age=86400,
    )


def _gemini(base: Path) -> None:
    _json(
        base / "tmp" / "9c1f0e7d2b" / "chats" / "session-2026-11-16T06-00-abcd1234.json",
        {
            "sessionId": "abcd1234-0000-4000-8000-000000000004",
            "projectHash": "9c1f0e7d2b",
            "startTime": "2026-11-16T06:00:00.000Z",
            "lastUpdated": "2026-11-16T06:05:00.000Z",
            "messages": [
                {
                    "id": "m1",
                    "timestamp": "2026-11-16T06:00:00.000Z",
                    "type": "user",
                    "content": "Explain the lantern build script.",
                },
                {
                    "id": "m2",
                    "timestamp": "2026-11-16T06:00:09.000Z",
                    "type": "gemini",
                    "content": "It compiles the shaders, then bundles.",
                    "thoughts": [],
                    "tokens": {
                        "input": 2100,
                        "output": 12,
                        "cached": 0,
                        "thoughts": 0,
                        "tool": 0,
                        "total": 2112,
                    },
                    "model": "gemini-2.5-pro",
                },
            ],
        },
        age=2 * 86400,
    )


def _opencode(base: Path) -> None:
    base.mkdir(parents=True, exist_ok=True)
    db = base / "opencode.db"
    with sqlite3.connect(db) as conn:
        conn.executescript(OPENCODE_SCHEMA)  # the sample generator's copy
        conn.execute(
            "INSERT INTO session VALUES (?,?,?,?,?,?,?,?)",
            (
                "ses_0001",
                "prj1",
                None,
                "/home/ana/src/quarry",
                "Speed up the quarry tests",
                "1.2.0",
                int((NOW - 4 * 86400) * 1000),
                int((NOW - 3 * 86400) * 1000),
            ),
        )
        texts = ("Why are the quarry tests slow?", "Fixtures rebuild the DB.", "Cache it then.")
        for i, (role, text) in enumerate(zip(("user", "assistant", "user"), texts, strict=True)):
            message = json.dumps({"role": role, "time": {"created": i}})
            part = json.dumps({"type": "text", "text": text})
            conn.execute(
                "INSERT INTO message VALUES (?,?,?,?,?)", (f"msg_{i}", "ses_0001", i, i, message)
            )
            conn.execute(
                "INSERT INTO part VALUES (?,?,?,?,?,?)",
                (f"prt_{i}", f"msg_{i}", "ses_0001", i, i, part),
            )
    conn.close()
    os.utime(db, (NOW - 3 * 86400, NOW - 3 * 86400))
    storage = base / "storage"
    _json(
        storage / "session" / "prj0" / "ses_0000.json",
        {
            "id": "ses_0000",
            "projectID": "prj0",
            "directory": "/home/ana/src/old-quarry",
            "title": "Port the CLI to click",
            "version": "0.9.0",
            "time": {"created": 1_794_000_000_000, "updated": 1_794_000_100_000},
        },
        age=5 * 86400,
    )
    for i, (role, text) in enumerate((("user", "Port it to click."), ("assistant", "Ported."))):
        _json(
            storage / "message" / "ses_0000" / f"msg_{i}.json",
            {"id": f"msg_{i}", "sessionID": "ses_0000", "role": role, "time": {"created": i}},
            age=5 * 86400,
        )
        _json(
            storage / "part" / f"msg_{i}" / f"prt_{i}.json",
            {
                "id": f"prt_{i}",
                "messageID": f"msg_{i}",
                "sessionID": "ses_0000",
                "type": "text",
                "text": text,
            },
            age=5 * 86400,
        )


def _cline(base: Path, ext: str, ask: str, age: float) -> None:
    task = base / ext / "tasks" / "1794500000000"
    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"<task>\n{ask}\n</task>"},
                {"type": "text", "text": "<environment_details>\n# cwd\n</environment_details>"},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "I'll start by reading the file."}],
        },
    ]
    _json(task / "api_conversation_history.json", history, age=age)
    _json(
        task / "ui_messages.json",
        [{"ts": 1794500000000, "type": "say", "say": "task", "text": ask}],
        age=age,
    )
    _json(task / "task_metadata.json", {"files_in_context": [], "model_usage": []}, age=age)


def broken_session(roots: dict[str, Path] | Path) -> Path:
    """A Codex rollout that is not JSON: listed from its header, never loadable."""
    base = roots["TJUI_CODEX_HOME"] if isinstance(roots, dict) else roots / ".codex"
    path = base / "sessions" / "2026" / "11" / "10" / "rollout-2026-11-10T00-00-00-broken.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("this is {not a rollout\n", encoding="utf-8")
    os.utime(path, (NOW - 20 * 86400, NOW - 20 * 86400))
    return path


def build_fake_home(home: Path) -> dict[str, Path]:
    """Write every agent's store under ``home``; returns the root of each."""
    roots = {  # the keys are ROOT_VARS
        "TJUI_CLAUDE_HOME": home / ".claude",
        "TJUI_CODEX_HOME": home / ".codex",
        "TJUI_HERMES_HOME": home / ".hermes",
        "TJUI_GEMINI_HOME": home / ".gemini",
        "TJUI_OPENCODE_HOME": home / ".local" / "share" / "opencode",
        "TJUI_VSCODE_STORAGE": home / ".config" / "Code" / "User" / "globalStorage",
    }
    _claude(roots["TJUI_CLAUDE_HOME"])
    _codex(roots["TJUI_CODEX_HOME"])
    _hermes(roots["TJUI_HERMES_HOME"])
    _gemini(roots["TJUI_GEMINI_HOME"])
    _opencode(roots["TJUI_OPENCODE_HOME"])
    vscode = roots["TJUI_VSCODE_STORAGE"]
    _cline(vscode, "saoudrizwan.claude-dev", "Fix the flaky upload test in kestrel.", 6 * 86400)
    _cline(vscode, "rooveterinaryinc.roo-cline", "Write a README for the heron CLI.", 7 * 86400)
    return roots
