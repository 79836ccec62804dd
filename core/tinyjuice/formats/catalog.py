"""The sessions a file holds: the trajectories of a ShareGPT file, the sessions of a
Hermes ``state.db``. Each entry carries the text ``--session`` (and ``load``'s
``session``) takes to open it; a file of one session lists nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tinyjuice.formats._base import SQLITE_MAGIC
from tinyjuice.formats._hermes_db import list_sessions
from tinyjuice.formats.sharegpt import iter_trajectories

__all__ = ["SessionEntry", "file_sessions", "position_of"]


@dataclass(frozen=True, slots=True)
class SessionEntry:
    #: What ``session=`` takes to open it: a session id, a trajectory id or its number.
    key: str
    #: The session's id when it has one, else ``#N``.
    label: str
    messages: int
    detail: str = ""


def _is_sqlite(path: Path) -> bool:
    try:
        with path.open("rb") as fh:
            return fh.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def file_sessions(path: str | Path, fmt: str | None) -> list[SessionEntry]:
    """Every session in ``path`` (format ``fmt``, as loaded), in the order the file or
    ``tjui sessions`` lists them; empty when the file holds one session only."""
    p = Path(path)
    if fmt == "hermes" and _is_sqlite(p):
        entries = [
            SessionEntry(
                info.id,
                info.id,
                info.message_count,
                " · ".join(str(x) for x in (info.model, info.title) if x),
            )
            for info in list_sessions(p)
        ]
    elif fmt == "sharegpt":
        entries = []
        for n, t in enumerate(iter_trajectories(p, lenient=True), 1):
            sid = t.session_id
            entries.append(SessionEntry(sid or str(n), sid or f"#{n}", len(t.messages)))
    else:
        return []
    return entries if len(entries) > 1 else []


def position_of(
    entries: list[SessionEntry], requested: str | None, loaded_id: str | None
) -> int | None:
    """The 0-based position of the session on screen: the one asked for (its key, id or
    1-based number), else the one loaded (its id), else the first."""
    if not entries:
        return None
    for wanted in (requested, loaded_id):
        if wanted is None:
            continue
        for i, e in enumerate(entries):
            if wanted in (e.key, e.label):
                return i
        number = wanted.removeprefix("#")
        if number.isdigit() and 1 <= int(number) <= len(entries):
            return int(number) - 1
    return 0
