"""Live follow for the inspector: poll the open file, reload what an agent appended.

The reading is core's (:class:`tinyjuice.follow.FileTail`: appended bytes only,
partial lines held back, truncation and replacement noticed) and so is the
prediction (:func:`tinyjuice.follow.live_status`); this module holds the UI's state —
whether following is on, when the file last grew, the warning level — and the
commit dialog that refuses an in-place commit on a live file.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tinyjuice.follow import Change, FileTail, LiveStatus
from tinyjuice.store import CommitMode
from tjui.screens.commit import CommitDialog

__all__ = ["LIVE_SECONDS", "POLL_SECONDS", "QUIET_SECONDS", "LiveCommitDialog", "LiveFollow"]

#: How often the open file is checked (a ``stat``; bytes are read only when it grew).
POLL_SECONDS = 0.05
#: A file that grew (or was modified) this recently counts as live.
LIVE_SECONDS = 120.0
#: The inspector's "after" projection (a whole compress) waits until the followed file
#: has not grown for this long: it would compete with each append's reload.
QUIET_SECONDS = 1.0


@dataclass
class LiveFollow:
    """The follow state of one open file."""

    tail: FileTail
    following: bool = True
    #: Warn once when the live context reaches this % of the window (None: never).
    warn_at: float | None = None
    warned: bool = False
    status: LiveStatus | None = None
    #: The token counter ``status`` was computed with.
    status_counter: str = ""
    #: ``time.time()`` of the last change seen while open (never: not live).
    last_growth: float = field(default=float("-inf"))

    @classmethod
    def start(cls, path: Path, data: bytes, warn_at: float | None = None) -> LiveFollow | None:
        """Follow ``path`` from ``data`` (the bytes loaded); None when it cannot be followed."""
        try:
            tail = FileTail(path, data)
        except OSError:
            return None
        return cls(tail, warn_at=warn_at)

    def changed(self) -> bool:
        """Whether the file may have changed (a ``stat``; :meth:`poll` reads it)."""
        return self.following and self.tail.changed()

    def poll(self) -> Change | None:
        if not self.following:
            return None
        change = self.tail.poll()
        if change is not None:
            self.last_growth = time.time()
        return change

    def quiet_for(self) -> float:
        """Seconds left until the file has been quiet for :data:`QUIET_SECONDS` (0: it has)."""
        if not self.following:
            return 0.0
        return max(0.0, QUIET_SECONDS - (time.time() - self.last_growth))

    @property
    def live(self) -> bool:
        """The agent is (recently) writing this file."""
        return time.time() - self.last_growth <= LIVE_SECONDS

    def crossed_warning(self, status: LiveStatus, counter: str = "") -> bool:
        """Record ``status``; True once, when it first reaches the warning level."""
        self.status = status
        self.status_counter = counter
        if self.warn_at is None or self.warned or status.percent < self.warn_at:
            return False
        self.warned = True
        return True

    def header_suffix(self) -> str:
        """ " · ● live · 41% of window · compaction in 12.0k tokens (~4 turns)" while the
        file is live; " · follow off" when paused; nothing for a file at rest."""
        if not self.following:
            return " · follow off"
        if not self.live:
            return ""
        text = " · ● live"
        if self.status is not None:
            text += f" · {self.status.percent:.0f}% of window · {self.status.prediction()}"
        return text


class LiveCommitDialog(CommitDialog):
    """The commit dialog, refusing an in-place commit while the agent writes the file
    (it would overwrite the file, or keep writing into the replaced one); child and
    export commits stay allowed."""

    def __init__(self, *args: Any, live: LiveFollow, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.live = live

    def _start_commit(self, plan: Any) -> None:
        if plan.mode is CommitMode.IN_PLACE and self.live.live:
            self._result(
                "refused: the agent is still writing this file (it grew in the last"
                f" {LIVE_SECONDS:.0f} s); an in-place commit would be overwritten or lost."
                " Use child or export (m), or wait until the session ends.",
                ok=False,
            )
            return
        super()._start_commit(plan)
