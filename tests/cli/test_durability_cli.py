"""Bad paths of the commands that write: a full disk, a damaged state.db, permissions,
links and special files, non-regular inputs (issue #12)."""

from __future__ import annotations

import errno
import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest
import test_store_cli
from click.testing import CliRunner

from tinyjuice.store import Archive
from tjui.cli import main

FULL = "database or disk is full"
#: A transcript worth compressing, and a file's sha256 (shared with the store CLI tests).
session = test_store_cli.session
sha = test_store_cli.sha


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


def no_traceback(code: int, err: str) -> None:
    assert "Traceback" not in err and code != 0
    assert err.startswith("tjui: error: ")


def _full(*_args: object, **_kw: object) -> None:
    raise sqlite3.OperationalError(FULL)


# ------------------------------------------------------------- item 8: disk full


def test_archive_disk_full_on_commit(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    before = sha(session)
    Archive()  # the archive exists; its disk fills up before the commit archives
    monkeypatch.setattr(Archive, "put_blob", staticmethod(_full))
    code, _, err = run("compress", str(session), "--keep-last", "2", "--force", "--commit")
    no_traceback(code, err)
    assert code == 1 and "is full" in err and "nothing was changed" in err
    assert sha(session) == before


def test_archive_disk_full_on_undo(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, _, _ = run("compress", str(session), "--keep-last", "2", "--force", "--commit")
    assert code == 0
    committed = sha(session)
    monkeypatch.setattr(Archive, "update_commit", staticmethod(_full))
    code, _, err = run("undo")
    no_traceback(code, err)
    assert code == 1 and "is full" in err
    assert sha(session) == committed


def test_archive_disk_full_on_first_creation(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Archive, "_migrate", lambda self, conn: _full())
    code, _, err = run("compress", str(session), "--keep-last", "2", "--force", "--commit")
    no_traceback(code, err)
    assert "is full" in err


def test_enospc_writing_the_file(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tinyjuice.atomic as atomic

    before = sha(session)
    real_write = atomic._write_all

    def no_space(fd: int, view: memoryview) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic, "_write_all", no_space)
    code, _, err = run("compress", str(session), "--keep-last", "2", "--force", "--commit")
    no_traceback(code, err)
    assert code == 1 and "No space left on device" in err
    assert sha(session) == before
    monkeypatch.setattr(atomic, "_write_all", real_write)
    code, out, _ = run("history", "--json")
    assert json.loads(out)["commits"][0]["state"] == "aborted"


def test_enospc_creating_the_archive(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tinyjuice.store.archive as archive_module

    real_mkdir = Path.mkdir

    def no_space(self: Path, *args: object, **kw: object) -> None:
        if self.name == "tjui-home":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_mkdir(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(archive_module.Path, "mkdir", no_space)
    code, _, err = run("compress", str(session), "--keep-last", "2", "--force", "--commit")
    no_traceback(code, err)
    assert "No space left on device" in err


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# ------------------------------------------------------ item 9: permission bits


@pytest.fixture
def private(session: Path) -> Path:
    """The session, readable by its owner only; the usual umask."""
    os.chmod(session, 0o600)
    old = os.umask(0o022)
    yield session  # type: ignore[misc]
    os.umask(old)


def test_outputs_keep_a_private_sources_mode(private: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ("--keep-last", "2", "--force")
    assert run("compress", str(private), *args, "-o", str(out / "c.json"))[0] == 0
    assert run("convert", str(private), "--to", "sharegpt", "-o", str(out / "v.json"))[0] == 0
    export = out / "e.json"
    code, _, err = run("compress", str(private), *args, "--commit", "--mode", "export",
                       "-o", str(export))  # fmt: skip
    assert code == 0, err
    code, out_text, err = run("compress", str(private), *args, "--commit", "--mode", "child",
                              "--json")  # fmt: skip
    assert code == 0, err
    child = Path(json.loads(out_text)["commit"]["target_path"])
    for written in (out / "c.json", out / "v.json", export, child):
        assert _mode(written) == 0o600, written


def test_batch_outputs_keep_the_sources_mode(private: Path, tmp_path: Path) -> None:
    dataset = tmp_path / "data.jsonl"
    dataset.write_bytes(private.read_bytes().replace(b"\n", b"") + b"\n")
    os.chmod(dataset, 0o600)
    code, _, err = run("batch", str(dataset), "--target-tokens", "500", "-o",
                       str(tmp_path / "small.jsonl"))  # fmt: skip
    assert code == 0, err
    assert _mode(tmp_path / "small.jsonl") == 0o600
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.json").write_bytes(private.read_bytes())
    os.chmod(folder / "a.json", 0o600)
    code, _, err = run("batch", str(folder), "--target-tokens", "500", "-o",
                       str(tmp_path / "runs-small/"))  # fmt: skip
    assert code == 0, err
    assert _mode(tmp_path / "runs-small" / "a.json") == 0o600


def test_recover_and_forced_undo_keep_the_sources_mode(private: Path, tmp_path: Path) -> None:
    original = private.read_bytes()
    code, out, err = run("compress", str(private), "--keep-last", "2", "--force", "--commit",
                         "--json")  # fmt: skip
    assert code == 0, err
    digest = json.loads(out)["commit"]["source_sha256"]
    back = tmp_path / "recovered.json"
    assert run("recover", digest[:12], "-o", str(back))[0] == 0
    assert back.read_bytes() == original and _mode(back) == 0o600
    private.unlink()  # the agent deleted the compacted file
    code, _, err = run("undo", "--force")
    assert code == 0, err
    assert private.read_bytes() == original and _mode(private) == 0o600


# ------------------------------------------- item 10: links and special files


def test_an_output_symlink_is_written_through(session: Path, tmp_path: Path) -> None:
    real = tmp_path / "store" / "real.json"
    real.parent.mkdir()
    real.write_text("{}")
    os.chmod(real, 0o640)
    commands = (
        ("compress", str(session), "--keep-last", "2", "--force"),
        ("convert", str(session), "--to", "openai"),
        ("compress", str(session), "--keep-last", "2", "--force", "--commit", "--mode", "export"),
    )
    for n, args in enumerate(commands):
        link = tmp_path / f"link{n}.json"
        link.symlink_to(real)
        code, _, err = run(*args, "-o", str(link))
        assert code == 0, err
        assert link.is_symlink() and os.readlink(link) == str(real)  # the link is kept
        assert b'"messages"' in real.read_bytes()  # its file got the output
        assert _mode(real) == 0o640  # and kept its mode
        real.write_text("{}")


def test_a_pipe_is_written_directly_and_kept(session: Path, tmp_path: Path) -> None:
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[bytes] = []

    def reader() -> None:
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    import time

    deadline = time.monotonic() + 5
    code = None
    while time.monotonic() < deadline:  # until the reader has the pipe open
        code, _, err = run("convert", str(session), "--to", "openai", "-o", str(fifo))
        if code == 0 or "no reader" not in err:
            break
        time.sleep(0.05)
    assert code == 0
    thread.join(5)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a pipe, not replaced by a file
    assert json.loads(got[0])["messages"]


def test_a_pipe_with_no_reader_or_a_socket_is_refused(session: Path, tmp_path: Path) -> None:
    import socket

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, _, err = run("convert", str(session), "--to", "openai", "-o", str(fifo))
    assert code == 2 and "named pipe with no reader" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    sock_path = tmp_path / "s.sock"
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        code, _, err = run("convert", str(session), "--to", "openai", "-o", str(sock_path))
        assert code == 2 and "is a socket" in err
        assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    finally:
        sock.close()


def test_a_commit_refuses_a_stream_or_pipe_target(session: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target in (str(fifo), "/dev/stdout"):
        code, _, err = run("compress", str(session), "--keep-last", "2", "--force", "--commit",
                           "--mode", "export", "-o", target)  # fmt: skip
        no_traceback(code, err)
        assert code == 1 and "not a file" in err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_dev_stdout_is_written_to_the_stream(session: Path) -> None:
    import subprocess
    import sys

    before = os.lstat("/dev/stdout")
    proc = subprocess.run(
        [sys.executable, "-m", "tjui.cli", "convert", str(session), "--to", "openai", "-o",
         "/dev/stdout", "--json"],
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.JSONDecoder().raw_decode(proc.stdout.decode())[0]
    assert doc["messages"]  # the transcript came out on stdout
    after = os.lstat("/dev/stdout")
    assert (after.st_mode, after.st_ino) == (before.st_mode, before.st_ino)  # not replaced


# ------------------------------------------------ item 11: non-regular inputs


def _tjui(*args: str, timeout: float = 60) -> tuple[int, str]:
    """Run the real CLI in a process of its own, with a time and memory limit (an input
    that hangs or is read without end must fail the test, not the machine)."""
    import resource
    import subprocess
    import sys

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    proc = subprocess.run(
        [sys.executable, "-m", "tjui.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=limit,
        stdin=subprocess.DEVNULL,
    )
    return proc.returncode, proc.stderr


@pytest.mark.parametrize("command", ["inspect", "compress", "commit", "sessions", "batch"])
def test_a_fifo_argument_is_refused_at_once(tmp_path: Path, command: str) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    args = {
        "inspect": ("inspect", str(fifo)),
        "compress": ("compress", str(fifo), "--keep-last", "1"),
        "commit": ("compress", str(fifo), "--keep-last", "1", "--commit"),
        "sessions": ("sessions", str(fifo)),
        "batch": ("batch", str(fifo), "--target-tokens", "100", "-o", str(tmp_path / "o")),
    }[command]
    code, err = _tjui(*args, timeout=30)
    assert code == 2, err
    assert "named pipe (FIFO), not a regular file" in err and "Traceback" not in err


def test_dev_zero_is_refused_not_read_forever() -> None:
    code, err = _tjui("inspect", "/dev/zero", timeout=30)
    assert code == 2 and "is a character device, not a regular file" in err
    assert "MemoryError" not in err and "Traceback" not in err


def test_a_fifo_in_a_batch_folder_is_skipped(session: Path, tmp_path: Path) -> None:
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.json").write_bytes(session.read_bytes())
    os.mkfifo(folder / "b.json")
    code, err = _tjui("batch", str(folder), "--target-tokens", "500", "-o",
                      str(tmp_path / "out/"), timeout=60)  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["a.json"]
