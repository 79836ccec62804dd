"""Durable compaction: the commit archive, atomic writes, leases and Hermes ``state.db``.

``load_source`` → ``compress`` (the engine) → ``commit`` writes the result with the
original archived first; ``undo`` puts the original back byte-identically; ``history``
lists commits. The archive lives in ``$TJUI_HOME`` (else the user data directory).
"""

from __future__ import annotations

from tinyjuice.atomic import atomic_write
from tinyjuice.store.archive import (
    Archive,
    ArchiveError,
    ChangedSinceCommit,
    CommitError,
    CommitMode,
    CommitRecord,
    CommitState,
    SourceBusy,
    SourceKind,
    StaleSourceError,
    archive_path,
    default_home,
)
from tinyjuice.store.commit import (
    CommitPlan,
    LoadedSource,
    SourceRef,
    commit,
    history,
    load_source,
    plan_commit,
    recover,
    undo,
)
from tinyjuice.store.lease import LeaseBusy, SqliteLease

__all__ = [
    "Archive",
    "ArchiveError",
    "ChangedSinceCommit",
    "CommitError",
    "CommitMode",
    "CommitPlan",
    "CommitRecord",
    "CommitState",
    "LeaseBusy",
    "LoadedSource",
    "SourceBusy",
    "SourceKind",
    "SourceRef",
    "SqliteLease",
    "StaleSourceError",
    "archive_path",
    "atomic_write",
    "commit",
    "default_home",
    "history",
    "load_source",
    "plan_commit",
    "recover",
    "undo",
]
