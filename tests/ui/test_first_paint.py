"""Reopening a large file: the cached first screen is exactly what the full load shows,
and a file whose bytes changed never shows it (tjui.firstpaint)."""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Static
from ui_helpers import wait_for, wait_loaded, write_openai_session

import tjui.screens.main as main_screen
from tinyjuice.tokens import default_counter
from tjui import firstpaint
from tjui.app import make_app
from tjui.screens.main import MainScreen, header_text
from tjui.widgets.context_bar import ContextBar
from tjui.widgets.message_list import MessageList

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
#: Tall enough for the Claude Code sample's 65 history rows, its live rows and the rule.
SIZE = (160, 110)


@pytest.fixture(autouse=True)
def _small_files_too(monkeypatch: pytest.MonkeyPatch) -> None:
    if default_counter().name == "rough":
        pytest.skip("no tokenizer: nothing exact to remember")
    monkeypatch.setattr(firstpaint, "MIN_BYTES", 0)


class HeldLoad:
    """Holds the full load (``load_source``) until released; says when it was reached."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()
        real = main_screen.load_source

        def held(*args: Any, **kwargs: Any) -> Any:
            self.reached.set()
            self.release.wait(30)
            return real(*args, **kwargs)

        monkeypatch.setattr(main_screen, "load_source", held)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[HeldLoad]:
    hold = HeldLoad(monkeypatch)
    yield hold
    hold.release.set()


async def _until(pilot: Pilot, event: threading.Event) -> None:
    await wait_for(pilot, event.is_set)
    for _ in range(5):  # whatever the load posted before it is handled
        await pilot.pause()


async def _load_done(pilot: Pilot) -> None:
    """The load (and what it stores in the cache) has finished."""
    await wait_for(
        pilot, lambda: all(w.is_finished for w in pilot.app.workers if w.group == "load")
    )


def _rows(screen: MainScreen) -> list[str]:
    lst = screen.query_one(MessageList)
    return [lst.render_line(y).text for y in range(lst.size.height)]


def _header(screen: MainScreen) -> str:
    return str(screen.query_one("#file-header", Static).content)


def _claude_code(tmp: Path) -> Path:
    path = tmp / "session.jsonl"
    shutil.copy(SESSIONS / "claude-code.jsonl", path)
    return path


def _openai(tmp: Path) -> Path:
    return write_openai_session(tmp / "session.json")


async def _first_open(path: Path) -> None:
    async with make_app(path).run_test(size=SIZE) as pilot:
        await wait_loaded(pilot)
        await _load_done(pilot)


@pytest.mark.parametrize("write", [_claude_code, _openai], ids=["claude-code", "openai"])
async def test_the_cached_first_screen_is_what_the_full_load_shows(
    tmp_path: Path, held: HeldLoad, write: Callable[[Path], Path]
) -> None:
    path = write(tmp_path)
    held.release.set()
    await _first_open(path)  # cold: counts, then remembers the first screen
    held.release.clear()
    async with make_app(path).run_test(size=SIZE) as pilot:
        await _until(pilot, held.reached)
        screen = pilot.app.screen
        assert isinstance(screen, MainScreen) and screen.session is None  # still loading
        lst, bar = screen.query_one(MessageList), screen.query_one(ContextBar)
        assert lst.showing_first_rows and not lst.estimated
        cached_rows, cached_header = _rows(screen), _header(screen)
        cached_bar = (bar.breakdown, bar._plan, bar._trigger, bar.render().plain)
        status = str(screen.query_one("#boundary-status", Static).content)
        assert status.endswith(firstpaint.LOADING)
        held.release.set()
        screen = await wait_loaded(pilot)
        await _load_done(pilot)
        s = screen.session
        assert s is not None and not lst.showing_first_rows
        assert lst.count + lst.history_rows == len(s.whole.messages)
        rows = _rows(screen)
        n = min(len(rows), len(cached_rows))  # (a status line that wraps takes a row)
        assert n > 20 and rows[:n] == cached_rows[:n]
        assert cached_header == header_text(s, path)
        assert cached_bar[:3] == (s.breakdown, s.plan, s.trigger)
        assert "counting" not in cached_header and "~" not in "".join(cached_rows)
        # The same figures the bar draws from the full session. The projection may since
        # have filled in the "after" figure of a small transcript (its ◆ on the zones line
        # and "→ after" in the stats): drawn without it, and compared up to the arrow.
        bar._after = None
        full_bar = bar.render().plain
        assert full_bar.split("→")[0] == cached_bar[3].split("→")[0]


async def test_rows_past_the_cached_ones_say_loading_with_no_figure(
    tmp_path: Path, held: HeldLoad, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(firstpaint, "ROWS", 5)
    path = _openai(tmp_path)
    held.release.set()
    await _first_open(path)
    held.release.clear()
    async with make_app(path).run_test(size=SIZE) as pilot:
        await _until(pilot, held.reached)
        screen = pilot.app.screen
        assert isinstance(screen, MainScreen)
        rows = _rows(screen)
        assert not any("loading…" in row for row in rows[:5])
        loading = [r.split() for r in rows[5:] if "loading…" in r]
        # The gutter, the row's number, "loading…": no count, no preview.
        assert len(loading) > 10
        assert all(p[-1] == "loading…" and p[-2].isdigit() and len(p) <= 3 for p in loading)


def _append(path: Path) -> None:
    with path.open("ab") as fh:  # bytes no message is read from: the transcript is the same
        fh.write(path.read_bytes().splitlines(keepends=True)[1])


def _same_size_other_bytes(path: Path) -> None:
    st = path.stat()
    data = path.read_bytes()
    i = data.index(b"pytest")
    path.write_bytes(data[:i] + b"pytesT" + data[i + 6 :])
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same mtime too


def _subagent_file(path: Path) -> None:
    folder = path.parent / path.stem / "subagents"
    folder.mkdir(parents=True)
    (folder / "agent-a1.jsonl").write_text("")


@pytest.mark.parametrize(
    ("write", "change"),
    [
        (_claude_code, _append),
        (_openai, _same_size_other_bytes),
        (_claude_code, _subagent_file),
    ],
    ids=["append", "same-size-edit", "new-subagent-file"],
)
async def test_a_changed_file_never_shows_the_cached_screen(
    tmp_path: Path,
    held: HeldLoad,
    write: Callable[[Path], Path],
    change: Callable[[Path], None],
) -> None:
    path = write(tmp_path)
    held.release.set()
    await _first_open(path)
    size = path.stat().st_size
    change(path)
    if change is _same_size_other_bytes:
        assert path.stat().st_size == size
    held.release.clear()
    async with make_app(path).run_test(size=SIZE) as pilot:
        await _until(pilot, held.reached)
        screen = pilot.app.screen
        assert isinstance(screen, MainScreen)
        lst, bar = screen.query_one(MessageList), screen.query_one(ContextBar)
        assert not lst.showing_first_rows and lst.count == 0 and bar.breakdown is None
        held.release.set()
        await wait_loaded(pilot)
        await _load_done(pilot)
    # The full load stored the new bytes' first screen: the next open uses it.
    held.release.clear()
    async with make_app(path).run_test(size=SIZE) as pilot:
        await _until(pilot, held.reached)
        assert pilot.app.screen.query_one(MessageList).showing_first_rows
        held.release.set()
        await wait_loaded(pilot)
        await _load_done(pilot)


async def test_no_cache_no_first_screen(
    tmp_path: Path, held: HeldLoad, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _openai(tmp_path)
    held.release.set()
    await _first_open(path)
    monkeypatch.setenv("TJUI_NO_CACHE", "1")
    held.release.clear()
    async with make_app(path).run_test(size=SIZE) as pilot:
        await _until(pilot, held.reached)
        assert not pilot.app.screen.query_one(MessageList).showing_first_rows
        held.release.set()
        await wait_loaded(pilot)


@pytest.mark.parametrize(
    "damage",
    [
        lambda v: {**v, "tokens": v["tokens"][:-1]},  # fewer counts than rows
        lambda v: {**v, "tokens": ["1", *v["tokens"][1:]]},  # a count that is no number
        lambda v: {**v, "plan": {**v["plan"], "budget": None}},  # a plan missing its budget
        lambda v: {k: x for k, x in v.items() if k != "breakdown"},
    ],
    ids=["short-counts", "text-count", "bad-plan", "no-breakdown"],
)
async def test_an_entry_other_code_wrote_is_ignored(
    tmp_path: Path, held: HeldLoad, damage: Callable[[dict[str, Any]], dict[str, Any]]
) -> None:
    from tinyjuice.cache import default_cache, read_source
    from tjui.screens.main import LoadRequest

    path = _openai(tmp_path)
    held.release.set()
    await _first_open(path)
    request = LoadRequest(path=path)
    assert firstpaint.lookup(request) is not None
    cache, identity = default_cache(), read_source(path).identity
    assert cache is not None and identity is not None
    params = firstpaint._params(request)
    value = cache.get_result(identity, firstpaint.KIND, params)
    cache.put_result(identity, firstpaint.KIND, params, damage(value))
    assert firstpaint.lookup(request) is None


async def test_the_lookup_starts_when_the_app_is_made_and_answers_once(
    tmp_path: Path, held: HeldLoad
) -> None:
    path = _openai(tmp_path)
    held.release.set()
    await _first_open(path)
    app = make_app(path)  # not run: the file is hashed and looked up already
    prefetch, request = app.first_paint, app.request
    assert prefetch is not None and request is not None
    assert prefetch.result(request) is not None
    _same_size_other_bytes(path)
    # Asked again (a reopen after a commit or an undo): the file as it is now.
    assert prefetch.result(request) is None


async def test_a_path_under_home_finds_the_entry(
    tmp_path: Path, held: HeldLoad, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tjui.screens.main import LoadRequest

    path = _openai(tmp_path)
    held.release.set()
    await _first_open(path)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert firstpaint.lookup(LoadRequest(path=Path("~") / path.name)) is not None


async def test_a_secret_in_a_preview_is_stored_redacted(tmp_path: Path, held: HeldLoad) -> None:
    """The cache is a file outside the original: previews go into it redacted."""
    import orjson

    token = "gh" + "p_" + "Q7wE" * 9
    path = tmp_path / "session.json"
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You fix builds."}]
    for i in range(12):
        ask = f"Deploy with {token} please" if i == 0 else f"Step {i}: run the tests."
        messages += [
            {"role": "user", "content": ask},
            {"role": "assistant", "content": f"Done with step {i}."},
        ]
    path.write_bytes(orjson.dumps({"messages": messages}))
    held.release.set()
    await _first_open(path)
    cache_dir = Path(os.environ["TJUI_CACHE_DIR"])
    stored = b"".join(p.read_bytes() for p in cache_dir.rglob("*") if p.is_file())
    assert b"Deploy with" in stored  # the previews were stored...
    assert token.encode() not in stored  # ...but not the secret
    held.release.clear()
    async with make_app(path).run_test(size=SIZE) as pilot:
        await _until(pilot, held.reached)
        screen = pilot.app.screen
        assert isinstance(screen, MainScreen) and screen.session is None
        rows = "".join(_rows(screen))
        assert "REDACTED" in rows and token not in rows
        held.release.set()
        await wait_loaded(pilot)
        await _load_done(pilot)
