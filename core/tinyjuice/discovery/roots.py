"""Where each agent keeps its sessions, and the environment variables that move them.

Every root can be overridden (tests point them at a fake home; users with a custom
``CODEX_HOME`` or a VS Code fork point them elsewhere). Nothing here touches the disk
beyond ``Path.home()``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

__all__ = ["AGENTS", "ROOT_ENV", "AgentRoot", "agent_roots"]

#: Agents discovery knows, in display order ("demo" is the bundled session).
AGENTS: tuple[str, ...] = (
    "claude-code",
    "codex",
    "hermes",
    "gemini",
    "opencode",
    "cline",
    "roo",
    "demo",
)

#: The environment variable that overrides each agent's root directory.
ROOT_ENV: dict[str, str] = {
    "claude-code": "TJUI_CLAUDE_HOME",
    "codex": "TJUI_CODEX_HOME",
    "hermes": "TJUI_HERMES_HOME",
    "gemini": "TJUI_GEMINI_HOME",
    "opencode": "TJUI_OPENCODE_HOME",
    "cline": "TJUI_VSCODE_STORAGE",
    "roo": "TJUI_VSCODE_STORAGE",
}

_CLINE_IDS = {"cline": "saoudrizwan.claude-dev", "roo": "rooveterinaryinc.roo-cline"}


@dataclass(frozen=True, slots=True)
class AgentRoot:
    """One agent's store: its directory and where that directory came from."""

    agent: str
    path: Path
    #: The environment variable that set it, or "default".
    source: str

    def to_dict(self) -> dict[str, str]:
        return {"agent": self.agent, "path": str(self.path), "source": self.source}


def _default(agent: str, home: Path) -> Path:
    if agent == "claude-code":
        return home / ".claude"
    if agent == "codex":
        # Codex itself honours CODEX_HOME.
        env = os.environ.get("CODEX_HOME")
        return Path(env) if env else home / ".codex"
    if agent == "hermes":
        return home / ".hermes"
    if agent == "gemini":
        return home / ".gemini"
    if agent == "opencode":
        data = os.environ.get("XDG_DATA_HOME")
        return (Path(data) if data else home / ".local" / "share") / "opencode"
    # cline / roo: VS Code's globalStorage
    return home / ".config" / "Code" / "User" / "globalStorage"


def agent_roots() -> list[AgentRoot]:
    """The store of every agent (one row each; Cline and Roo share VS Code's storage)."""
    home = Path.home()
    out: list[AgentRoot] = []
    for agent in AGENTS:
        if agent == "demo":
            continue
        var = ROOT_ENV[agent]
        value = os.environ.get(var)
        base = Path(value).expanduser() if value else _default(agent, home)
        source = var if value else "default"
        if agent in _CLINE_IDS:
            base = base / _CLINE_IDS[agent]
        out.append(AgentRoot(agent, base, source))
    return out
