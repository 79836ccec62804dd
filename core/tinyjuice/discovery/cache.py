"""The row cache: per store file, keyed by (path, size, mtime), in the user cache dir.

Where: beside the analysis cache (:func:`tinyjuice.cache.cache_dir`: ``$TJUI_CACHE_DIR``,
else platformdirs' user cache directory for ``tjui``), as ``sessions-v1.json``. Rows
computed by another tinyjuice version (or row schema) are ignored. Writes are atomic (a
temporary file renamed over the cache), and a save first merges what another process
wrote meanwhile, so two tjui processes never leave a torn or empty cache.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from tinyjuice.atomic import atomic_write
from tinyjuice.discovery.rows import SessionRow

__all__ = ["CACHE_ENV", "RowCache", "cache_dir"]

#: The variable that moves the cache directory (shared with the analysis cache).
CACHE_ENV = "TJUI_CACHE_DIR"
_FILE = "sessions-v1.json"
#: The rows' own schema: bump when the rules that make a row change (2: a state.db with
#: no session tables lists no row).
_ROWS = 2


def _version() -> str:
    """What a cache must have been written under to be read: the tinyjuice version (and
    analysis-cache schema) that computed its rows, and the rows' schema."""
    from tinyjuice.cache import version_tag

    return f"{version_tag()}+rows{_ROWS}"


def cache_dir() -> Path:
    from tinyjuice.cache import cache_dir as analysis_cache_dir

    return analysis_cache_dir()


@dataclass
class RowCache:
    """Rows per store file; an entry is valid while the file's size and mtime are unchanged."""

    path: Path
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)
    dirty: bool = False

    @classmethod
    def open(cls, directory: Path | None = None) -> RowCache:
        path = (directory or cache_dir()) / _FILE
        return cls(path, _read(path))

    def get(self, key: str, size: int, mtime_ns: int) -> list[SessionRow] | None:
        entry = self.entries.get(key)
        if entry is None or entry.get("size") != size or entry.get("mtime_ns") != mtime_ns:
            return None
        try:
            return [SessionRow.from_dict(r) for r in entry["rows"]]
        except (KeyError, TypeError, ValueError):
            return None

    def put(self, key: str, size: int, mtime_ns: int, rows: list[SessionRow]) -> None:
        self.entries[key] = {
            "size": size,
            "mtime_ns": mtime_ns,
            "rows": [r.to_dict() for r in rows],
        }
        self.dirty = True

    def update_row(self, row: SessionRow) -> None:
        """Store a row's exact figures in its entry (kept only while the file is unchanged)."""
        entry = self.entries.get(row.path)
        if entry is None:
            return
        entry["rows"] = [
            row.to_dict() if (r.get("session") == row.session) else r for r in entry["rows"]
        ]
        self.dirty = True

    def prune(self, keep: set[str]) -> None:
        """Forget files no longer found."""
        gone = [k for k in self.entries if k not in keep]
        for k in gone:
            del self.entries[k]
        self.dirty = self.dirty or bool(gone)

    def save(self) -> None:
        """Write atomically, merging entries another process wrote since we read."""
        if not self.dirty:
            return
        merged = _read(self.path)
        merged.update(self.entries)
        data = orjson.dumps({"version": _version(), "entries": merged})
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(self.path, data, tag=f"cache-{os.getpid()}")
        except OSError:
            return  # a cache that cannot be written only costs speed next time
        self.dirty = False


def _read(path: Path) -> dict[str, dict[str, Any]]:
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(doc, dict) or doc.get("version") != _version():
        return {}
    entries = doc.get("entries")
    return entries if isinstance(entries, dict) else {}
