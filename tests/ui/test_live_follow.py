"""Live follow (Pilot): an agent appends to the open session; the inspector follows it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from builders import parsed_lines
from fakehome import claude_records
from textual.widgets import Static
from ui_helpers import wait_for, wait_loaded

from tinyjuice.store import CommitMode
from tjui.app import make_app
from tjui.live import LiveCommitDialog
from tjui.screens.main import MainScreen
from tjui.widgets.message_list import MessageList

SID = "3c3c3c3c-0000-4000-8000-000000000001"


def _write(path: Path, records: list[dict[str, Any]], mode: str = "w") -> None:
    with path.open(mode, encoding="utf-8") as fh:
        fh.writelines(json.dumps(r) + "\n" for r in records)
    st = path.stat()  # make sure the mtime moves even on a coarse clock
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))


def _session(tmp_path: Path, turns: int = 8) -> tuple[Path, list[dict[str, Any]]]:
    records = claude_records(SID, turns=turns + 3)
    for r in records:  # make the turns big enough for the prediction to move
        message = r.get("message")
        if isinstance(message, dict) and message.get("role") == "user":
            message["content"] = str(message["content"]) + " " + "details " * 1500
        if isinstance(message, dict):
            message.pop("usage", None)  # counted, so the growth is the appended turns
    path = tmp_path / f"{SID}.jsonl"
    _write(path, records[: 1 + 2 * turns])
    return path, records


def header(screen: MainScreen) -> str:
    return str(screen.query_one("#file-header", Static).render())


async def _ready(pilot: Any) -> MainScreen:
    screen = await wait_loaded(pilot)  # exact counts

    def status_on_exact_counts() -> bool:
        live = screen.live
        return live is not None and live.status is not None and live.status_counter != "rough"

    await wait_for(pilot, status_on_exact_counts)
    return screen


async def test_appended_messages_show_with_selection_and_boundary_kept(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    async with make_app(path).run_test(size=(160, 40)) as pilot:
        screen = await _ready(pilot)
        assert screen.session is not None and screen.live is not None
        before = screen.live.status
        assert before is not None and "live" not in header(screen)  # at rest so far
        lst = screen.query_one(MessageList)
        lst.cursor = 3
        screen.action_boundary_step(-1)
        boundary = screen.session.plan.end
        _write(path, records[17:21], mode="a")
        await wait_for(
            pilot, lambda: screen.session is not None and len(screen.session.transcript) == 20
        )
        await pilot.pause()
        assert lst.count == 20 and lst.cursor == 3
        assert screen.session.plan.end == boundary
        after = screen.live.status
        assert after is not None and after.messages == 20
        assert after.live_tokens > before.live_tokens
        assert after.headroom_tokens < before.headroom_tokens
        assert "● live" in header(screen) and after.prediction() in header(screen)


async def test_a_truncated_file_reloads_with_a_notice(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    app = make_app(path)
    async with app.run_test(size=(160, 40)) as pilot:
        screen = await _ready(pilot)
        _write(path, records[:5])
        await wait_for(
            pilot, lambda: screen.session is not None and len(screen.session.transcript) == 4
        )
        assert screen.query_one(MessageList).count == 4
        assert any("truncated: reloaded" in n.message for n in app._notifications)


async def test_a_half_written_last_line_waits_for_its_end(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    async with make_app(path).run_test(size=(160, 40)) as pilot:
        screen = await _ready(pilot)
        line = json.dumps(records[17]) + "\n"
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line[:50])
        await pilot.pause(0.5)
        assert screen.session is not None and len(screen.session.transcript) == 16
        with path.open("a", encoding="utf-8") as fh:
            fh.write(line[50:])
        await wait_for(
            pilot, lambda: screen.session is not None and len(screen.session.transcript) == 17
        )


async def test_f_pauses_and_resumes_following(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    async with make_app(path).run_test(size=(160, 40)) as pilot:
        screen = await _ready(pilot)
        await pilot.press("F")
        assert "follow off" in header(screen)
        _write(path, records[17:19], mode="a")
        await pilot.pause(0.5)
        assert screen.session is not None and len(screen.session.transcript) == 16
        await pilot.press("F")
        await wait_for(
            pilot, lambda: screen.session is not None and len(screen.session.transcript) == 18
        )


async def test_warning_level_notifies_once(tmp_path: Path) -> None:
    path, records = _session(tmp_path)
    app = make_app(path, context_window=60_000, warn_at=1.0)
    async with app.run_test(size=(160, 40)) as pilot:
        await _ready(pilot)
        await wait_for(pilot, lambda: any("warning level" in n.message for n in app._notifications))
        _write(path, records[17:19], mode="a")
        await pilot.pause(0.5)
        assert sum("warning level" in n.message for n in app._notifications) == 1


def _hermes_log(path: Path, turns: int) -> None:
    """A Hermes session log (a JSON document the agent rewrites every turn; it can be
    committed in place), with turns long enough to compress."""
    messages = [
        {
            "role": "user" if i % 2 == 0 else "assistant",
            "content": f"turn {i}: " + "notes on the kiln module " * 300,
        }
        for i in range(turns)
    ]
    doc = {
        "session_id": "20261120_100000_live01",
        "model": "anthropic/claude-sonnet-4",
        "platform": "cli",
        "session_start": "2026-11-20T10:00:00",
        "last_updated": "2026-11-20T10:30:00",
        "system_prompt": "You are Hermes.",
        "tools": [],
        "message_count": turns,
        "messages": messages,
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(doc), encoding="utf-8")
    os.replace(tmp, path)  # as the agent saves it: a new file renamed over the old


async def test_in_place_commit_on_a_live_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "session_20261120_100000_live01.json"
    _hermes_log(path, 16)
    app = make_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await _ready(pilot)
        _hermes_log(path, 18)  # the agent saved two more turns
        await wait_for(
            pilot, lambda: screen.session is not None and len(screen.session.transcript) == 18
        )
        assert not any("reloaded" in n.message for n in app._notifications)  # its normal way
        original = path.read_bytes()
        screen.query_one(MessageList).cursor = 12
        screen.action_compress_up_to_here()  # something to compress
        await pilot.press("c")
        await wait_for(pilot, lambda: isinstance(app.screen, LiveCommitDialog))
        dialog = app.screen
        assert isinstance(dialog, LiveCommitDialog)
        await wait_for(pilot, lambda: dialog.plan is not None)
        assert dialog.mode is CommitMode.IN_PLACE
        await pilot.press("ctrl+s")
        await pilot.pause(0.3)
        result = str(dialog.query_one("#commit-result", Static).render())
        assert "refused: the agent is still writing this file" in result
        assert dialog.record is None and path.read_bytes() == original
        await pilot.press("m")  # child: allowed
        await wait_for(pilot, lambda: dialog.plan is not None and dialog.mode is CommitMode.CHILD)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: dialog.record is not None)
        assert path.read_bytes() == original


async def test_an_append_is_parsed_and_counted_from_what_was_loaded(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """Only the appended lines are parsed and only the new messages counted; the
    session on screen is the one a full reload gives."""
    from tinyjuice.formats import load_bytes
    from tinyjuice.tokens import count_transcript

    path, records = _session(tmp_path)
    async with make_app(path).run_test(size=(160, 40)) as pilot:
        screen = await _ready(pilot)
        await wait_for(pilot, lambda: screen._parsed is not None)  # seeded once following
        appended = b"".join(json.dumps(r).encode() + b"\n" for r in records[17:19])
        with parsed_lines(monkeypatch) as parsed:
            _write(path, records[17:19], mode="a")
            await wait_for(
                pilot, lambda: screen.session is not None and len(screen.session.transcript) == 18
            )
        assert parsed and all(raw in appended for raw in parsed)
        assert screen._counted is not None and screen.session is not None
        whole = load_bytes(path.read_bytes(), path)
        assert screen._counted[0] == whole
        counter = screen.session.counter
        assert screen._counted[1] == count_transcript(whole, counter)


async def test_an_append_is_read_in_a_worker_and_grows_the_session(
    tmp_path: Path, monkeypatch: Any
) -> None:
    """The event loop only stats the file (the bytes are read in the reload's worker);
    the session grows from the one on screen, equal to one built whole; and the "after"
    projection waits until the file has stopped growing."""
    import threading

    import tjui.live
    from tinyjuice.follow import FileTail
    from tjui.screens.main import PROJECT_DELAY
    from tjui.session import InspectorSession

    path, records = _session(tmp_path)
    async with make_app(path).run_test(size=(160, 40)) as pilot:
        screen = await _ready(pilot)
        before = screen.session
        assert before is not None
        on_main: list[bool] = []
        real = FileTail.poll

        def poll(self: FileTail) -> Any:
            on_main.append(threading.current_thread() is threading.main_thread())
            return real(self)

        monkeypatch.setattr(FileTail, "poll", poll)
        monkeypatch.setattr(tjui.live, "QUIET_SECONDS", 600.0)
        _write(path, records[17:19], mode="a")
        await wait_for(
            pilot, lambda: screen.session is not None and len(screen.session.transcript) == 18
        )
        assert on_main and not any(on_main)
        assert screen._projection_delay() > PROJECT_DELAY  # the file just grew
        s = screen.session
        assert s is not None
        whole = InspectorSession.build(
            s.transcript, s.tokens, s.counter, split=s.split, subagents=s.subagents
        )
        assert s.breakdown == whole.breakdown
        assert s.index.legal_indices == whole.index.legal_indices
        assert s.index.user_indices == whole.index.user_indices
        assert s.analysis is before.analysis  # compress reuses its per-message work


async def test_a_projection_asked_for_while_one_runs_returns_at_once(tmp_path: Path) -> None:
    """It must not wait for the running one in a thread of the pool the follow shares."""
    path, _ = _session(tmp_path)
    async with make_app(path).run_test(size=(160, 40)) as pilot:
        screen = await _ready(pilot)
        screen._project_lock.acquire()  # as if a projection were running
        try:
            worker = screen._project()
            await wait_for(pilot, lambda: worker.is_finished)
        finally:
            screen._project_lock.release()


async def test_an_append_that_does_not_load_opens_the_error_dialog(tmp_path: Path) -> None:
    """A failure in the follow's own thread is read again in a worker, whose failure the
    App shows (as any failed reload)."""
    from tjui.screens.error import ErrorDialog

    path, _ = _session(tmp_path)
    async with make_app(path).run_test(size=(160, 40)) as pilot:
        await _ready(pilot)
        with path.open("ab") as fh:
            fh.write(b'{"type": "user", "uuid": "x", "message": 5}\n')
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, ErrorDialog))


async def test_the_load_ends_with_a_full_collection(tmp_path: Path, monkeypatch: Any) -> None:
    """The collection a large load makes due runs as the load ends, not at the first
    append of a followed file."""
    import tjui.screens.main as main_screen

    collected: list[bool] = []
    real = main_screen.gc.collect

    def collect(*args: Any) -> int:
        collected.append(True)
        return real(*args)

    monkeypatch.setattr(main_screen.gc, "collect", collect)
    path, _ = _session(tmp_path)
    async with make_app(path).run_test(size=(160, 40)) as pilot:
        await _ready(pilot)
        await wait_for(pilot, lambda: bool(collected))


def test_overlapping_projections_restore_the_switch_interval() -> None:
    """The short GIL switch interval of a projection is restored when the last of
    overlapping ones (two screens) ends, whatever order they end in."""
    import sys

    from tjui.screens.main import PROJECT_SWITCH_SECONDS, _short_switch

    before = sys.getswitchinterval()
    first, second = _short_switch(), _short_switch()
    first.__enter__()
    second.__enter__()
    assert sys.getswitchinterval() == PROJECT_SWITCH_SECONDS
    first.__exit__(None, None, None)
    assert sys.getswitchinterval() == PROJECT_SWITCH_SECONDS
    second.__exit__(None, None, None)
    assert sys.getswitchinterval() == before
