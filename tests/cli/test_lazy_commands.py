"""Commands imported only when used: `tjui --help` lists them with their own help."""

from __future__ import annotations

import ast
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

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


#: What `tjui --help` must not import: the store and summary code behind `compress`'s
#: --commit/--mode/--provider options and the commands registered lazily.
_HEAVY = (
    "tinyjuice.store",
    "tinyjuice.summary",
    "tjui.commands.store",
    "tjui.commands.summaries",
    "tjui.config",
)


def _imported_after(args: list[str], modules: tuple[str, ...]) -> list[str]:
    """The ``modules`` loaded after ``tjui ARGS`` in a fresh interpreter."""
    code = (
        "import sys; from click.testing import CliRunner; from tjui.cli import main;"
        f"r = CliRunner().invoke(main, {args!r}); assert r.exit_code == 0, r.output;"
        f"print(sorted(m for m in {modules!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return list(ast.literal_eval(done.stdout))


def test_help_imports_no_store_summary_or_config_code() -> None:
    assert _imported_after(["--help"], _HEAVY) == []
    assert _imported_after(["compress", "--help"], _HEAVY) == []


def test_copied_option_constants_match_their_sources() -> None:
    from tinyjuice.store import CommitMode
    from tjui.clikit import COMMIT_MODES, FALLBACK_PROVIDER, PROVIDER_ENV
    from tjui.config import ENV_VARS, FALLBACK_NAME

    assert tuple(m.value for m in CommitMode) == COMMIT_MODES
    assert FALLBACK_PROVIDER == FALLBACK_NAME
    assert ENV_VARS["provider"] == PROVIDER_ENV


def test_compress_help_keeps_the_commit_and_provider_options() -> None:
    out = CliRunner().invoke(main, ["compress", "--help"], terminal_width=200).output
    assert "--commit " in out and "Persist the result: archive the original first" in out
    assert "--mode [in-place|child|export]" in out
    assert "--provider NAME" in out
    assert "or 'fallback' for the deterministic summary (default: $TJUI_PROVIDER" in out


@pytest.mark.parametrize("name", sorted(main.list_commands(click.Context(main))))
def test_every_command_help_is_its_own(name: str) -> None:
    """Through the group (lazy or not) each command shows the help it shows alone."""
    command = main.get_command(click.Context(main), name)
    assert command is not None and command.name == name
    via_group = CliRunner().invoke(main, [name, "--help"], terminal_width=120)
    assert via_group.exit_code == 0, via_group.output
    alone = CliRunner().invoke(command, ["--help"], terminal_width=120, prog_name=f"main {name}")
    assert via_group.output == alone.output


def test_inspect_json_imports_no_report_store_summary_or_rich(tmp_path: Path) -> None:
    """`tjui inspect FILE --json` (cold cache) loads, counts and prints: nothing else."""
    sample = Path(__file__).resolve().parents[2] / "sessions" / "claude-code.jsonl"
    env = {**os.environ, "TJUI_CACHE_DIR": str(tmp_path)}
    env.pop("TJUI_NO_CACHE", None)
    heavy = (*_HEAVY, "tinyjuice.report", "tinyjuice.redact", "rich", "textual")
    code = (
        "import sys; from tjui.cli import main; sys.argv = ['tjui', *sys.argv[1:]]\n"
        "try: main()\n"
        "except SystemExit as e: assert not e.code, e.code\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "inspect", str(sample), "--json"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    assert json.loads(done.stdout)["messages"] > 0
    assert ast.literal_eval(done.stderr.strip().splitlines()[-1]) == []
