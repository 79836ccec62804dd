"""A :class:`~tinyjuice.lease.CompactionLease` shared by processes, kept in the archive.

Details: docs/store.md (`tinyjuice.store.archive_lease`).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from tinyjuice.lease import DEFAULT_LEASE_TTL, LeaseResult
from tinyjuice.store.archive import Archive, CommitError

__all__ = [
    "LeaseBusy",
    "SqliteLease",
    "holder_is_dead",
    "make_holder",
]


class LeaseBusy(CommitError):
    """Another compactor holds the lease; nothing was changed."""

    def __init__(self, key: str, holder: str | None, expires_at: float | None) -> None:
        self.key = key
        self.holder = holder
        self.expires_at = expires_at
        left = ""
        if expires_at is not None:
            left = f", expires in {max(0, round(expires_at - time.time()))} s"
        super().__init__(
            f"compaction already in flight for {key} (held by {holder or 'another process'}"
            f"{left}); nothing was changed — try again when it finishes"
        )


def make_holder(label: str = "tjui") -> str:
    """A holder id naming this host and process: ``<label>:<host>:<pid>:<token>``."""
    return f"{label}:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def holder_is_dead(holder: str) -> bool:
    """True only when ``holder`` names a process of this host that no longer exists."""
    parts = holder.split(":")
    if len(parts) < 4 or parts[1] != socket.gethostname():
        return False
    try:
        pid = int(parts[2])
    except ValueError:
        return False
    if pid <= 0:
        return False
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, owned by someone else
    except OSError:
        return False
    return _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    """A killed child not yet reaped still answers kill(0); /proc says it is a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return False
    end = stat.rfind(b")")
    return end != -1 and stat[end + 2 : end + 3] == b"Z"


class SqliteLease:
    """A multi-process :class:`~tinyjuice.lease.CompactionLease` in the archive database."""

    def __init__(
        self,
        archive: Archive | None = None,
        *,
        ttl: float = DEFAULT_LEASE_TTL,
        holder: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"lease ttl must be positive seconds, got {ttl}")
        self.archive = archive or Archive()
        self.ttl = ttl
        self.holder = holder or make_holder()
        self._clock = clock

    def try_acquire(self, key: str, *, holder: str | None = None) -> LeaseResult:
        """Take the lease on ``key`` unless a live holder has it."""
        who = holder or self.holder
        with self.archive.transaction() as conn:
            now = self._clock()
            row = conn.execute(
                "SELECT lease_id, holder, expires_at FROM leases WHERE key = ?", (key,)
            ).fetchone()
            took_over = False
            if row is not None:
                alive = row["expires_at"] > now and not holder_is_dead(row["holder"])
                if alive:
                    return LeaseResult(False, None, row["holder"], row["expires_at"])
                took_over = True
                conn.execute("DELETE FROM leases WHERE key = ?", (key,))
            lease_id = uuid.uuid4().hex
            expires = now + self.ttl
            conn.execute(
                "INSERT INTO leases (key, lease_id, holder, acquired_at, expires_at)"
                " VALUES (?, ?, ?, ?, ?)",
                (key, lease_id, who, now, expires),
            )
        return LeaseResult(True, lease_id, who, expires, took_over)

    def refresh(self, lease_id: str) -> bool:
        """Extend a live lease by the TTL from now; False when it expired or was taken."""
        with self.archive.transaction() as conn:
            now = self._clock()
            cur = conn.execute(
                "UPDATE leases SET expires_at = ? WHERE lease_id = ? AND expires_at > ?",
                (now + self.ttl, lease_id, now),
            )
            return cur.rowcount == 1

    def release(self, lease_id: str) -> None:
        """Give the lease back; an unknown or superseded id does nothing."""
        with self.archive.transaction() as conn:
            conn.execute("DELETE FROM leases WHERE lease_id = ?", (lease_id,))

    def holder_of(self, key: str) -> str | None:
        """Who holds a live lease on ``key``, if anyone."""
        with self.archive.connect() as conn:
            row = conn.execute(
                "SELECT holder, expires_at FROM leases WHERE key = ?", (key,)
            ).fetchone()
        if row is None or row["expires_at"] <= self._clock() or holder_is_dead(row["holder"]):
            return None
        return str(row["holder"])

    def is_held(self, key: str) -> bool:
        return self.holder_of(key) is not None

    @contextmanager
    def hold(self, key: str, *, refresh_every: float | None = None) -> Iterator[LeaseResult]:
        """Hold the lease on ``key`` for the block, refreshing it in the background.

        Raises :class:`LeaseBusy` (nothing changed) when another holder has it.
        """
        got = self.try_acquire(key)
        if not got.acquired or got.lease_id is None:
            raise LeaseBusy(key, got.holder, got.expires_at)
        lease_id = got.lease_id
        stop = threading.Event()
        interval = refresh_every if refresh_every is not None else max(1.0, self.ttl / 5)

        def keep_alive() -> None:
            while not stop.wait(interval):
                try:
                    if not self.refresh(lease_id):
                        return
                except Exception:
                    return

        thread = threading.Thread(target=keep_alive, name=f"lease-{key[:20]}", daemon=True)
        thread.start()
        try:
            yield got
        finally:
            stop.set()
            thread.join(timeout=5)
            self.release(lease_id)
