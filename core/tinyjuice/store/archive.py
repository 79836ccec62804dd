"""The commit archive: an SQLite (WAL) database of commits and the bytes they replaced.

Where it lives: ``$TJUI_HOME/archive.db`` when ``TJUI_HOME`` is set, else in the user
data directory platformdirs gives for the app ``tjui``. The directory is created
``0700`` and the database ``0600`` (SQLite gives its ``-wal``/``-shm`` files the same
bits), so only the user can read archived transcripts.

What it holds:

- ``blobs``: content-addressed bytes (key: sha256 of the uncompressed bytes), stored
  zlib- or lzma-compressed, or raw when compression does not help. Every read checks
  the sha256 again.
- ``commits``: one row per commit — the source (a file path, or a Hermes ``state.db``
  and session id), its format, the mode, sha256 and size of the source as loaded and
  of the target before and after, the boundary, profile and summary kind, the
  compaction report as JSON, timestamps, the undo plan, and a state
  (:class:`CommitState`).
- ``leases`` (schema v2): the rows behind :class:`tinyjuice.store.lease.SqliteLease`.

The schema is versioned with ``PRAGMA user_version`` and migrated forward on open, one
step at a time, each step in its own transaction. An archive written by a newer
tinyjuice is refused rather than guessed at.
"""

from __future__ import annotations

import contextlib
import lzma
import os
import sqlite3
import time
import uuid
import zlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

import orjson

from tinyjuice.atomic import sha256_hex

__all__ = [
    "ARCHIVE_NAME",
    "HOME_ENV",
    "SCHEMA_VERSION",
    "Archive",
    "ArchiveError",
    "ChangedSinceCommit",
    "CommitError",
    "CommitMode",
    "CommitRecord",
    "CommitState",
    "SourceBusy",
    "SourceKind",
    "StaleSourceError",
    "archive_path",
    "default_home",
    "new_commit_id",
]

HOME_ENV = "TJUI_HOME"
ARCHIVE_NAME = "archive.db"
_APP = "tjui"
#: Blobs at least this large are compressed with lzma (smaller, slower); others zlib.
_LZMA_FROM = 4 << 20


class ArchiveError(RuntimeError):
    """The archive cannot be opened, read or trusted; the message says what to do."""


class CommitError(RuntimeError):
    """A commit or undo was refused; nothing was changed. The message says why and what
    to do instead."""


class StaleSourceError(CommitError):
    """The source changed since it was loaded (an agent wrote to it): reload, then commit."""

    reload: bool = True


class SourceBusy(CommitError):
    """Another writer holds the source's database lock (Hermes writing to its
    ``state.db``); nothing was changed — try again in a moment."""


class ChangedSinceCommit(CommitError):
    """Undo refused: the target changed after the commit (``force`` archives it first)."""


class CommitMode(StrEnum):
    IN_PLACE = "in-place"
    CHILD = "child"
    EXPORT = "export"


class CommitState(StrEnum):
    #: Archived, target not yet known to be written (a crash here is resolved on open).
    PENDING = "pending"
    DONE = "done"
    #: Nothing was changed (refused late, or a crash before the write took effect).
    ABORTED = "aborted"
    #: An undo is writing the original back.
    UNDOING = "undoing"
    UNDONE = "undone"


class SourceKind(StrEnum):
    FILE = "file"
    HERMES_DB = "hermes-db"


def default_home() -> Path:
    """``$TJUI_HOME`` if set, else the platform's user data directory for tjui."""
    env = os.environ.get(HOME_ENV)
    if env:
        return Path(env).expanduser()
    import platformdirs

    return Path(platformdirs.user_data_dir(_APP, appauthor=False))


def archive_path(home: str | Path | None = None) -> Path:
    """Where the archive of ``home`` (default: :func:`default_home`) lives."""
    return (Path(home) if home is not None else default_home()) / ARCHIVE_NAME


@dataclass(frozen=True, slots=True)
class CommitRecord:
    """One commit as the archive records it."""

    id: str
    state: CommitState
    mode: CommitMode
    source_kind: SourceKind
    source_path: str
    source_session: str | None
    format: str
    target_kind: SourceKind
    target_path: str
    target_session: str | None
    target_format: str
    #: The source as it was loaded (and archived).
    source_sha256: str
    source_size: int
    #: The target before the commit; None when it did not exist (child, new export).
    before_sha256: str | None
    before_size: int | None
    after_sha256: str | None
    after_size: int | None
    boundary_start: int | None
    boundary_end: int | None
    profile: str | None
    summary_kind: str | None
    tokens_before: int | None
    tokens_after: int | None
    report: Mapping[str, Any] | None
    created_at: float
    completed_at: float | None = None
    undone_at: float | None = None
    #: What undo needs beyond the bytes (Hermes row ids, a child session id, …).
    plan: Mapping[str, Any] = field(default_factory=dict)
    #: sha256 of the state archived by a forced undo (what was there before it).
    forced_sha256: str | None = None
    note: str | None = None

    @property
    def source_label(self) -> str:
        if self.source_session:
            return f"{self.source_path} (session {self.source_session})"
        return self.source_path

    @property
    def target_label(self) -> str:
        if self.target_session:
            return f"{self.target_path} (session {self.target_session})"
        return self.target_path

    def to_dict(self) -> dict[str, Any]:
        """The JSON shape of ``tjui history --json`` and ``tjui undo --json``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, StrEnum):
                value = value.value
            elif isinstance(value, Mapping):
                value = dict(value)
            out[f.name] = value
        return out


# --------------------------------------------------------------------------- schema

_V1 = """
CREATE TABLE blobs (
    sha256 TEXT PRIMARY KEY,
    size INTEGER NOT NULL,
    codec TEXT NOT NULL,
    data BLOB NOT NULL,
    created_at REAL NOT NULL
);
CREATE TABLE commits (
    id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    mode TEXT NOT NULL,
    source_kind TEXT NOT NULL,
    source_path TEXT NOT NULL,
    source_session TEXT,
    format TEXT NOT NULL,
    target_kind TEXT NOT NULL,
    target_path TEXT NOT NULL,
    target_session TEXT,
    target_format TEXT NOT NULL,
    source_sha256 TEXT NOT NULL REFERENCES blobs(sha256),
    source_size INTEGER NOT NULL,
    before_sha256 TEXT,
    before_size INTEGER,
    after_sha256 TEXT,
    after_size INTEGER,
    boundary_start INTEGER,
    boundary_end INTEGER,
    profile TEXT,
    summary_kind TEXT,
    tokens_before INTEGER,
    tokens_after INTEGER,
    report TEXT,
    plan TEXT NOT NULL DEFAULT '{}',
    created_at REAL NOT NULL,
    completed_at REAL,
    undone_at REAL,
    forced_sha256 TEXT,
    note TEXT
);
CREATE INDEX commits_source ON commits(source_path, created_at);
"""

_V2 = """
CREATE TABLE leases (
    key TEXT PRIMARY KEY,
    lease_id TEXT NOT NULL UNIQUE,
    holder TEXT NOT NULL,
    acquired_at REAL NOT NULL,
    expires_at REAL NOT NULL
);
CREATE INDEX commits_target ON commits(target_path, created_at);
CREATE INDEX commits_state ON commits(state);
"""

#: Migration scripts; entry i takes the schema from version i to i + 1.
MIGRATIONS: tuple[str, ...] = (_V1, _V2)
SCHEMA_VERSION = len(MIGRATIONS)

_ENUMS: dict[str, type[StrEnum]] = {
    "state": CommitState,
    "mode": CommitMode,
    "source_kind": SourceKind,
    "target_kind": SourceKind,
}
_JSON_COLUMNS = ("report", "plan")
_COLUMNS = tuple(f.name for f in fields(CommitRecord))


def _record(row: sqlite3.Row) -> CommitRecord:
    values: dict[str, Any] = {}
    for name in _COLUMNS:
        value = row[name]
        if name in _ENUMS:
            value = _ENUMS[name](value)
        elif name in _JSON_COLUMNS:
            value = orjson.loads(value) if value else ({} if name == "plan" else None)
        values[name] = value
    return CommitRecord(**values)


def new_commit_id() -> str:
    """A fresh commit id: 12 hex digits (shown in full; prefixes are accepted)."""
    return uuid.uuid4().hex[:12]


# -------------------------------------------------------------------------- archive


class Archive:
    """The commit archive at ``home/archive.db`` (``home`` defaults to :func:`default_home`).

    Opening creates the directory and database if needed and migrates the schema. Each
    operation uses its own short-lived connection, so one ``Archive`` may be used from
    several threads, and several processes may share the file.
    """

    def __init__(self, home: str | Path | None = None, *, timeout: float = 15.0) -> None:
        self.home = Path(home) if home is not None else default_home()
        self.path = self.home / ARCHIVE_NAME
        self._timeout = timeout
        self._prepare()

    @classmethod
    def open_existing(
        cls, home: str | Path | None = None, *, timeout: float = 15.0
    ) -> Archive | None:
        """The archive at ``home`` if one exists; None otherwise, creating nothing.

        For read-only callers (``tjui history``): a missing archive means no commits yet.
        """
        if not archive_path(home).exists():
            return None
        return cls(home, timeout=timeout)

    # ------------------------------------------------------------- opening

    def _prepare(self) -> None:
        try:
            if not self.home.exists():
                self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
                os.chmod(self.home, 0o700)
            if not self.path.exists():
                try:
                    fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    os.close(fd)
                except FileExistsError:
                    pass
        except OSError as exc:
            raise ArchiveError(
                f"cannot create the tjui archive at {self.path}: {exc.strerror or exc}"
                f" (set {HOME_ENV} to a writable directory)"
            ) from None
        with self.connect() as conn:
            conn.execute("PRAGMA journal_mode = WAL")
            self._migrate(conn)

    @contextmanager
    def connect(self) -> Iterator[sqlite3.Connection]:
        """A connection in autocommit mode; use :meth:`transaction` to write."""
        try:
            conn = sqlite3.connect(self.path, timeout=self._timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise ArchiveError(f"cannot open the tjui archive {self.path}: {exc}") from None
        conn.row_factory = sqlite3.Row
        try:
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            yield conn
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.IntegrityError):
                raise  # a broken invariant in tinyjuice itself, not a state of the disk
            raise ArchiveError(_archive_problem(self.path, exc)) from None
        finally:
            conn.close()

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (``BEGIN IMMEDIATE``), committed on success."""
        with self.connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                # SQLite may have rolled back already (a full disk does): not an error.
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _migrate(self, conn: sqlite3.Connection) -> None:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise ArchiveError(
                f"the tjui archive {self.path} has schema v{version}, newer than this"
                f" tinyjuice understands (v{SCHEMA_VERSION}); upgrade tjui"
            )
        while version < SCHEMA_VERSION:
            conn.execute("BEGIN IMMEDIATE")
            try:
                (now,) = conn.execute("PRAGMA user_version").fetchone()
                if now == version:  # another process may have migrated meanwhile
                    for statement in _statements(MIGRATIONS[version]):
                        conn.execute(statement)
                    conn.execute(f"PRAGMA user_version = {version + 1}")
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("ROLLBACK")
                raise
            (version,) = conn.execute("PRAGMA user_version").fetchone()

    def schema_version(self) -> int:
        with self.connect() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    # --------------------------------------------------------------- blobs

    @staticmethod
    def put_blob(conn: sqlite3.Connection, data: bytes, *, codec: str | None = None) -> str:
        """Store ``data`` (once per content) inside the caller's transaction; its sha256."""
        digest = sha256_hex(data)
        if conn.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (digest,)).fetchone():
            return digest
        chosen = codec or ("lzma" if len(data) >= _LZMA_FROM else "zlib")
        packed = _compress(data, chosen)
        if len(packed) >= len(data):
            chosen, packed = "raw", data
        conn.execute(
            "INSERT INTO blobs (sha256, size, codec, data, created_at) VALUES (?, ?, ?, ?, ?)",
            (digest, len(data), chosen, packed, time.time()),
        )
        return digest

    def store_blob(self, data: bytes, *, codec: str | None = None) -> str:
        with self.transaction() as conn:
            return self.put_blob(conn, data, codec=codec)

    def blob(self, digest: str) -> bytes:
        """The bytes stored under ``digest``; ArchiveError if missing or corrupted."""
        with self.connect() as conn:
            row = conn.execute(
                "SELECT size, codec, data FROM blobs WHERE sha256 = ?", (digest,)
            ).fetchone()
        if row is None:
            raise ArchiveError(f"the archive has no copy of {digest[:12]}… ({self.path})")
        data = _decompress(bytes(row["data"]), row["codec"])
        if len(data) != row["size"] or sha256_hex(data) != digest:
            raise ArchiveError(
                f"the archived copy {digest[:12]}… is corrupted (sha256 mismatch) in {self.path}"
            )
        return data

    def find_blob(self, prefix: str) -> str:
        """The full sha256 of the one archived copy starting with ``prefix`` (8+ hex
        characters, as commands print them); ArchiveError when none or several match."""
        p = prefix.strip().lower().rstrip("…").rstrip(".")
        if len(p) < 8 or any(c not in "0123456789abcdef" for c in p):
            raise ArchiveError(f"{prefix!r} is not a sha256 (give at least 8 hex characters)")
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT sha256 FROM blobs WHERE sha256 >= ? AND sha256 < ? LIMIT 2",
                (p, p + "g"),
            ).fetchall()
        if not rows:
            raise ArchiveError(
                f"the archive has no copy whose sha256 starts with {p} ({self.path})"
            )
        if len(rows) > 1:
            raise ArchiveError(f"several archived copies start with {p}; give more characters")
        return str(rows[0]["sha256"])

    def has_blob(self, digest: str) -> bool:
        with self.connect() as conn:
            return (
                conn.execute("SELECT 1 FROM blobs WHERE sha256 = ?", (digest,)).fetchone()
                is not None
            )

    # ------------------------------------------------------------- commits

    @staticmethod
    def insert_commit(conn: sqlite3.Connection, record: CommitRecord) -> None:
        """Add a commit row inside the caller's transaction (its blobs must be stored)."""
        values = record.to_dict()
        for name in _JSON_COLUMNS:
            value = values[name]
            values[name] = orjson.dumps(value).decode() if value is not None else None
        names = ", ".join(_COLUMNS)
        marks = ", ".join(f":{n}" for n in _COLUMNS)
        conn.execute(f"INSERT INTO commits ({names}) VALUES ({marks})", values)

    @staticmethod
    def update_commit(conn: sqlite3.Connection, commit_id: str, **changes: Any) -> None:
        """Change columns of one commit row inside the caller's transaction."""
        bad = [k for k in changes if k not in _COLUMNS or k == "id"]
        if bad:
            raise ValueError(f"unknown commit column(s): {bad}")
        values = {
            k: (
                v.value
                if isinstance(v, StrEnum)
                else orjson.dumps(v).decode()
                if k in _JSON_COLUMNS and v is not None
                else v
            )
            for k, v in changes.items()
        }
        assignments = ", ".join(f"{k} = :{k}" for k in values)
        conn.execute(
            f"UPDATE commits SET {assignments} WHERE id = :_id", {**values, "_id": commit_id}
        )

    def get(self, commit_id: str) -> CommitRecord:
        """The commit with this id, or the only one whose id starts with it."""
        text = commit_id.strip().lower()
        if not text:
            raise ArchiveError("no commit id given")
        with self.connect() as conn:
            rows = conn.execute(
                "SELECT * FROM commits WHERE id LIKE ? ESCAPE '\\' ORDER BY created_at",
                (_like_prefix(text),),
            ).fetchall()
        exact = [r for r in rows if r["id"] == text]
        if exact:
            return _record(exact[0])
        if not rows:
            raise ArchiveError(f"no commit {commit_id!r} in the archive; see `tjui history`")
        if len(rows) > 1:
            shown = ", ".join(r["id"] for r in rows[:5])
            raise ArchiveError(f"commit id {commit_id!r} is ambiguous ({shown}); give more digits")
        return _record(rows[0])

    def commits(
        self,
        *,
        path: str | Path | None = None,
        session: str | None = None,
        states: Sequence[CommitState] | None = None,
    ) -> list[CommitRecord]:
        """Commits, newest first; only those touching ``path`` (as source or target) if given."""
        where: list[str] = []
        params: list[Any] = []
        if path is not None:
            where.append("(source_path = ? OR target_path = ?)")
            params += [str(path), str(path)]
            if session is not None:
                where.append("(source_session = ? OR target_session = ?)")
                params += [session, session]
        if states:
            where.append("state IN (" + ", ".join("?" for _ in states) + ")")
            params += [s.value for s in states]
        sql = "SELECT * FROM commits"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created_at DESC, rowid DESC"
        with self.connect() as conn:
            return [_record(r) for r in conn.execute(sql, params).fetchall()]

    # ---------------------------------------------------------- integrity

    def check(self) -> list[str]:
        """Problems found: SQLite's integrity check, and every commit's blobs present
        and intact. An empty list means the archive is consistent."""
        problems: list[str] = []
        with self.connect() as conn:
            result = [r[0] for r in conn.execute("PRAGMA integrity_check").fetchall()]
            if result != ["ok"]:
                problems += [f"integrity_check: {r}" for r in result]
            rows = conn.execute(
                "SELECT id, source_sha256, before_sha256, mode, forced_sha256 FROM commits"
            ).fetchall()
        needed: set[str] = set()
        for row in rows:
            needed.add(row["source_sha256"])
            if row["before_sha256"] is not None:
                needed.add(row["before_sha256"])
            if row["forced_sha256"] is not None:
                needed.add(row["forced_sha256"])
        for digest in sorted(needed):
            try:
                self.blob(digest)
            except ArchiveError as exc:
                problems.append(str(exc))
        return problems


def _archive_problem(path: Path, exc: sqlite3.DatabaseError) -> str:
    """One line for an SQLite error on the archive: busy, full, unwritable or damaged."""
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError):
        if "locked" in text or "busy" in text:
            return f"the tjui archive {path} is busy (another tjui is writing); try again"
        if "full" in text:
            return (
                f"the disk holding the tjui archive {path} is full; nothing was changed —"
                f" free some space (or set {HOME_ENV} to another disk) and try again"
            )
        hint = " (is its disk full or failing?)" if "I/O" in text else ""
        return f"the tjui archive {path} cannot be written: {text}{hint}; nothing was changed"
    return f"the tjui archive {path} is damaged or not an archive: {text}"


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _like_prefix(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def _compress(data: bytes, codec: str) -> bytes:
    if codec == "zlib":
        return zlib.compress(data, 6)
    if codec == "lzma":
        return lzma.compress(data, preset=6)
    if codec == "raw":
        return data
    raise ValueError(f"unknown blob codec {codec!r}; use zlib, lzma or raw")


def _decompress(data: bytes, codec: str) -> bytes:
    try:
        if codec == "zlib":
            return zlib.decompress(data)
        if codec == "lzma":
            return lzma.decompress(data)
    except (zlib.error, lzma.LZMAError) as exc:
        raise ArchiveError(f"an archived copy cannot be decompressed: {exc}") from None
    if codec == "raw":
        return data
    raise ArchiveError(f"an archived copy uses an unknown codec {codec!r}")
