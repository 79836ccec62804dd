"""Commands imported only when used: `tjui --help` lists them with their own help."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest
from click.testing import CliRunner

from tjui.cli import _LAZY, main


@pytest.mark.parametrize("name", sorted(_LAZY))
def test_lazy_help_is_the_commands_own(name: str) -> None:
    module, attr, text = _LAZY[name]
    command = getattr(importlib.import_module(module), attr)
    assert command.name == name
    for limit in (30, 45, 60, 200):
        stand_in = click.Command(name, help=text)
        assert stand_in.get_short_help_str(limit) == command.get_short_help_str(limit)


def test_help_lists_every_command_without_importing_the_lazy_ones() -> None:
    code = (
        "import sys; from click.testing import CliRunner; from tjui.cli import main;"
        "out = CliRunner().invoke(main, ['--help']).output;"
        f"print(sorted(m for m in {sorted(v[0] for v in _LAZY.values())!r} if m in sys.modules));"
        "print(out)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    imported, _, listing = done.stdout.partition("\n")
    assert imported == "[]"
    for name in ("inspect", "compress", *_LAZY):
        assert f"\n  {name} " in listing


def test_lazy_commands_run_and_typos_name_them() -> None:
    result = CliRunner().invoke(main, ["cache", "info", "--json"])
    assert result.exit_code == 0, result.output
    result = CliRunner().invoke(main, ["explainn"])
    assert result.exit_code == 2 and "Did you mean 'explain'?" in result.output
