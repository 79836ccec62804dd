"""The Hermes tool schemas and system prompt, and the ShareGPT samples' (a subset)."""

from __future__ import annotations

import json
from typing import Any

from .common import CWD, data_json, data_text

Call = tuple[str, Any, str]  # (tool name, arguments as dict or raw string, result content)

HERMES_TOOLS: list[dict[str, Any]] = data_json("hermes_tools.json")
_SKILLS: list[list[str]] = data_json("hermes_skills.json")


def hermes_system_prompt() -> str:
    skills = "\n".join(f"    - {cat}/{name}: {desc}" for cat, name, desc in _SKILLS)
    return data_text("text/hermes_system_prompt.txt").format(cwd=CWD, skills=skills)


def tool_by_name(name: str) -> dict[str, Any]:
    return next(t for t in HERMES_TOOLS if t["function"]["name"] == name)


SHAREGPT_TOOLS = [
    tool_by_name(n)["function"] for n in ("terminal", "read_file", "patch", "search_files")
]


def sharegpt_system() -> str:
    tools = json.dumps(SHAREGPT_TOOLS, ensure_ascii=False)
    return data_text("text/sharegpt_system.txt").format(tools=tools)
