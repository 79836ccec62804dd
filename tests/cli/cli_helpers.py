"""Helpers shared by the command-line tests."""

from __future__ import annotations

from click.testing import CliRunner

from tjui.cli import main


def run(*args: str) -> tuple[int, str, str]:
    """``tjui ARGS`` in-process: exit status, stdout, stderr."""
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr
