"""Finding session files under each agent's root, and the rows of multi-session databases."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tinyjuice.discovery.headers import first_line
from tinyjuice.discovery.roots import AgentRoot
from tinyjuice.discovery.rows import SessionRow

__all__ = ["Candidate", "candidates", "db_rows", "store_stat"]


@dataclass(frozen=True, slots=True)
class Candidate:
    """A file that holds one session (``db`` False) or several (a SQLite store)."""

    agent: str
    path: Path
    parent: str | None = None
    db: bool = False
    #: The file's stat when the directory walk already has it (saves a system call).
    stat: os.stat_result | None = None


def _glob(base: Path, pattern: str) -> list[Path]:
    try:
        return sorted(p for p in base.glob(pattern) if p.is_file())
    except OSError:
        return []


def _entries(directory: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(directory) as it:
            return sorted(it, key=lambda e: e.name)
    except OSError:
        return []


def _claude(root: Path) -> Iterator[Candidate]:
    """``projects/<dir>/<id>.jsonl`` and ``projects/<dir>/<id>/subagents/*.jsonl``.

    Walked with ``os.scandir`` (one ``stat`` per file, no pathlib per entry): a store of
    thousands of sessions is listed in a few tens of milliseconds.
    """
    for project in _entries(str(root / "projects")):
        if not project.is_dir():
            continue
        for entry in _entries(project.path):
            if entry.name.endswith(".jsonl") and entry.is_file():
                yield Candidate("claude-code", Path(entry.path), stat=entry.stat())
            elif entry.is_dir():
                parent = f"{entry.path}.jsonl"
                for sub in _entries(os.path.join(entry.path, "subagents")):
                    if sub.name.endswith(".jsonl") and sub.is_file():
                        yield Candidate("claude-code", Path(sub.path), parent, stat=sub.stat())


def candidates(root: AgentRoot) -> Iterator[Candidate]:
    """Every session store under ``root``; a missing root has none."""
    base, agent = root.path, root.agent
    if not base.is_dir():
        return
    if agent == "claude-code":
        yield from _claude(base)
    elif agent == "codex":
        for path in _glob(base / "sessions", "**/rollout-*.jsonl"):
            yield Candidate(agent, path)
    elif agent == "hermes":
        if (base / "state.db").is_file():
            yield Candidate(agent, base / "state.db", db=True)
        for pattern in ("*.json", "*.jsonl"):
            for path in _glob(base / "sessions", pattern):
                yield Candidate(agent, path)
    elif agent == "gemini":
        for pattern in ("*/chats/*.json", "*/chats/*.jsonl"):
            for path in _glob(base / "tmp", pattern):
                yield Candidate(agent, path)
    elif agent == "opencode":
        if (base / "opencode.db").is_file():
            yield Candidate(agent, base / "opencode.db", db=True)
        for path in _glob(base / "storage" / "session", "*/*.json"):
            yield Candidate(agent, path)
    else:  # cline / roo
        for path in _glob(base / "tasks", "*/api_conversation_history.json"):
            yield Candidate(agent, path)


def store_stat(path: Path) -> tuple[int, float, int]:
    """(size, mtime, mtime_ns) of a file; a SQLite store counts its ``-wal`` too."""
    st = path.stat()
    size, mtime, ns = st.st_size, st.st_mtime, st.st_mtime_ns
    wal = path.with_name(path.name + "-wal")
    if path.suffix == ".db" and wal.is_file():
        w = wal.stat()
        size += w.st_size
        if w.st_mtime_ns > ns:
            mtime, ns = w.st_mtime, w.st_mtime_ns
    return size, mtime, ns


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=1.0)
    conn.row_factory = sqlite3.Row
    return conn


def _hermes_db(path: Path, size: int, mtime: float) -> list[SessionRow]:
    from tinyjuice.formats import LoadError, hermes

    if _holds_no_sessions(path):
        return []  # Hermes made the file for something else (e.g. delegations): no rows
    try:
        infos = hermes.list_sessions(path)
    except LoadError as exc:
        return [SessionRow("hermes", str(path), size, mtime, error=str(exc))]
    rows = []
    for info in infos:
        when = info.ended_at or info.started_at
        rows.append(
            SessionRow(
                agent="hermes",
                path=str(path),
                size=size,
                mtime=float(when) if isinstance(when, (int, float)) else mtime,
                session=info.id,
                title=first_line(info.title) if info.title else None,
                messages_estimate=info.message_count,
                parent=info.parent_session_id,
            )
        )
    return rows


def _holds_no_sessions(path: Path) -> bool:
    """True when a ``state.db`` has neither a ``sessions`` nor a ``messages`` table (a
    database with only one of them is damaged, and reported as unreadable)."""
    try:
        with _connect(path) as conn:
            names = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master")}
    except sqlite3.Error:
        return False
    return not names & {"sessions", "messages"}


def _columns(conn: sqlite3.Connection, table: str) -> set[str]:
    return {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}


def _opencode_db(path: Path, size: int, mtime: float) -> list[SessionRow]:
    """opencode's ``session`` table (columns read when present) and message counts."""
    with _connect(path) as conn:
        cols = _columns(conn, "session")
        if "id" not in cols:
            raise sqlite3.DatabaseError("no session table with an id column")
        counts: dict[str, int] = {}
        if "session_id" in _columns(conn, "message"):
            q = "SELECT session_id, COUNT(*) FROM message GROUP BY session_id"
            counts = {str(k): int(n) for k, n in conn.execute(q)}
        rows = []
        for r in conn.execute("SELECT * FROM session"):
            updated = r["time_updated"] if "time_updated" in cols else None
            title = r["title"] if "title" in cols else None
            rows.append(
                SessionRow(
                    agent="opencode",
                    path=str(path),
                    size=size,
                    # opencode stores milliseconds
                    mtime=updated / 1000 if isinstance(updated, (int, float)) else mtime,
                    session=str(r["id"]),
                    project=r["directory"] if "directory" in cols else None,
                    title=first_line(title) if isinstance(title, str) else None,
                    messages_estimate=counts.get(str(r["id"]), 0),
                    parent=r["parent_id"] if "parent_id" in cols else None,
                )
            )
    return rows


def db_rows(agent: str, path: Path) -> list[SessionRow]:
    """One row per session in a SQLite store (one error row when it cannot be read)."""
    size, mtime, _ = store_stat(path)
    if agent == "hermes":
        return _hermes_db(path, size, mtime)
    try:
        return _opencode_db(path, size, mtime)
    except sqlite3.Error as exc:
        return [SessionRow(agent, str(path), size, mtime, error=f"cannot read {path.name}: {exc}")]


def stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None
