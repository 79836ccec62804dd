"""A persistent analysis cache: exact token counts and derived results between runs.

Details: docs/compaction.md (`tinyjuice.cache`).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import time
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import accumulate
from pathlib import Path
from typing import Any

from tinyjuice.model import Transcript
from tinyjuice.tokens import (
    CountKind,
    TokenCounter,
    TranscriptTokens,
    count_transcript,
)

__all__ = [
    "DB_NAME",
    "MULTI_FILE_FORMATS",
    "SCHEMA",
    "AnalysisCache",
    "Source",
    "SourceIdentity",
    "cache_dir",
    "cache_disabled",
    "counter_spec",
    "default_cache",
    "identify",
    "read_source",
    "version_tag",
]

#: Bump when what an entry means changes; older entries are then ignored.
SCHEMA = 1
DB_NAME = "analysis.db"
DIR_ENV = "TJUI_CACHE_DIR"
OFF_ENV = "TJUI_NO_CACHE"
MAX_ENV = "TJUI_CACHE_MAX_MB"
DEFAULT_MAX_BYTES = 512 * 1024 * 1024
#: Eviction frees space down to this fraction of the limit, so it runs rarely.
_EVICT_TO = 0.75
_BUSY_MS = 10_000
#: Pause between tries to open a cache file another process is creating.
_OPEN_RETRY_S = 0.02
#: Formats whose transcript depends on more than the one file read (sibling files, a
#: directory tree): their per-file entries would not cover everything they read.
MULTI_FILE_FORMATS = frozenset({"cline", "opencode"})
_SQLITE_MAGIC = b"SQLite format 3\x00"

_TABLES = """
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS tokens (
    key TEXT PRIMARY KEY, version TEXT NOT NULL, path TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha BLOB NOT NULL,
    per_message BLOB NOT NULL, system INTEGER NOT NULL, tools INTEGER NOT NULL,
    digests BLOB NOT NULL, counts BLOB NOT NULL, checksum BLOB NOT NULL,
    nbytes INTEGER NOT NULL, used REAL NOT NULL);
CREATE TABLE IF NOT EXISTS results (
    key TEXT PRIMARY KEY, version TEXT NOT NULL, path TEXT NOT NULL,
    size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL, sha BLOB NOT NULL,
    value BLOB NOT NULL, checksum BLOB NOT NULL,
    nbytes INTEGER NOT NULL, used REAL NOT NULL);
"""


def _busy(error: sqlite3.OperationalError) -> bool:
    """Whether ``error`` is another connection holding a lock (worth trying again)."""
    code = getattr(error, "sqlite_errorcode", None)
    return code is not None and (code & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)


def version_tag() -> str:
    """What an entry must have been written under to be used: version and schema."""
    from tinyjuice import __version__

    return f"{__version__}+schema{SCHEMA}"


def cache_disabled() -> bool:
    return os.environ.get(OFF_ENV, "") not in ("", "0")


def cache_dir() -> Path:
    """``$TJUI_CACHE_DIR``, else the platform's user cache directory for tjui."""
    override = os.environ.get(DIR_ENV)
    if override:
        return Path(override).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("tjui", appauthor=False))


def _max_bytes() -> int:
    raw = os.environ.get(MAX_ENV, "")
    try:
        mb = float(raw) if raw else None
    except ValueError:
        mb = None
    return int(mb * 1024 * 1024) if mb is not None and mb > 0 else DEFAULT_MAX_BYTES


def default_cache() -> AnalysisCache | None:
    """The user's cache, or None when ``TJUI_NO_CACHE`` turns it off."""
    if cache_disabled():
        return None
    return AnalysisCache(cache_dir(), max_bytes=_max_bytes())


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True, slots=True)
class SourceIdentity:
    """A file as read: its resolved path, size, mtime and the sha256 of its bytes."""

    path: str
    size: int
    mtime_ns: int
    sha256: bytes


@dataclass(frozen=True, slots=True)
class Source:
    """The bytes of a transcript file, read once, and their identity.

    ``identity`` is None when the bytes alone do not decide the transcript (a database,
    a directory tree): such sources are never cached by file.
    """

    path: Path
    data: bytes
    identity: SourceIdentity | None

    def parse(
        self, format: str | None = None, *, session: str | None = None, lenient: bool = False
    ) -> tuple[Transcript, SourceIdentity | None]:
        """The transcript, and the identity to cache it under (None: do not cache)."""
        from tinyjuice.formats import LoadOptions, load_bytes

        transcript = load_bytes(
            self.data, self.path, format, options=LoadOptions(lenient=lenient, session=session)
        )
        if transcript.format in MULTI_FILE_FORMATS:
            return transcript, None
        return transcript, self.identity


def read_source(path: str | Path) -> Source:
    """Read a transcript file's bytes and hash them (raises ``LoadError`` if unreadable)."""
    from tinyjuice.formats import entry_path
    from tinyjuice.formats._io import read_bytes

    p = entry_path(Path(path))
    data = read_bytes(p)
    return Source(p, data, identify(p, data))


def identify(
    path: Path, data: bytes, sha256: bytes | None = None, format: str | None = None
) -> SourceIdentity | None:
    """The identity of ``data`` read from ``path`` (its sha256 when already known), or
    None when the bytes alone do not decide the transcript (a database, a ``format``
    that reads sibling files)."""
    if data.startswith(_SQLITE_MAGIC) or format in MULTI_FILE_FORMATS:
        return None
    try:
        if path.is_dir():
            return None
        mtime_ns = path.stat().st_mtime_ns
        real = os.path.realpath(path)
    except OSError:
        return None
    sha = sha256 if sha256 is not None else hashlib.sha256(data).digest()
    return SourceIdentity(real, len(data), mtime_ns, sha)


# --------------------------------------------------------------------------- counting


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()


class _RememberingCounter:
    """A counter that answers known texts from a digest map and records every count.

    Misses go to the real counter, so every figure is the real counter's.
    """

    def __init__(self, inner: TokenCounter, known: dict[bytes, int]) -> None:
        self.inner = inner
        self.name = inner.name
        self.kind = inner.kind
        self.message_overhead = inner.message_overhead
        self.known = known
        self.seen: dict[bytes, int] = {}
        self.encoded = 0

    def count(self, text: str) -> int:
        return self.count_many([text])[0]

    def count_many(self, texts: Sequence[str]) -> list[int]:
        known, seen = self.known, self.seen
        out = [0] * len(texts)
        todo: list[tuple[int, bytes, str]] = []
        for i, text in enumerate(texts):
            if not text:
                continue
            d = _digest(text)
            n = seen.get(d)
            if n is None:
                n = known.get(d)
            if n is None:
                todo.append((i, d, text))
            else:
                out[i] = seen[d] = n
        if todo:
            counts = self.inner.count_many([t for _, _, t in todo])
            self.encoded += len(todo)
            for (i, d, _), n in zip(todo, counts, strict=True):
                out[i] = seen[d] = n
        return out


def _pack(values: Sequence[int]) -> bytes:
    return array("q", values).tobytes()


def _unpack(blob: bytes) -> list[int]:
    a = array("q")
    if len(blob) % a.itemsize:
        raise ValueError("truncated array")
    a.frombytes(blob)
    return a.tolist()


def _checksum(*parts: bytes | int | str) -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        raw = part if isinstance(part, bytes) else str(part).encode()
        h.update(len(raw).to_bytes(8, "little"))
        h.update(raw)
    return h.digest()


def _key(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True, slots=True)
class TokenLookup:
    """Counts from :meth:`AnalysisCache.tokens` and how they were obtained."""

    tokens: TranscriptTokens
    #: "hit" (the same bytes), "partial" (some texts known), "miss" or "off".
    status: str
    #: Texts the counter had to encode this time.
    encoded: int


class AnalysisCache:
    """The cache file in ``directory``; every failure to use it is a miss, never an error."""

    def __init__(
        self, directory: Path, *, max_bytes: int = DEFAULT_MAX_BYTES, busy_ms: int = _BUSY_MS
    ) -> None:
        self.directory = Path(directory)
        self.busy_ms = busy_ms
        self.path = self.directory / DB_NAME
        self.max_bytes = max_bytes
        self.version = version_tag()
        self._db: sqlite3.Connection | None = None
        self._broken = False

    # ------------------------------------------------------------------ connection

    def _connect(self) -> sqlite3.Connection | None:
        if self._db is not None or self._broken:
            return self._db
        deadline = time.monotonic() + self.busy_ms / 1000
        attempt = 0
        while attempt < 2:
            try:
                self._db = self._open()
                return self._db
            except sqlite3.OperationalError as e:
                # Two processes creating the file at once: switching a new file to WAL
                # reports "locked" at once, without waiting on the busy timeout. Try
                # again until it would have timed out; then (or read-only, no space)
                # do without: it is not damage.
                if not _busy(e) or time.monotonic() >= deadline:
                    break
                time.sleep(_OPEN_RETRY_S)
                continue
            except sqlite3.DatabaseError:
                # Not a database, or damaged: delete it and start again (once).
                self.close()
                if attempt == 0:
                    self._remove_files()
                attempt += 1
            except (sqlite3.Error, OSError):
                break
        self._broken = True
        return None

    def _open(self) -> sqlite3.Connection:
        self.directory.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=self.busy_ms / 1000, isolation_level=None)
        try:
            db.execute(f"PRAGMA busy_timeout={int(self.busy_ms)}")
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            db.executescript(_TABLES)
        except BaseException:
            db.close()
            raise
        return db

    def _remove_files(self) -> None:
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(f"{self.path}{suffix}")

    def close(self) -> None:
        if self._db is not None:
            try:
                self._db.close()
            finally:
                self._db = None

    def _write(self, sql: str, rows: Sequence[tuple[Any, ...]]) -> None:
        db = self._connect()
        if db is None:
            return
        try:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.executemany(sql, rows)
                db.execute("DELETE FROM tokens WHERE version != ?", (self.version,))
                db.execute("DELETE FROM results WHERE version != ?", (self.version,))
                self._evict(db)
                db.execute("COMMIT")
            except BaseException:
                db.execute("ROLLBACK")
                raise
        except sqlite3.Error:
            pass  # a full disk, a lock held too long: the figures were right anyway

    def _evict(self, db: sqlite3.Connection) -> None:
        total = self._total_bytes(db)
        if total <= self.max_bytes:
            return
        goal = int(self.max_bytes * _EVICT_TO)
        rows = db.execute(
            "SELECT 'tokens', key, nbytes, used FROM tokens"
            " UNION ALL SELECT 'results', key, nbytes, used FROM results ORDER BY used"
        ).fetchall()
        for table, key, nbytes, _ in rows:
            if total <= goal:
                break
            db.execute(f"DELETE FROM {table} WHERE key = ?", (key,))
            total -= nbytes

    @staticmethod
    def _total_bytes(db: sqlite3.Connection) -> int:
        row = db.execute(
            "SELECT (SELECT coalesce(sum(nbytes), 0) FROM tokens)"
            " + (SELECT coalesce(sum(nbytes), 0) FROM results)"
        ).fetchone()
        return int(row[0])

    def _touch(self, table: str, key: str) -> None:
        db = self._connect()
        if db is None:
            return
        with contextlib.suppress(sqlite3.Error):
            db.execute(f"UPDATE {table} SET used = ? WHERE key = ?", (time.time(), key))

    def _fetch(self, sql: str, key: str) -> tuple[Any, ...] | None:
        db = self._connect()
        if db is None:
            return None
        try:
            row: tuple[Any, ...] | None = db.execute(sql, (key,)).fetchone()
        except sqlite3.OperationalError:
            return None  # e.g. locked: a miss, the file is fine
        except sqlite3.DatabaseError:
            # Damaged under us: rebuild on the next use.
            self.close()
            self._remove_files()
            return None
        except sqlite3.Error:
            return None
        return row

    # ------------------------------------------------------------------ token counts

    def tokens(
        self,
        transcript: Transcript,
        identity: SourceIdentity | None,
        counter: TokenCounter,
        *,
        variant: str = "",
    ) -> TokenLookup:
        """``count_transcript(transcript, counter)``, from the cache where it can be.

        ``identity`` is the file ``transcript`` was parsed from (None: no file entry is
        read or written); ``variant`` names how it was read (format, session, options).
        Only exact counters are cached (an estimate costs less than a lookup).
        """
        if counter.kind is not CountKind.EXACT:
            return TokenLookup(count_transcript(transcript, counter), "off", 0)
        key, row = self._tokens_row(identity, counter, variant)
        known: dict[bytes, int] = {}
        if row is not None and identity is not None:
            hit = self._hit(row, identity, transcript, counter)
            if hit is not None:
                self._touch("tokens", key)
                return TokenLookup(hit, "hit", 0)
            known = self._known_texts(row)
        remembering = _RememberingCounter(counter, known)
        tokens = count_transcript(transcript, remembering)
        if identity is not None:
            self._store_tokens(key, identity, tokens, remembering.seen)
        status = "partial" if known else "miss"
        return TokenLookup(tokens, status, remembering.encoded)

    def stored_tokens(
        self,
        transcript: Transcript,
        identity: SourceIdentity | None,
        counter: TokenCounter,
        *,
        variant: str = "",
    ) -> TranscriptTokens | None:
        """The counts stored for exactly these bytes, or None (nothing is counted)."""
        if identity is None or counter.kind is not CountKind.EXACT:
            return None
        key, row = self._tokens_row(identity, counter, variant)
        hit = None if row is None else self._hit(row, identity, transcript, counter)
        if hit is not None:
            self._touch("tokens", key)
        return hit

    def holds_tokens(self, identity: SourceIdentity) -> bool:
        """Whether counts for exactly these bytes are stored (under any reading)."""
        db = self._connect()
        if db is None:
            return False
        try:
            row = db.execute(
                "SELECT 1 FROM tokens WHERE path = ? AND size = ? AND sha = ? AND version = ?",
                (identity.path, identity.size, identity.sha256, self.version),
            ).fetchone()
        except sqlite3.Error:
            return False
        return row is not None

    def _tokens_row(
        self, identity: SourceIdentity | None, counter: TokenCounter, variant: str
    ) -> tuple[str, tuple[Any, ...] | None]:
        key = _key("tokens", identity.path if identity else "", variant, counter.name)
        row = self._fetch(
            "SELECT version, size, sha, per_message, system, tools, digests, counts, checksum"
            " FROM tokens WHERE key = ?",
            key,
        )
        return key, row

    def _valid_row(self, row: tuple[Any, ...]) -> bool:
        version, size, sha, per, system, tools, digests, counts, check = row
        if version != self.version:
            return False
        return bool(check == _checksum(size, sha, per, system, tools, digests, counts))

    def _hit(
        self,
        row: tuple[Any, ...],
        identity: SourceIdentity,
        transcript: Transcript,
        counter: TokenCounter,
    ) -> TranscriptTokens | None:
        _, size, sha, per_blob, system, tools, *_ = row
        if size != identity.size or sha != identity.sha256 or not self._valid_row(row):
            return None
        try:
            per = _unpack(per_blob)
        except ValueError:
            return None
        if len(per) != len(transcript.messages):
            return None
        return TranscriptTokens(
            per_message=tuple(per),
            prefix=(0, *accumulate(per)),
            system_prompt=int(system),
            tools=int(tools),
            counter=counter.name,
            kind=counter.kind,
        )

    def _known_texts(self, row: tuple[Any, ...]) -> dict[bytes, int]:
        if not self._valid_row(row):
            return {}
        digests, counts = row[6], row[7]
        try:
            values = _unpack(counts)
        except ValueError:
            return {}
        if len(digests) != 16 * len(values):
            return {}
        return {digests[16 * i : 16 * i + 16]: n for i, n in enumerate(values)}

    def _store_tokens(
        self,
        key: str,
        identity: SourceIdentity,
        tokens: TranscriptTokens,
        seen: dict[bytes, int],
    ) -> None:
        per = _pack(tokens.per_message)
        digests = b"".join(seen)
        counts = _pack(list(seen.values()))
        sha = identity.sha256
        check = _checksum(
            identity.size, sha, per, tokens.system_prompt, tokens.tools, digests, counts
        )
        nbytes = len(per) + len(digests) + len(counts) + 200
        row = (
            *self._row_start(key, identity),
            per,
            tokens.system_prompt,
            tokens.tools,
            digests,
            counts,
            check,
            nbytes,
            time.time(),
        )
        self._write("INSERT OR REPLACE INTO tokens VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", [row])

    def _row_start(self, key: str, identity: SourceIdentity) -> tuple[Any, ...]:
        """The columns every entry starts with: key, version and the file's identity."""
        return (key, self.version, identity.path, identity.size, identity.mtime_ns, identity.sha256)

    # ------------------------------------------------------------------ results

    def get_result(self, identity: SourceIdentity | None, kind: str, params: Any) -> Any | None:
        """A value :meth:`put_result` stored for the same bytes, kind and params."""
        if identity is None:
            return None
        key = _key("result", identity.path, kind, json.dumps(params, sort_keys=True))
        row = self._fetch(
            "SELECT version, size, sha, value, checksum FROM results WHERE key = ?", key
        )
        if row is None:
            return None
        version, size, sha, value, check = row
        if (
            version != self.version
            or size != identity.size
            or sha != identity.sha256
            or check != _checksum(size, sha, value)
        ):
            return None
        try:
            result = json.loads(value)
        except ValueError:
            return None
        self._touch("results", key)
        return result

    def result_size(self, path: str, kind: str, params: Any) -> int | None:
        """The size of the bytes a :meth:`put_result` entry for ``path`` (resolved), kind
        and params was stored for, or None: a caller can skip hashing a file whose size
        differs. Only :meth:`get_result` validates an entry."""
        key = _key("result", path, kind, json.dumps(params, sort_keys=True))
        row = self._fetch("SELECT version, size FROM results WHERE key = ?", key)
        if row is None or row[0] != self.version:
            return None
        return int(row[1])

    def put_result(
        self, identity: SourceIdentity | None, kind: str, params: Any, value: Any
    ) -> None:
        if identity is None:
            return
        key = _key("result", identity.path, kind, json.dumps(params, sort_keys=True))
        blob = json.dumps(value, ensure_ascii=False).encode()
        sha = identity.sha256
        row = (
            *self._row_start(key, identity),
            blob,
            _checksum(identity.size, sha, blob),
            len(blob) + 200,
            time.time(),
        )
        self._write("INSERT OR REPLACE INTO results VALUES (?,?,?,?,?,?,?,?,?,?)", [row])

    # ------------------------------------------------------------------ management

    def problem(self) -> str | None:
        """Why the cache cannot be kept where it is (its directory is a file, or cannot
        be written), else None. Every run works without it; this only says so."""
        d = self.directory
        while not d.exists() and d.parent != d:
            d = d.parent  # the nearest existing ancestor is where it would be created
        if not d.is_dir():
            return f"{d} is not a directory"
        if not os.access(d, os.W_OK | os.X_OK):
            return f"{d} cannot be written"
        return None

    def info(self) -> dict[str, Any]:
        """Where the cache is, how big, how many entries (and how many are stale)."""
        out: dict[str, Any] = {
            "path": str(self.path),
            "version": self.version,
            "max_bytes": self.max_bytes,
            "file_bytes": 0,
            "entry_bytes": 0,
            "files": 0,
            "results": 0,
            "stale": 0,
            "problem": self.problem(),
        }
        if not self.path.exists():
            return out
        out["file_bytes"] = sum(
            os.path.getsize(f"{self.path}{s}")
            for s in ("", "-wal")
            if os.path.exists(f"{self.path}{s}")
        )
        db = self._connect()
        if db is None:
            return out
        try:
            for table, name in (("tokens", "files"), ("results", "results")):
                out[name] = db.execute(
                    f"SELECT count(*) FROM {table} WHERE version = ?", (self.version,)
                ).fetchone()[0]
                out["stale"] += db.execute(
                    f"SELECT count(*) FROM {table} WHERE version != ?", (self.version,)
                ).fetchone()[0]
            out["entry_bytes"] = self._total_bytes(db)
        except sqlite3.Error:
            pass
        return out

    def clear(self) -> int:
        """Delete every entry; how many there were."""
        db = self._connect()
        if db is None:
            self._remove_files()
            return 0
        try:
            db.execute("BEGIN IMMEDIATE")
            n = db.execute("SELECT (SELECT count(*) FROM tokens) + (SELECT count(*) FROM results)")
            removed = int(n.fetchone()[0])
            db.execute("DELETE FROM tokens")
            db.execute("DELETE FROM results")
            db.execute("COMMIT")
            db.execute("VACUUM")
        except sqlite3.Error:
            self.close()
            self._remove_files()
            return 0
        return removed


def counter_spec() -> str:
    """What decides which counter :func:`~tinyjuice.tokens.default_counter` gives, found
    without loading a tokenizer: results stored under another spec are not reused."""
    from tinyjuice.tokens import _BLOBS, _tiktoken_cache_has

    env = f"{os.environ.get('TJUI_TOKENIZER', '')}|{os.environ.get('TJUI_ENCODING', '')}"
    cached = ",".join(name for name, url in _BLOBS.items() if _tiktoken_cache_has(url))
    return f"{env}|{cached}"
