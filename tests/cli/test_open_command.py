"""`tjui [FILE]`: the inspector needs a terminal; a mistyped command is not opened as a file.

CliRunner's streams are not terminals, so these tests see what a pipe or a cron job
sees; ``_is_tty`` is patched where a terminal is assumed. ``run_app`` is replaced
so no test starts the Textual app.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_helpers import run

import tjui.app
import tjui.cli

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[Path | None]:
    """The paths ``run_app`` was called with (None: the browser); it never starts the app."""
    calls: list[Path | None] = []

    def fake_run_app(path: str | Path | None, **kwargs: object) -> None:
        calls.append(None if path is None else Path(path))

    monkeypatch.setattr(tjui.app, "run_app", fake_run_app)
    return calls


@pytest.fixture
def terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tjui.cli, "_is_tty", lambda name: True)


@pytest.mark.parametrize("args", [[str(SESSIONS / "openai-chat.json")], [], ["open"], ["demo"]])
def test_without_a_terminal_the_inspector_refuses(
    args: list[str], opened: list[Path | None]
) -> None:
    code, out, err = run(*args)
    assert code == 2
    assert out == "" and opened == []
    assert err.startswith("tjui: error: the inspector needs a terminal")
    for command in ("tjui inspect FILE", "tjui compress FILE", "tjui explain FILE"):
        assert command in err
    assert len(err.strip().splitlines()) == 1


def test_stderr_not_a_terminal_refuses_too(
    opened: list[Path | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # `tjui 2>err.log`: Textual would draw the whole UI into err.log.
    monkeypatch.setattr(tjui.cli, "_is_tty", lambda name: name != "stderr")
    code, out, err = run(str(SESSIONS / "openai-chat.json"))
    assert code == 2 and opened == []
    assert err.startswith("tjui: error: the inspector needs a terminal (stderr is not a TTY)")
    # The terminal the user looks at says so too.
    assert out == err


def test_with_a_terminal_file_opens_the_inspector(
    opened: list[Path | None], terminal: None
) -> None:
    code, _, err = run(str(SESSIONS / "openai-chat.json"))
    assert code == 0, err
    assert opened == [SESSIONS / "openai-chat.json"]


def test_bare_tjui_opens_the_browser_and_demo_the_demo(
    opened: list[Path | None], terminal: None
) -> None:
    from tjui.paths import demo_session

    assert run()[0] == 0 and run("open")[0] == 0
    assert run("demo")[0] == 0
    assert opened == [None, None, demo_session()]


@pytest.mark.parametrize(("typed", "meant"), [("inspectt", "inspect"), ("hist", "history")])
def test_mistyped_command_suggests_the_closest(
    typed: str, meant: str, opened: list[Path | None], terminal: None
) -> None:
    code, out, err = run(typed, "x.json")
    assert code == 2
    assert out == "" and opened == []
    assert err == f"tjui: error: No such command '{typed}'. Did you mean '{meant}'?\n"


def test_unknown_word_lists_the_commands(opened: list[Path | None], terminal: None) -> None:
    code, _, err = run("zzzqqq")
    assert code == 2 and opened == []
    assert "No such command 'zzzqqq'" in err and "inspect" in err and "Did you mean" not in err


def test_path_like_arguments_still_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, opened: list[Path | None], terminal: None
) -> None:
    # A missing path (dot or separator) goes to the inspector, whose dialog says
    # "no such file"; an existing file named like a word opens too.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "inspectt").write_text("[]")
    for arg in ("nope.json", "sub/nope", "inspectt"):
        code, _, err = run(arg)
        assert code == 0, err
    assert opened == [Path("nope.json"), Path("sub/nope"), Path("inspectt")]


def test_an_unreadable_file_exits_2_once_the_error_is_dismissed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: None
) -> None:
    # The real app, headless: the load fails, its dialog opens, Esc quits it.
    from textual.pilot import Pilot

    from tjui.screens.error import ErrorDialog

    truncated = tmp_path / "trunc.jsonl"
    truncated.write_bytes((SESSIONS / "claude-code.jsonl").read_bytes()[:3000])

    async def dismiss_the_error(pilot: Pilot[None]) -> None:
        for _ in range(200):
            if isinstance(pilot.app.screen, ErrorDialog):
                break
            await pilot.pause(0.05)
        await pilot.press("escape")

    real_run = tjui.app.TjuiApp.run

    def headless_run(self: tjui.app.TjuiApp, **kwargs: object) -> None:
        real_run(self, headless=True, size=(100, 30), auto_pilot=dismiss_the_error)

    monkeypatch.setattr(tjui.app.TjuiApp, "run", headless_run)
    code, _, err = run(str(truncated))
    assert code == 2
    # Textual prints the message folded at the console's width.
    assert err.startswith("tjui: error: ") and "trunc.jsonl, line 5" in " ".join(err.split())
