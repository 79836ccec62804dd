"""Compaction leases: only one compactor may work on a session at a time.

Details: docs/store.md (`tinyjuice.lease`).
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["DEFAULT_LEASE_TTL", "CompactionLease", "InMemoryLease", "LeaseResult"]

#: Hermes' lock TTL in seconds.
DEFAULT_LEASE_TTL = 300.0


@dataclass(frozen=True, slots=True)
class LeaseResult:
    """The outcome of one acquisition attempt.

    On success ``lease_id`` identifies the lease for refresh/release. On failure
    ``holder`` and ``expires_at`` describe the lease in the way (for a "compaction already
    in flight" message).
    """

    acquired: bool
    lease_id: str | None
    holder: str | None
    expires_at: float | None
    #: True when an expired lease of another holder was taken over.
    took_over: bool = False


@runtime_checkable
class CompactionLease(Protocol):
    def try_acquire(self, key: str) -> LeaseResult: ...

    def refresh(self, lease_id: str) -> bool: ...

    def release(self, lease_id: str) -> None: ...


@dataclass(slots=True)
class _Held:
    key: str
    lease_id: str
    holder: str
    expires_at: float


class InMemoryLease:
    """A thread-safe, in-process :class:`CompactionLease` with a TTL.

    ``clock`` returns seconds (default :func:`time.monotonic`); tests inject a fake one.
    """

    def __init__(
        self,
        *,
        ttl: float = DEFAULT_LEASE_TTL,
        clock: Callable[[], float] = time.monotonic,
        holder: str | None = None,
    ) -> None:
        if ttl <= 0:
            raise ValueError(f"lease ttl must be positive seconds, got {ttl}")
        self.ttl = ttl
        self._clock = clock
        self._holder = holder or f"pid-{os.getpid()}"
        self._lock = threading.Lock()
        self._by_key: dict[str, _Held] = {}
        self._by_id: dict[str, _Held] = {}

    def try_acquire(self, key: str, *, holder: str | None = None) -> LeaseResult:
        """Take the lease for ``key`` unless a live lease holds it."""
        who = holder or self._holder
        with self._lock:
            now = self._clock()
            current = self._by_key.get(key)
            took_over = False
            if current is not None:
                if current.expires_at > now:
                    return LeaseResult(False, None, current.holder, current.expires_at)
                self._by_id.pop(current.lease_id, None)
                took_over = True
            held = _Held(key, uuid.uuid4().hex, who, now + self.ttl)
            self._by_key[key] = held
            self._by_id[held.lease_id] = held
            return LeaseResult(True, held.lease_id, who, held.expires_at, took_over)

    def refresh(self, lease_id: str) -> bool:
        """Extend a live lease by the TTL from now. False when it expired or is unknown."""
        with self._lock:
            held = self._by_id.get(lease_id)
            now = self._clock()
            if held is None or held.expires_at <= now:
                return False
            held.expires_at = now + self.ttl
            return True

    def release(self, lease_id: str) -> None:
        """Give the lease back. An unknown or superseded id does nothing."""
        with self._lock:
            held = self._by_id.pop(lease_id, None)
            if held is not None and self._by_key.get(held.key) is held:
                del self._by_key[held.key]

    def holder_of(self, key: str) -> str | None:
        """Who holds a live lease on ``key``, if anyone."""
        with self._lock:
            held = self._by_key.get(key)
            if held is None or held.expires_at <= self._clock():
                return None
            return held.holder
