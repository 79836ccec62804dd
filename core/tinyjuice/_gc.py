"""Pausing the cyclic garbage collector around bulk work."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Run the body with automatic cyclic collection off, then restore it as it was.

    For work that builds hundreds of thousands of objects and no reference cycles worth
    collecting (loading a transcript, compacting one): each automatic collection would
    rescan the whole, growing heap — a third of a large load, a tenth of a large
    compaction. Reference counting still frees everything as usual; cycles made in the
    body are collected at the next collection after it. The switch is process-wide, so a
    thread running meanwhile is not collected either until the body ends.
    """
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
