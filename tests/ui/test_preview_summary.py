"""The preview's summary controls: provider choice, focus topic, generation in a worker
with cancel, the review scorecard with jumps, and provider errors shown plainly.

PreviewScreen is hosted in a tiny app; providers are configured through TJUI_CONFIG
(a file in tmp_path, see tests/conftest.py) and answered by a scripted HTTP server on
127.0.0.1.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from textual.app import App
from textual.widgets import Input, OptionList, Select

from tinyjuice.formats import load
from tinyjuice.model import Transcript
from tinyjuice.tokens import RoughCounter, count_transcript
from tjui.screens.preview import FALLBACK_CHOICE, PreviewScreen
from tjui.session import InspectorSession

KEY_VAR = "TJ_UI_TEST_KEY"
KEY = "sk-" + "proj-" + "Ui7" * 14


async def wait_for(pilot: Any, predicate: Any, timeout: float = 60.0) -> None:
    waited = 0.0
    while not predicate():
        await pilot.pause(0.05)
        waited += 0.05
        if waited > timeout:
            raise AssertionError("timed out waiting for the preview")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Any

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        self.server.bodies.append(json.loads(body))
        delay, status, payload = self.server.replies.pop(0)
        time.sleep(delay)
        data = json.dumps(payload).encode()
        try:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            pass

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("TJUI_PROVIDER", raising=False)
    srv = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    srv.daemon_threads = True
    srv.bodies, srv.replies = [], []  # type: ignore[attr-defined]
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02})
    thread.daemon = True
    thread.start()
    Path(os.environ["TJUI_CONFIG"]).write_text(
        "[providers.local]\n"
        'kind = "openai"\n'
        f'base_url = "http://127.0.0.1:{srv.server_address[1]}/v1"\n'
        'model = "tiny"\n'
        f'api_key_env = "{KEY_VAR}"\n'
        "timeout = 5\n"
    )
    monkeypatch.setenv(KEY_VAR, KEY)
    try:
        yield srv
    finally:
        srv.shutdown()
        srv.server_close()


def completion(text: str, delay: float = 0.0) -> tuple[float, int, dict[str, Any]]:
    return (delay, 200, {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]})


def session(focus: str | None = None) -> InspectorSession:
    sessions = Path(__file__).resolve().parents[2] / "sessions"
    t: Transcript = load(sessions / "openai-chat.json")
    counter = RoughCounter()
    s = InspectorSession.build(t, count_transcript(t, counter), counter)
    s.keep_last(1)
    s.set_focus(focus)
    return s


class Host(App[None]):
    def __init__(self, s: InspectorSession) -> None:
        super().__init__()
        self.s = s
        self.jumped: list[int | None] = []

    def on_mount(self) -> None:
        self.push_screen(PreviewScreen(self.s), callback=self.jumped.append)


def preview_of(app: Host) -> PreviewScreen:
    screen = app.screen
    assert isinstance(screen, PreviewScreen)
    return screen


async def test_fallback_scorecard_and_jump_to_a_missing_item() -> None:
    app = Host(session())
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        assert screen.query_one("#preview-provider", Select).value == FALLBACK_CHOICE
        review = screen.review
        assert review is not None
        assert screen.result is not None and screen.result.summary_message is not None
        card = screen.query_one("#preview-scorecard", OptionList)
        rows = [str(card.get_option_at_index(i).prompt) for i in range(card.option_count)]
        assert rows[0].startswith("review: kept")
        assert any(r.strip().startswith("paths") for r in rows)
        assert any("no_secrets" in r for r in rows)
        missing = [item for items in review.missing.values() for item in items]
        assert missing, "the fallback leaves numbers out, so something is listed"
        first = rows.index(next(r for r in rows if r.startswith("missing")))
        # Select the first missing item: the screen is dismissed with its message index.
        card.focus()
        card.highlighted = first + 1
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.jumped))
        target = app.jumped[0]
        assert target is not None
        assert target in {item.index for item in missing}
        assert 0 <= target < len(app.s.transcript.messages)


async def test_escape_dismisses_without_a_jump() -> None:
    app = Host(session())
    async with app.run_test(size=(120, 40)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        await pilot.press("escape")
        await wait_for(pilot, lambda: bool(app.jumped))
        assert app.jumped == [None]


async def test_provider_summary_with_prefilled_focus_topic(server: Any) -> None:
    server.replies.append(completion("## Relevant Files\n- src/app/payments/webhooks.py"))
    app = Host(session(focus="webhook retries"))
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        assert screen.query_one("#preview-focus", Input).value == "webhook retries"
        select = screen.query_one("#preview-provider", Select)
        assert [v for _, v in screen._choices] == [FALLBACK_CHOICE, "local"]
        select.value = "local"  # choosing a provider regenerates
        await wait_for(
            pilot,
            lambda: screen.result is not None and screen.result.report.summary_kind.value == "llm",
        )
        assert len(server.bodies) == 1
        prompt = server.bodies[0]["messages"][1]["content"]
        assert 'Focus topic: "webhook retries"' in prompt
        assert screen.error is None
        assert screen.review is not None
        assert screen.review.found("paths") < screen.review.total("paths")
        # A new focus topic, submitted, regenerates with it.
        server.replies.append(completion("## Goal\nsecond"))
        focus = screen.query_one("#preview-focus", Input)
        focus.value = "idempotency keys"
        focus.focus()
        await pilot.press("enter")
        await wait_for(pilot, lambda: len(server.bodies) == 2 and not screen.generating)
        assert 'Focus topic: "idempotency keys"' in server.bodies[1]["messages"][1]["content"]


async def test_provider_error_is_shown_with_its_class_and_nothing_changes(server: Any) -> None:
    server.replies.append((0.0, 401, {"error": {"message": "Incorrect API key provided"}}))
    s = session()
    app = Host(s)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        screen.query_one("#preview-provider", Select).value = "local"
        await wait_for(pilot, lambda: screen.error is not None)
        assert screen.result is not None
        assert screen.result.report.status.value == "aborted"
        assert "[auth]" in screen.error
        assert "nothing was changed" in screen.error
        assert KEY not in screen.error
        assert screen.result.transcript is s.transcript
        shown = str(screen.query_one("#preview-error").render())
        assert "[auth]" in shown and "nothing was changed" in shown


async def test_missing_key_is_a_plain_config_error(
    server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_VAR)
    app = Host(session())
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        screen.query_one("#preview-provider", Select).value = "local"
        await wait_for(pilot, lambda: screen.error is not None)
        assert screen.error.startswith("✗ config:")
        assert f"export {KEY_VAR}=" in screen.error and "nothing was changed" in screen.error
        assert server.bodies == []
        assert not screen.generating


async def test_cancel_drops_the_running_generation(server: Any) -> None:
    server.replies.append(completion("## Goal\nLATE-ANSWER", delay=0.8))
    app = Host(session())
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        before = screen.result
        screen.query_one("#preview-provider", Select).value = "local"
        await wait_for(pilot, lambda: screen.generating and len(server.bodies) == 1)
        screen.query_one("#preview-view").focus()
        await pilot.press("x")
        assert not screen.generating
        assert screen.error is not None and "cancelled" in screen.error
        await pilot.pause(1.2)  # the late answer arrives and is dropped
        assert screen.result is before
        assert "LATE-ANSWER" not in (screen.result.summary_message.text if screen.result and screen.result.summary_message else "")  # fmt: skip


async def test_malformed_config_offers_only_the_fallback(tmp_path: Path) -> None:
    Path(os.environ["TJUI_CONFIG"]).write_text("[providers.local\n")
    app = Host(session())
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        assert [v for _, v in screen._choices] == [FALLBACK_CHOICE]
        assert screen.error is not None and "invalid TOML" in screen.error


async def test_unanswered_probe_jumps_to_its_evidence(server: Any) -> None:
    # A summary that says almost nothing: the probes it cannot answer are listed, and
    # enter on one dismisses the preview with its evidence's message index.
    server.replies.append(completion("## Goal\nSome work happened."))
    app = Host(session())
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_for(pilot, lambda: preview_of(app).result is not None)
        screen = preview_of(app)
        screen.query_one("#preview-provider", Select).value = "local"
        await wait_for(
            pilot,
            lambda: screen.result is not None and screen.result.report.summary_kind.value == "llm",
        )
        review = screen.review
        assert review is not None and review.probes is not None
        unanswered = review.probes.unanswered
        assert unanswered
        card = screen.query_one("#preview-scorecard", OptionList)
        ids = [card.get_option_at_index(i).id for i in range(card.option_count)]
        rows = [str(card.get_option_at_index(i).prompt) for i in range(card.option_count)]
        assert any(r.startswith("probes: ") for r in rows)
        card.focus()
        card.highlighted = ids.index("probe-0")
        await pilot.press("enter")
        await wait_for(pilot, lambda: bool(app.jumped))
        assert app.jumped == [unanswered[0].evidence]


def test_scorecard_lists_a_lost_rule_with_a_jump() -> None:
    from tinyjuice.model import Message, MessageMeta, Role, TextPart
    from tinyjuice.review import review_summary
    from tjui.screens.preview import scorecard_options

    rules = Message(
        Role.USER,
        (TextPart("<system-reminder>\nContents of /p/CLAUDE.md:\n- Never push to main.\n"),),
        meta=MessageMeta(is_injected=True, injected_kind="system_reminder"),
    )
    ask = Message(Role.USER, (TextPart("Tidy the README."),))
    review = review_summary([rules, ask], "Tidy the README.", start_index=3)
    rows, jumps = scorecard_options(review)
    prompts = [str(r.prompt) for r in rows]
    assert "✗ rules: 0/1 kept" in prompts
    assert jumps["rule-0"] == 3
    assert any("lost claude_md: Never push to main." in p for p in prompts)
    kept = review_summary([rules, ask], "Tidy the README. Rule: never push to main.")
    assert "✓ rules: 1/1 kept" in [str(r.prompt) for r in scorecard_options(kept)[0]]
