"""Hermes tool schemas and system prompt, and the tool outputs every story quotes."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from .common import CWD, data_json, data_text
from .project import Repo

# ================================================================= Hermes: tools & prompt


HERMES_TOOLS: list[dict[str, Any]] = data_json("hermes_tools.json")

_SKILLS: list[list[str]] = data_json("hermes_skills.json")


def hermes_system_prompt() -> str:
    skills = "\n".join(f"    - {cat}/{name}: {desc}" for cat, name, desc in _SKILLS)
    return data_text("text/hermes_system_prompt.txt").format(cwd=CWD, skills=skills)


# ============================================================================ Hermes log


def term(output: str, exit_code: int = 0) -> str:
    return json.dumps({"output": output, "exit_code": exit_code, "error": None}, ensure_ascii=False)


def read_out(repo: Repo, path: str, offset: int = 1, limit: int | None = None) -> str:
    total = len(repo.lines(path))
    body: dict[str, Any] = {
        "content": repo.numbered(path, offset, limit),
        "total_lines": total,
        "file_size": len(repo.text(path).encode()),
        "truncated": limit is not None and offset - 1 + limit < total,
    }
    if limit is not None and body["truncated"]:
        shown = f"showing {offset}-{offset + limit - 1} of {total} lines"
        body["hint"] = f"Use offset={offset + limit} to continue reading ({shown})"
    return json.dumps(body, ensure_ascii=False)


def patch_out(repo: Repo, path: str, old: str, new: str) -> str:
    diff = repo.patch(path, old, new)
    return json.dumps({"success": True, "diff": diff, "files_modified": [path]}, ensure_ascii=False)


def search_out(matches: Sequence[tuple[str, int, str]]) -> str:
    hits = [{"path": p, "line": n, "content": c} for p, n, c in matches]
    return json.dumps({"total_count": len(hits), "matches": hits}, ensure_ascii=False)


def grep_repo(repo: Repo, needle: str, paths: Iterable[str]) -> list[tuple[str, int, str]]:
    lines = ((p, i, line) for p in paths for i, line in enumerate(repo.lines(p), start=1))
    return [(p, i, line.strip()) for p, i, line in lines if needle in line]


Call = tuple[str, Any, str]  # (tool name, arguments as dict or raw string, result content)

# ======================================================================== Hermes gateway


def tool_by_name(name: str) -> dict[str, Any]:
    return next(t for t in HERMES_TOOLS if t["function"]["name"] == name)


# ============================================================================== ShareGPT


SHAREGPT_TOOLS = [
    tool_by_name(n)["function"] for n in ("terminal", "read_file", "patch", "search_files")
]


def sharegpt_system() -> str:
    tools = json.dumps(SHAREGPT_TOOLS, ensure_ascii=False)
    return data_text("text/sharegpt_system.txt").format(tools=tools)
