"""Pausing the cyclic garbage collector around bulk work."""

from __future__ import annotations

import gc
from types import TracebackType


class gc_paused:  # lower case: used like a function, ``with gc_paused():``
    """Run the body with automatic cyclic collection off, then restore it as it was.

    For work that builds hundreds of thousands of objects and no reference cycles worth
    collecting (loading a transcript, compacting one): each automatic collection would
    rescan the whole, growing heap — a third of a large load, a tenth of a large
    compaction. Reference counting still frees everything as usual; cycles made in the
    body are collected at the next collection after it. The switch is process-wide, so a
    thread running meanwhile is not collected either until the body ends.

    A class rather than a generator-based context manager: leaving the body then
    allocates nothing, so no collection is triggered while the body's temporaries (a
    parsed JSON document) are still alive; they are freed first, as the caller returns.
    """

    __slots__ = ("_was_enabled",)

    def __enter__(self) -> None:
        self._was_enabled = gc.isenabled()
        if self._was_enabled:
            gc.disable()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._was_enabled:
            gc.enable()
