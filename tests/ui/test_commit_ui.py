"""Pilot tests: the commit dialog (plan, commit, undo, stale reload) and the history screen."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from textual.app import App
from textual.widgets import Button, DataTable, Input, RadioButton, Static
from ui_helpers import wait_for, wait_loaded, write_openai_session

from tinyjuice.formats import load
from tinyjuice.pipeline import compress
from tinyjuice.store import Archive, CommitMode, CommitState, LoadedSource, commit, load_source
from tinyjuice.tokens import RoughCounter, count_transcript
from tjui.app import STYLESHEET, make_app
from tjui.screens.commit import CommitDialog, CommitOutcome
from tjui.screens.history import HistoryScreen
from tjui.screens.main import MainScreen
from tjui.session import InspectorSession

ROOT = Path(__file__).resolve().parents[2]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def inspector_session(loaded: LoadedSource) -> InspectorSession:
    counter = RoughCounter()
    tokens = count_transcript(loaded.transcript, counter)
    session = InspectorSession.build(loaded.transcript, tokens, counter)
    session.keep_last(3)
    return session


class Host(App[None]):
    CSS_PATH = STYLESHEET  # the screens' layout

    def __init__(self, screen: Any) -> None:
        super().__init__()
        self._screen = screen
        self.outcomes: list[Any] = []

    def on_mount(self) -> None:
        self.push_screen(self._screen, self.outcomes.append)


def text(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector, Static).render())


async def test_commit_dialog_commits_and_undoes(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json", exchanges=12)
    original = sha(path)
    loaded = load_source(path)
    session = inspector_session(loaded)
    expected = compress(
        session.transcript,
        session.compaction_options(),
        tokens=session.tokens,
        counter=session.counter,
        index=session.index,
    ).report
    dialog = CommitDialog(session, loaded)
    app = Host(dialog)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: dialog.plan is not None)
        await pilot.pause()
        figures = text(dialog, "#commit-figures")
        assert f"tokens {expected.before_tokens:,} → {expected.after_tokens:,}" in figures
        assert f"summary {expected.summary_kind.value}" in figures
        assert dialog.query_one("#mode-in-place", RadioButton).value  # the engine's advice
        assert loaded.sha256[:12] in text(dialog, "#commit-archives")
        assert str(path) in text(dialog, "#commit-writes")
        assert not dialog.query_one("#commit-go", Button).disabled

        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: dialog.record is not None)
        await pilot.pause()
        record = dialog.record
        assert record is not None and record.mode is CommitMode.IN_PLACE
        assert sha(path) == record.after_sha256 != original
        result_line = text(dialog, "#commit-result")
        assert record.id in result_line and "press u to undo" in result_line

        await pilot.press("u")
        await wait_for(pilot, lambda: dialog.undone)
        await pilot.pause()
        assert sha(path) == original
        assert "undone" in text(dialog, "#commit-result")
        await pilot.press("escape")
        await pilot.pause()
    (outcome,) = app.outcomes
    assert isinstance(outcome, CommitOutcome)
    assert outcome.record is not None and outcome.undone and not outcome.source_changed
    assert Archive().get(outcome.record.id).state is CommitState.UNDONE


async def test_stale_source_offers_reload_and_writes_nothing(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json", exchanges=12)
    loaded = load_source(path)
    dialog = CommitDialog(inspector_session(loaded), loaded)
    app = Host(dialog)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: dialog.plan is not None)
        doc = json.loads(path.read_text())
        doc.append({"role": "assistant", "content": "the agent kept going"})
        path.write_text(json.dumps(doc))
        agent = sha(path)
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: dialog.stale)
        await pilot.pause()
        assert "press r to reload" in text(dialog, "#commit-result")
        assert dialog.record is None and sha(path) == agent
        await pilot.press("r")
        await pilot.pause()
    (outcome,) = app.outcomes
    assert outcome.reload and outcome.record is None
    assert load(path).messages[-1].text == "the agent kept going"
    assert Archive().commits() == []


async def test_dialog_reloads_a_path_and_claude_code_defaults_to_child(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes((ROOT / "sessions" / "claude-code.jsonl").read_bytes())
    loaded = load_source(path)
    dialog = CommitDialog(inspector_session(loaded), path)  # a path: read again here
    app = Host(dialog)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: dialog.plan is not None)
        await pilot.pause()
        assert dialog.plan is not None and dialog.plan.mode is CommitMode.CHILD
        assert dialog.query_one("#mode-child", RadioButton).value
        assert "child session instead" in text(dialog, "#commit-notes")
        target = dialog.query_one("#commit-target", Input).value
        assert target.endswith(".jsonl") and target != str(path)
        dialog.query_one("#mode-in-place", RadioButton).value = True
        await wait_for(pilot, lambda: "cannot commit" in text(dialog, "#commit-writes"))
        assert "never modified in place" in text(dialog, "#commit-writes")
        assert dialog.query_one("#commit-go", Button).disabled
        await pilot.press("m")  # in place → child again
        await wait_for(pilot, lambda: dialog.plan is not None)
        assert dialog.plan is not None and dialog.plan.mode is CommitMode.CHILD


async def test_history_screen_lists_commits_and_undoes(tmp_path: Path) -> None:
    path = write_openai_session(tmp_path / "t.json", exchanges=12)
    original = sha(path)
    first = load_source(path)
    s1 = inspector_session(first)
    r1 = commit(compress(s1.transcript, s1.compaction_options(), counter=RoughCounter()), first)
    other = write_openai_session(tmp_path / "other.json", exchanges=12)
    o = load_source(other)
    so = inspector_session(o)
    commit(compress(so.transcript, so.compaction_options(), counter=RoughCounter()), o)

    screen = HistoryScreen(path)
    app = Host(screen)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: len(screen.records) == 1)
        table = screen.query_one(DataTable)
        assert table.row_count == 1
        assert screen.records[0].id == r1.id
        assert first.sha256[:12] in text(screen, "#history-detail")  # what was archived
        await pilot.press("a")  # all files
        await wait_for(pilot, lambda: len(screen.records) == 2)
        await pilot.press("a")
        await wait_for(pilot, lambda: len(screen.records) == 1)
        path.write_bytes(path.read_bytes() + b" ")
        await pilot.press("u")
        await wait_for(pilot, lambda: "press F to force" in text(screen, "#history-status"))
        await pilot.press("F")
        await wait_for(pilot, lambda: "undone" in text(screen, "#history-status"))
        await wait_for(pilot, lambda: screen.records[0].state is CommitState.UNDONE)
        assert sha(path) == original


async def test_history_empty_note_goes_when_all_files_show_commits(tmp_path: Path) -> None:
    committed = write_openai_session(tmp_path / "t.json", exchanges=12)
    loaded = load_source(committed)
    s = inspector_session(loaded)
    commit(compress(s.transcript, s.compaction_options(), counter=RoughCounter()), loaded)
    fresh = write_openai_session(tmp_path / "fresh.json", exchanges=12)

    screen = HistoryScreen(fresh)
    app = Host(screen)
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: "no commits yet" in text(screen, "#history-status"))
        assert "a: all files" in text(screen, "#history-status")
        await pilot.press("a")  # all files: the other file's commit is listed
        await wait_for(pilot, lambda: len(screen.records) == 1)
        assert "no commits yet" not in text(screen, "#history-status")
        await pilot.press("a")  # back to this file: empty again, and said so
        await wait_for(pilot, lambda: not screen.records)
        await wait_for(pilot, lambda: "no commits yet" in text(screen, "#history-status"))


# ----------------------------------------------------------- the inspector's commit flow


def demo_copy(tmp_path: Path) -> Path:
    path = tmp_path / "demo.json"
    path.write_bytes((ROOT / "sessions" / "demo.json").read_bytes())
    return path


async def open_commit_dialog(pilot: Any) -> CommitDialog:
    await wait_loaded(pilot)
    await pilot.press("c")
    await wait_for(
        pilot, lambda: isinstance(pilot.app.screen, CommitDialog) and pilot.app.screen.plan
    )
    dialog = pilot.app.screen
    assert isinstance(dialog, CommitDialog)
    return dialog


async def export_mode(pilot: Any, dialog: CommitDialog) -> tuple[Input, str]:
    """`m` `m` (in place → child → export), Tab into the target field, clear it; the
    field and the default target it showed."""
    await pilot.press("m")
    await wait_for(pilot, lambda: dialog.plan is not None and dialog.plan.mode is CommitMode.CHILD)
    await pilot.press("m")
    await wait_for(pilot, lambda: dialog.plan is not None and dialog.plan.mode is CommitMode.EXPORT)
    await pilot.press("tab")
    field = dialog.query_one("#commit-target", Input)
    assert pilot.app.focused is field
    default = field.value
    assert default
    await pilot.press("ctrl+a", "ctrl+k")  # select all, delete
    await pilot.pause()
    assert field.value == ""
    return field, default


async def test_typed_export_target_is_used_without_enter(tmp_path: Path) -> None:
    path = demo_copy(tmp_path)
    app = make_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        dialog = await open_commit_dialog(pilot)
        _, default = await export_mode(pilot, dialog)
        first = tmp_path / "first.json"
        await pilot.press(*str(first))
        # The plan line follows the typing (no Enter).
        await wait_for(
            pilot, lambda: f"exports to hermes: {first}" in text(dialog, "#commit-writes")
        )
        # More typing, then Ctrl+S at once: what the field shows is what is written.
        await pilot.press(*"-typed", "ctrl+s")
        typed = tmp_path / "first.json-typed"
        await wait_for(pilot, lambda: dialog.record is not None)
        record = dialog.record
        assert record is not None and record.mode is CommitMode.EXPORT
        assert record.target_path == str(typed)
        assert typed.is_file() and not first.exists() and not Path(default).exists()
        assert load(typed).messages  # a real export
        assert f"exports to hermes: {typed}" in text(dialog, "#commit-writes")


async def test_failing_plan_then_ctrl_s_says_why(tmp_path: Path) -> None:
    path = demo_copy(tmp_path)
    original = sha(path)
    app = make_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        dialog = await open_commit_dialog(pilot)
        await export_mode(pilot, dialog)
        missing = tmp_path / "missing" / "out.json"
        await pilot.press(*str(missing))
        await wait_for(pilot, lambda: "cannot commit" in text(dialog, "#commit-writes"))
        assert "does not exist" in text(dialog, "#commit-writes")
        assert dialog.query_one("#commit-go", Button).disabled
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: "not committed" in text(dialog, "#commit-result"))
        assert "does not exist" in text(dialog, "#commit-result")
        assert dialog.query_one("#commit-result").has_class("-error")
        # Typed and committed at once: planned first, refused, nothing written.
        await pilot.press("ctrl+a", "ctrl+k", *str(tmp_path / "nowhere" / "x.json"), "ctrl+s")
        await wait_for(pilot, lambda: "nowhere" in text(dialog, "#commit-result"))
        assert "not committed" in text(dialog, "#commit-result")
        assert dialog.record is None and Archive().commits() == []
        assert sha(path) == original and not missing.parent.exists()


async def test_u_undoes_an_export_commit_typed_in_the_field(tmp_path: Path) -> None:
    path = demo_copy(tmp_path)
    app = make_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        dialog = await open_commit_dialog(pilot)
        field, _ = await export_mode(pilot, dialog)
        out = tmp_path / "out.json"
        await pilot.press(*str(out), "enter")
        await wait_for(pilot, lambda: f"exports to hermes: {out}" in text(dialog, "#commit-writes"))
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: dialog.record is not None)
        await pilot.pause()
        assert out.is_file() and "press u to undo" in text(dialog, "#commit-result")
        assert pilot.app.focused is not field
        await pilot.press("u")
        await wait_for(pilot, lambda: dialog.undone)
        await pilot.pause()
        assert field.value == str(out)  # no stray "u" typed into the field
        assert not out.exists()
        assert "undone" in text(dialog, "#commit-result")
        assert dialog.record is not None
        assert Archive().get(dialog.record.id).state is CommitState.UNDONE


async def test_undo_in_history_reloads_the_inspector(tmp_path: Path) -> None:
    path = demo_copy(tmp_path)
    original = sha(path)
    total = len(load(path).messages)
    app = make_app(path)
    async with app.run_test(size=(160, 48)) as pilot:
        dialog = await open_commit_dialog(pilot)
        assert dialog.plan is not None and dialog.plan.mode is CommitMode.IN_PLACE
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: dialog.record is not None)
        await pilot.press("escape")  # an in-place commit: the inspector reloads
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, MainScreen)
                and app.screen.session is not None
                and len(app.screen.session.transcript.messages) < total
            ),
        )
        assert sha(path) != original
        await pilot.press("h")
        await wait_for(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.records)
        history_screen = app.screen
        assert isinstance(history_screen, HistoryScreen)
        await pilot.press("u")
        await wait_for(pilot, lambda: "undone" in text(history_screen, "#history-status"))
        assert sha(path) == original
        await pilot.press("escape")
        await wait_for(
            pilot,
            lambda: (
                isinstance(app.screen, MainScreen)
                and app.screen.session is not None
                and len(app.screen.session.transcript.messages) == total
            ),
        )
        main = await wait_loaded(pilot)
        assert f"{total:,} msgs" in text(main, "#file-header")
        # The commit dialog plans against the restored file, not stale bytes.
        dialog = await open_commit_dialog(pilot)
        assert not dialog.stale and "cannot commit" not in text(dialog, "#commit-writes")
        assert dialog.plan is not None and dialog.plan.tokens_before is not None


async def test_header_kind_matches_the_context_bar(tmp_path: Path) -> None:
    # demo.json holds images: flat estimates, so the total is an estimate however the
    # text was counted, and the header says so, as the bar does.
    app = make_app(demo_copy(tmp_path))
    async with app.run_test(size=(160, 48)) as pilot:
        main = await wait_loaded(pilot)
        b = main.session.breakdown if main.session else None
        assert b is not None and b.measured_prompt_tokens is None
        assert b.counted_kind.value == "estimated"
        header = text(main, "#file-header")
        assert f"prompt {b.estimated_total_tokens:,} estimated" in header
        assert "exact" not in header
