"""The subagents of a session: Claude Code's ``subagents/`` files and sidechain lines.

Claude Code writes each subagent's conversation to
``<project>/<session-id>/subagents/agent-<id>.jsonl`` beside the session's
``<project>/<session-id>.jsonl`` (older versions kept them in the session file as
``isSidechain`` lines, in ``Transcript.sidechains``). :func:`list_subagents` finds both;
:func:`open_subagent` loads one as a transcript of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from tinyjuice.breakdown import SUBAGENT_TOOLS
from tinyjuice.formats import LoadError, load
from tinyjuice.model import Role, Transcript

__all__ = [
    "SUBAGENT_TOOLS",
    "Subagent",
    "list_subagents",
    "open_subagent",
    "subagent_calls",
    "subagent_dir",
]


@dataclass(frozen=True, slots=True)
class Subagent:
    #: The agent id (``agentId``; a file's name without ``agent-``).
    id: str
    #: "file" (a ``subagents/`` file), "sidechain" (lines in the session file) or both.
    source: str
    #: Messages in its conversation (None: a file not read, see ``list_subagents``).
    messages: int | None
    path: str | None = None
    #: Why a subagent file could not be read (it is still listed).
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "messages": self.messages,
            "path": self.path,
            "error": self.error,
        }


def subagent_dir(transcript: Transcript) -> Path | None:
    """``<dir>/<session-id>/subagents`` beside a Claude Code session file (None otherwise)."""
    if transcript.format != "claude-code" or not transcript.path:
        return None
    return _folder_of(Path(transcript.path))


def _folder_of(session_file: Path) -> Path:
    return session_file.parent / session_file.stem / "subagents"


def _jsonl_in(folder: Path | None) -> list[Path]:
    """The ``*.jsonl`` files in ``folder``, sorted (none if it is missing or unreadable)."""
    try:
        return sorted(folder.glob("*.jsonl")) if folder is not None and folder.is_dir() else []
    except OSError:
        return []


def folder_fingerprint(session_file: Path) -> list[tuple[str, int, int]]:
    """(name, size, mtime_ns) of each file in the ``subagents/`` folder a Claude Code
    session file at ``session_file`` would have — what a cached result about its
    subagents depends on, read without parsing the session."""
    try:
        stats = [(f.name, f.stat()) for f in _jsonl_in(_folder_of(session_file))]
    except OSError:  # a file went away between the listing and its stat
        return []
    return [(name, st.st_size, st.st_mtime_ns) for name, st in stats]


def _file_id(path: Path) -> str:
    stem = path.stem
    return stem[len("agent-") :] if stem.startswith("agent-") else stem


def _subagent_files(transcript: Transcript) -> list[Path]:
    """The ``*.jsonl`` files in the session's ``subagents/`` folder (none if unreadable)."""
    return _jsonl_in(subagent_dir(transcript))


def list_subagents(transcript: Transcript, *, read_files: bool = True) -> list[Subagent]:
    """Every subagent of the session: files in ``subagents/`` first, then sidechains.

    ``read_files`` loads each subagent file to count its messages (and report one that
    cannot be read); without it files are only listed (``messages`` None), which costs
    no parsing — what the inspector does before its first paint.
    """
    found: dict[str, Subagent] = {}
    for f in _subagent_files(transcript):
        count: int | None = None
        error: str | None = None
        if read_files:
            try:
                count = len(load(f, "claude-code", lenient=True).messages)
            except LoadError as exc:
                count, error = 0, str(exc)
        found[_file_id(f)] = Subagent(_file_id(f), "file", count, str(f), error)
    for key, msgs in transcript.sidechains.items():
        short = _file_id(Path(f"{key}.jsonl"))
        known = found.get(key) or found.get(short)
        if known is not None:
            found[known.id] = replace(known, source="file+sidechain")
        else:
            found[key] = Subagent(key, "sidechain", len(msgs))
    return list(found.values())


def open_subagent(transcript: Transcript, agent: Subagent | str) -> Transcript:
    """The subagent's conversation as a transcript (its file, else its sidechain lines).

    Raises :class:`LoadError` when the session has no such subagent.
    """
    wanted = agent if isinstance(agent, Subagent) else None
    if wanted is None:
        wanted = next((s for s in list_subagents(transcript) if s.id == agent), None)
    if wanted is None:
        raise LoadError(transcript.path, f"no subagent {agent!r} in this session")
    if wanted.path is not None:
        return load(wanted.path, "claude-code", lenient=True)
    msgs = transcript.sidechains.get(wanted.id, ())
    return replace(
        transcript,
        messages=msgs,
        compactions=(),
        usage=(),
        sidechains={},
        extra={**transcript.extra, "subagent": wanted.id},
        warnings=(),
    )


def subagent_calls(transcript: Transcript) -> int:
    """How many tool calls in the messages started a subagent."""
    return sum(
        1
        for m in transcript.messages
        if m.role is Role.ASSISTANT
        for c in m.tool_calls
        if c.name in SUBAGENT_TOOLS
    )
