"""A reader that stops early (``tjui inspect FILE | head -1``) ends the command quietly
with status 141, as a shell reports a program killed by SIGPIPE: not 1, which tjui keeps
for a failed summary or a refused commit."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tjui.cli import EXIT_CLOSED_PIPE
from tjui.render import PipeConsole

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"

_MAIN = "import sys; from tjui.cli import main; sys.argv = ['tjui', *sys.argv[1:]]; main()"


def _closed_early(tmp_path: Path, *args: str) -> tuple[int, str]:
    """Runs tjui with its output pipe closed before it writes anything."""
    env = {**os.environ, "TJUI_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.Popen(
        [sys.executable, "-c", _MAIN, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # the reader is gone before the first write
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


@pytest.mark.parametrize(
    "args",
    [
        ("inspect", "demo.json"),
        ("compress", "--dry-run", "demo.json"),
        ("explain", "demo.json"),
        ("inspect", "--json", "claude-code.jsonl"),
    ],
    ids=["inspect", "dry-run", "explain", "inspect-json"],
)
def test_a_closed_output_ends_with_141_and_no_traceback(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    *flags, name = args
    code, err = _closed_early(tmp_path, *flags, str(SESSIONS / name))
    assert code == EXIT_CLOSED_PIPE == 141
    assert err == ""


def test_the_console_reports_a_closed_pipe_instead_of_exiting() -> None:
    with pytest.raises(BrokenPipeError):
        PipeConsole().on_broken_pipe()
