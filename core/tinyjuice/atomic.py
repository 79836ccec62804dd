"""Atomic file writes, and the test checkpoints the store passes through.

:func:`atomic_write` never leaves a half-written file at the target path: the bytes go
to a temporary file in the same directory, which is flushed and fsynced, given the
target's permission bits, renamed over the target, and then the directory itself is
fsynced so the rename survives a power cut. A reader sees the old file or the new one,
never a mix. With ``check_replaced`` the rename is an atomic exchange where the system
allows it, so the file it replaced can be checked — and put back — afterwards.

:func:`checkpoint` marks the points where a crash is interesting (before/after the
archive, mid-write, before/after the rename, mid-transaction). It does nothing unless
the crash-test environment variables are set: ``TJUI_CRASH_AT=<point>`` kills the
process there with SIGKILL (no cleanup handlers run, as in a real crash), and
``TJUI_PAUSE_AT=<point>`` with ``TJUI_PAUSE_FILE=<path>`` creates ``<path>.reached``
and waits until ``<path>`` exists (for tests that need two processes to overlap).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import hashlib
import os
import signal
import stat
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "CRASH_POINTS",
    "SpecialFileError",
    "atomic_write",
    "checkpoint",
    "exchange",
    "file_digest",
    "file_mode",
    "fsync_dir",
    "output_target",
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
    "after-swap",
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


def file_mode(path: Path, default: int = 0o600) -> int:
    """The permission bits of the file at ``path`` (following links), else ``default``.

    What a new output takes from its source, so a private transcript stays private."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        return default


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


class SpecialFileError(OSError):
    """An output path names something that cannot be written (a socket, a pipe with no
    reader, a block device); the message says what."""

    def __str__(self) -> str:
        return str(self.strerror)


_STREAM_PATHS = {"/dev/stdout": 1, "/dev/stderr": 2}
_FD_PREFIXES = ("/dev/fd/", "/proc/self/fd/")


def output_target(path: Path) -> str | None:
    """How an output path is written: None for a file (replaced atomically — through a
    symlink, the file it points to), else the kind of special file written directly:
    ``"stream"`` (``/dev/stdout``, ``/dev/stderr``, ``/dev/fd/N``), ``"device"`` (a
    character device) or ``"pipe"`` (a FIFO). Raises :class:`SpecialFileError` for
    what is never written (a socket, a block device)."""
    text = str(path)
    if text in _STREAM_PATHS or (
        text.startswith(_FD_PREFIXES) and text.rsplit("/", 1)[1].isdigit()
    ):
        return "stream"
    try:
        st = os.stat(path)
    except OSError:
        return None  # a new file (or a dangling link: its target is created)
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None  # a directory is refused by the open itself
    if stat.S_ISCHR(st.st_mode):
        return "device"
    if stat.S_ISFIFO(st.st_mode):
        return "pipe"
    kind = "a socket" if stat.S_ISSOCK(st.st_mode) else "a block device"
    raise SpecialFileError(errno.EINVAL, f"is {kind}, not a file; give a file path", text)


def _through_links(target: Path) -> Path:
    """The file a symlink (or a chain of them) finally names; ``target`` otherwise."""
    if not target.is_symlink():
        return target
    return Path(os.path.realpath(target))


def _write_stream(target: Path, kind: str, data: bytes) -> None:
    """Write ``data`` to a standard stream, character device or pipe as it is."""
    text = str(target)
    if kind == "stream":
        number = _STREAM_PATHS.get(text) or int(text.rsplit("/", 1)[1])
        for py in (sys.stdout, sys.stderr):
            with contextlib.suppress(AttributeError, OSError, ValueError):
                if py.fileno() == number:
                    py.flush()
        _write_all(number, memoryview(data))
        return
    flags = os.O_WRONLY | getattr(os, "O_NOCTTY", 0)
    if kind == "pipe":
        flags |= os.O_NONBLOCK  # no reader: ENXIO at once instead of waiting forever
    try:
        fd = os.open(target, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise SpecialFileError(errno.ENXIO, "is a named pipe with no reader", text) from None
        raise
    try:
        os.set_blocking(fd, True)
        _write_all(fd, memoryview(data))
    finally:
        os.close(fd)


def atomic_write(
    target: Path,
    data: bytes,
    *,
    tag: str = "w",
    mode: int | None = None,
    before_rename: Callable[[], None] | None = None,
    check_replaced: Callable[[bytes], None] | None = None,
) -> None:
    """Replace ``target`` with ``data`` atomically; keep the file's permission bits.

    ``mode`` sets the permission bits of a new file (default 0o644 less the umask is
    what ``open`` gives; an existing target's bits are always kept). ``before_rename``
    runs after the temporary file is complete and synced, just before the rename: a
    last chance to refuse (raise) — the temporary file is then removed.

    ``check_replaced`` closes the window between that last look and the rename: it
    receives the bytes of the very file the rename replaced (read after the swap, so a
    write that landed in between is in them) and may raise, which puts that file back
    — the same inode where possible, so an agent still holding it open keeps writing to
    the live file — and lets the exception through.

    Links and special files follow :func:`output_target`'s rule: a symlink is written
    through (the file it points to is replaced, the link stays); a standard stream,
    character device or pipe with a reader is written directly, never replaced.
    """
    target = Path(target)
    stream = output_target(target)
    if stream is not None:
        if before_rename is not None:
            before_rename()
        _write_stream(target, stream, data)
        return
    target = _through_links(target)
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
        if check_replaced is None or not target.exists():
            os.replace(tmp, target)
        else:
            _swap_and_check(tmp, target, data, check_replaced)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    checkpoint("after-rename")
    fsync_dir(directory)


def _swap_and_check(
    tmp: Path, target: Path, data: bytes, check_replaced: Callable[[bytes], None]
) -> None:
    """Rename ``tmp`` over ``target``, then let ``check_replaced`` judge what it replaced.

    With ``renameat2(RENAME_EXCHANGE)`` the two names swap atomically, so ``tmp`` then
    names exactly the file that was replaced, and putting it back is a second swap.
    Elsewhere the original is kept open through the rename and, if refused, its
    current bytes are written back.
    """
    with open(target, "rb") as held:
        swapped = exchange(tmp, target)
        if not swapped:
            os.replace(tmp, target)
        checkpoint("after-swap")
        replaced = tmp.read_bytes() if swapped else _read_fd(held.fileno())
        try:
            check_replaced(replaced)
        except BaseException as exc:
            if swapped:
                exchange(tmp, target)
                _keep_conflict(tmp, target, data, exc)
            else:
                _restore_copy(target, _read_fd(held.fileno()))
            raise
        if swapped:
            tmp.unlink(missing_ok=True)


def _keep_conflict(tmp: Path, target: Path, data: bytes, exc: BaseException) -> None:
    """After a swap back: if something wrote to the new file meanwhile, keep it aside."""
    try:
        current = tmp.read_bytes()
    except OSError:
        return
    if current == data:
        return
    kept = target.with_name(f"{target.name}.tjui-conflict-{int(time.time())}")
    os.replace(tmp, kept)
    if len(exc.args) == 1 and isinstance(exc.args[0], str):
        exc.args = (f"{exc.args[0]}; what was written to the new version meanwhile is in {kept}",)


def _restore_copy(target: Path, current: bytes) -> None:
    back = temp_path_for(target, "restore")
    fd = os.open(back, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        _write_all(fd, memoryview(current))
        os.fsync(fd)
    finally:
        os.close(fd)
    with contextlib.suppress(OSError):
        os.chmod(back, stat.S_IMODE(target.stat().st_mode))
    os.replace(back, target)


def _read_fd(fd: int) -> bytes:
    chunks: list[bytes] = []
    offset = 0
    while chunk := os.pread(fd, 1 << 20, offset):
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
_renameat2: Any = None


def exchange(a: Path, b: Path) -> bool:
    """Swap the files named ``a`` and ``b`` atomically (Linux ``renameat2`` with
    ``RENAME_EXCHANGE``); False when the system or file system cannot."""
    global _renameat2
    if _renameat2 is None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            _renameat2 = libc.renameat2
            _renameat2.argtypes = [
                ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint
            ]  # fmt: skip
        except (OSError, AttributeError):
            _renameat2 = False
    if _renameat2 is False:
        return False
    if _renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(b))


def _write_all(fd: int, view: memoryview) -> None:
    while view:
        written = os.write(fd, view)
        view = view[written:]
