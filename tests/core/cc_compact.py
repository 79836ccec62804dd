"""A Claude Code session JSONL in the real on-disk shape, with a ``/compact``.

The case of issue #19: a session fixes a failing command by switching to ``python3``.
The agent lists the project (``ls -la``: names it never touches), runs ``python``
(``Exit code 127`` / ``/bin/bash: line 1: python: command not found``), says in prose
that the command "failed with an error", reads and edits files, runs ``python3`` (a
``FileNotFoundError`` first, then success), then the user runs ``/compact``: a
``compact_boundary`` system line and an ``isCompactSummary: true`` user line holding a
good summary, written the way Claude Code writes them. Made-up content throughout.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson

SESSION = "5b0c2f0e-7d1a-4a8e-9d55-3c2f61e0a9b1"
CWD = "/home/rin/work/tidepool"

CLAUDE_MD_RULE = "Never commit generated files under build/."

LISTING = """total 48
drwxr-xr-x  7 rin rin 4096 Mar  3 10:02 .
drwxr-xr-x 12 rin rin 4096 Mar  3 09:40 ..
-rw-r--r--  1 rin rin  211 Mar  3 09:41 .editorconfig
drwxr-xr-x  8 rin rin 4096 Mar  3 10:01 .git
-rw-r--r--  1 rin rin   88 Mar  3 09:41 .gitignore
-rw-r--r--  1 rin rin 1180 Mar  3 09:41 CHANGELOG.md
-rw-r--r--  1 rin rin  402 Mar  3 09:41 Makefile
-rw-r--r--  1 rin rin 2210 Mar  3 09:41 README.md
drwxr-xr-x  2 rin rin 4096 Mar  3 09:41 data
drwxr-xr-x  2 rin rin 4096 Mar  3 09:41 docs
-rw-r--r--  1 rin rin  640 Mar  3 09:41 pyproject.toml
-rw-r--r--  1 rin rin   97 Mar  3 09:41 requirements.txt
drwxr-xr-x  2 rin rin 4096 Mar  3 09:41 scripts
-rw-r--r--  1 rin rin  318 Mar  3 09:41 setup.cfg
-rw-r--r--  1 rin rin  150 Mar  3 09:41 tox.ini
-rw-r--r--  1 rin rin   75 Mar  3 09:41 noxfile.py"""

#: Names only the ``ls -la`` listing shows: background, never "missing".
LISTED_ONLY = (
    ".editorconfig",
    ".gitignore",
    "CHANGELOG.md",
    "Makefile",
    "README.md",
    "pyproject.toml",
    "requirements.txt",
    "setup.cfg",
    "tox.ini",
    "noxfile.py",
)

SUMMARY = """This session is being continued from a previous conversation that ran out of \
context. The conversation is summarized below:
Analysis:
The user asked me to get the tide report script running. I listed the project, ran the \
script with `python` which failed (exit code 127, python: command not found), switched \
to `python3`, hit a missing input file (exit code 1, FileNotFoundError), fixed the path \
in the script and re-ran it successfully.

Summary:
1. Primary Request and Intent:
   - "Get scripts/tide_report.py running and write the report to out/report.txt."
   - Don't add new dependencies.

2. Key Technical Concepts:
   - The machine has no `python` on PATH; `python3` is 3.11.

3. Files and Code Sections:
   - scripts/tide_report.py
     - Read it; edited DATA_PATH from "data/tides.csv" to "data/tides_2024.csv".
   - data/tides_2024.csv
     - Read to check the columns.
   - out/report.txt
     - Created by running the script.

4. Errors and fixes:
   - `python scripts/tide_report.py` failed (exit code 127): /bin/bash: python: command \
not found. Fixed by using python3.
   - `python3 scripts/tide_report.py` failed (exit code 1): FileNotFoundError: [Errno 2] \
No such file or directory: 'data/tides.csv'. Fixed by editing DATA_PATH.

5. Problem Solving:
   - Decided to use python3 instead of python because no python alias exists.

6. All user messages:
   - "Get scripts/tide_report.py running and write the report to out/report.txt. \
Don't add new dependencies."

7. Pending Tasks:
   - None.

8. Current Work:
   - Ran `python3 scripts/tide_report.py > out/report.txt`; it exited 0.

9. Optional Next Step:
   - Wait for the user's next request."""


class _Lines:
    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []
        self.parent: str | None = None
        self._ids = itertools.count(1)
        self._msg = itertools.count(1)

    def _base(self, kind: str) -> dict[str, Any]:
        uid = f"00000000-0000-4000-8000-{next(self._ids):012d}"
        row = {
            "parentUuid": self.parent,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": SESSION,
            "version": "2.0.31",
            "gitBranch": "main",
            "type": kind,
            "uuid": uid,
            "timestamp": f"2026-03-03T10:{len(self.rows):02d}:00.000Z",
        }
        self.parent = uid
        return row

    def user(self, content: Any, **extra: Any) -> None:
        row = self._base("user")
        row["message"] = {"role": "user", "content": content}
        row.update(extra)
        self.rows.append(row)

    def assistant(self, *blocks: dict[str, Any]) -> None:
        mid = f"msg_01Tide{next(self._msg):06d}"
        for block in blocks:
            row = self._base("assistant")
            row["message"] = {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5-20250929",
                "content": [block],
                "stop_reason": "tool_use" if block["type"] == "tool_use" else None,
                "stop_sequence": None,
                "usage": {"input_tokens": 4, "output_tokens": 120},
            }
            row["requestId"] = f"req_01Tide{mid[-6:]}"
            self.rows.append(row)

    def call(self, call_id: str, name: str, args: dict[str, Any], result: str, **kw: Any) -> None:
        self.assistant({"type": "tool_use", "id": call_id, "name": name, "input": args})
        block: dict[str, Any] = {"tool_use_id": call_id, "type": "tool_result", "content": result}
        if kw.get("is_error"):
            block["is_error"] = True
        self.user([block])

    def text(self, text: str) -> None:
        self.assistant({"type": "text", "text": text})

    def compact(self, summary: str) -> None:
        row = self._base("system")
        row.update(
            parentUuid=None,
            logicalParentUuid=self.rows[-1]["uuid"],
            subtype="compact_boundary",
            content="Conversation compacted",
            isMeta=False,
            level="info",
            compactMetadata={"trigger": "manual", "preTokens": 48210},
        )
        self.rows.append(row)
        self.user(summary, isCompactSummary=True, isVisibleInTranscriptOnly=True)


def session_rows(summary: str = SUMMARY, *, with_claude_md: bool = True) -> list[dict[str, Any]]:
    """The session's JSONL rows; ``summary`` is what the ``/compact`` wrote."""
    s = _Lines()
    if with_claude_md:
        s.user(
            "<system-reminder>\nAs you answer the user's questions, you can use the "
            "following context:\n# claudeMd\nContents of /home/rin/work/tidepool/CLAUDE.md "
            "(project instructions, checked into the codebase):\n\n# Tidepool\n"
            f"- {CLAUDE_MD_RULE}\n- Always run `make lint` before saying a change is done.\n"
            "</system-reminder>",
            isMeta=True,
        )
    s.user(
        "Get scripts/tide_report.py running and write the report to out/report.txt. "
        "Don't add new dependencies."
    )
    s.text("Let me look at the project first.")
    s.call("toolu_01A", "Bash", {"command": "ls -la", "description": "List files"}, LISTING)
    s.call(
        "toolu_01B",
        "Bash",
        {"command": "python scripts/tide_report.py", "description": "Run the report"},
        "Exit code 127\n/bin/bash: line 1: python: command not found",
        is_error=True,
    )
    s.text(
        "As expected, the command failed with an error: there is no `python` on this "
        "machine. I'll use python3 instead."
    )
    s.call(
        "toolu_01C",
        "Read",
        {"file_path": f"{CWD}/scripts/tide_report.py"},
        '     1→import csv\n     2→DATA_PATH = "data/tides.csv"\n     3→OUT = "out/report.txt"',
    )
    s.call(
        "toolu_01D",
        "Bash",
        {"command": "python3 scripts/tide_report.py", "description": "Run with python3"},
        'Exit code 1\nTraceback (most recent call last):\n  File "scripts/tide_report.py", '
        "line 5, in <module>\nFileNotFoundError: [Errno 2] No such file or directory: "
        "'data/tides.csv'",
        is_error=True,
    )
    s.call(
        "toolu_01E",
        "Read",
        {"file_path": f"{CWD}/data/tides_2024.csv", "limit": 3},
        "     1→date,high,low\n     2→2024-01-01,3.2,0.4",
    )
    s.call(
        "toolu_01F",
        "Edit",
        {
            "file_path": f"{CWD}/scripts/tide_report.py",
            "old_string": 'DATA_PATH = "data/tides.csv"',
            "new_string": 'DATA_PATH = "data/tides_2024.csv"',
        },
        "The file scripts/tide_report.py has been updated.",
    )
    s.call(
        "toolu_01G",
        "Bash",
        {"command": "python3  scripts/tide_report.py > out/report.txt"},
        "",
    )
    s.text("The report is written to out/report.txt.")
    s.user("<command-name>/compact</command-name>\n<command-message>compact</command-message>")
    s.compact(summary)
    s.user("Thanks. Now add a --year flag to the script.")
    return s.rows


def write_session(path: Path, summary: str = SUMMARY, **kw: Any) -> Path:
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in session_rows(summary, **kw)))
    return path
