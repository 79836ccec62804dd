"""Atomic file writes, and the test checkpoints the store passes through.

:func:`atomic_write` never leaves a half-written file at the target path: the bytes go
to a temporary file in the same directory, which is flushed and fsynced, given the
target's permission bits, renamed over the target, and then the directory itself is
fsynced so the rename survives a power cut. A reader sees the old file or the new one,
never a mix.

:func:`checkpoint` marks the points where a crash is interesting (before/after the
archive, mid-write, before/after the rename, mid-transaction). It does nothing unless
the crash-test environment variables are set: ``TJUI_CRASH_AT=<point>`` kills the
process there with SIGKILL (no cleanup handlers run, as in a real crash), and
``TJUI_PAUSE_AT=<point>`` with ``TJUI_PAUSE_FILE=<path>`` creates ``<path>.reached``
and waits until ``<path>`` exists (for tests that need two processes to overlap).
"""

from __future__ import annotations

import hashlib
import os
import signal
import stat
import time
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "CRASH_POINTS",
    "atomic_write",
    "checkpoint",
    "file_digest",
    "fsync_dir",
    "sha256_hex",
    "temp_path_for",
]

#: Every point :func:`checkpoint` is called with, in the order a commit reaches them.
CRASH_POINTS: tuple[str, ...] = (
    "lease-acquired",
    "before-archive",
    "after-archive",
    "mid-write",
    "before-rename",
    "after-rename",
    "mid-transaction",
    "after-transaction",
    "before-done",
)

_CRASH_ENV = "TJUI_CRASH_AT"
_PAUSE_ENV = "TJUI_PAUSE_AT"
_PAUSE_FILE_ENV = "TJUI_PAUSE_FILE"
_PAUSE_LIMIT = 60.0
#: Temporary files of the store end with this, so recovery can find its own litter.
TEMP_SUFFIX = ".tjui-tmp"


def checkpoint(point: str) -> None:
    """A named point in a commit or undo; a no-op unless a crash test asks for it."""
    if os.environ.get(_CRASH_ENV) == point:
        os.kill(os.getpid(), signal.SIGKILL)
    if os.environ.get(_PAUSE_ENV) == point:
        gate = os.environ.get(_PAUSE_FILE_ENV)
        if not gate:
            return
        Path(gate + ".reached").touch()
        deadline = time.monotonic() + _PAUSE_LIMIT
        while not Path(gate).exists() and time.monotonic() < deadline:
            time.sleep(0.02)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def file_digest(path: Path) -> tuple[str, int] | None:
    """(sha256, size) of the file at ``path``, or None when there is no such file."""
    try:
        with path.open("rb") as fh:
            h = hashlib.sha256()
            size = 0
            while chunk := fh.read(1 << 20):
                h.update(chunk)
                size += len(chunk)
    except FileNotFoundError:
        return None
    return h.hexdigest(), size


def fsync_dir(directory: Path) -> None:
    """Flush a directory's entries (a rename or unlink in it) to disk."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return  # not supported here (e.g. some network file systems); nothing to flush
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def temp_path_for(target: Path, tag: str) -> Path:
    """The temporary file :func:`atomic_write` uses for ``target`` under ``tag``."""
    return target.with_name(f".{target.name}.{tag}{TEMP_SUFFIX}")


def atomic_write(
    target: Path,
    data: bytes,
    *,
    tag: str = "w",
    mode: int | None = None,
    before_rename: Callable[[], None] | None = None,
) -> None:
    """Replace ``target`` with ``data`` atomically; keep the file's permission bits.

    ``mode`` sets the permission bits of a new file (default 0o644 less the umask is
    what ``open`` gives; an existing target's bits are always kept). ``before_rename``
    runs after the temporary file is complete and synced, just before the rename: a
    last chance to refuse (raise) — the temporary file is then removed.
    """
    target = Path(target)
    directory = target.parent if str(target.parent) else Path(".")
    try:
        keep_mode: int | None = stat.S_IMODE(target.stat().st_mode)
    except FileNotFoundError:
        keep_mode = mode
    tmp = temp_path_for(target, tag)
    # A new file with no mode asked for gets what open() would give it (0o666 less the
    # umask); otherwise the temporary file starts private and takes the mode below.
    create_mode = 0o666 if keep_mode is None else 0o600
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, create_mode)
    try:
        try:
            half = len(data) // 2
            _write_all(fd, memoryview(data)[:half])
            checkpoint("mid-write")
            _write_all(fd, memoryview(data)[half:])
            os.fsync(fd)
        finally:
            os.close(fd)
        if keep_mode is not None:
            os.chmod(tmp, keep_mode)
        checkpoint("before-rename")
        if before_rename is not None:
            before_rename()
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    checkpoint("after-rename")
    fsync_dir(directory)


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        written = os.write(fd, view)
        view = view[written:]
