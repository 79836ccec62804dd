"""Summary providers against a real HTTP server on 127.0.0.1, end to end through compress().

The server (``http.server.ThreadingHTTPServer`` on an ephemeral loopback port, in a
thread) is scripted per test: each request pops the next action — a JSON reply, raw
bytes, a slow reply, a body cut short, a reset connection. It speaks whatever a test
scripts, so one server serves both the OpenAI chat-completions and the Anthropic
Messages protocols; every request is recorded (path, headers, body).

Every failure class is asserted on the transcript that ``tinyjuice.pipeline.compress``
returns: auth and network failures leave every message byte-identical with status
"aborted"; transient failures insert the fallback summary and record the failure and a
cooldown; an empty or truncated answer is never inserted. No traffic leaves 127.0.0.1
(proxy variables are removed; the DNS failure is simulated at ``socket.getaddrinfo``).
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson
import pytest

from tinyjuice.formats import dumps
from tinyjuice.model import Message, MessageMeta, Role, TextPart, ToolCall, Transcript
from tinyjuice.options import CompactionOptions, CompactionState
from tinyjuice.pipeline import compress
from tinyjuice.providers import (
    ANTHROPIC_VERSION,
    AnthropicProvider,
    OpenAICompatProvider,
    ProviderConfig,
    ProviderKind,
    make_provider,
)
from tinyjuice.report import CompactionResult, Status
from tinyjuice.summary import (
    SECTION_TITLES,
    FailureClass,
    SummaryError,
    SummaryKind,
    SummaryRequest,
)

KEY_VAR = "TJ_TEST_SUMMARY_KEY"
KEY = "sk-" + "proj-" + "Kq7" * 14  # a fake key, assembled so no file holds a real-looking one
NOW = 1_000_000.0

# ------------------------------------------------------------------ secrets corpus
# Fake secrets of many kinds, assembled from pieces.

SECRETS: dict[str, str] = {
    "openai": "sk-" + "proj-" + "Zz9Yy8" * 7,
    "anthropic": "sk-" + "ant-" + "api03-" + "Qw3" * 28,
    "openrouter": "sk-" + "or-" + "v1-" + "9f" * 32,
    "google": "AI" + "za" + "Sy" + "D" * 33,
    "aws": "AK" + "IA" + "Z7XQ3EGRTYU2KLP4",
    "github": "gh" + "p_" + "Xy7Z" * 9,
    "gitlab": "gl" + "pat-" + "Mn4Op5Qr6St7Uv8Wx9Yz",
    "slack": "xo" + "xb-" + "2234567890-1987654321-" + "ZyXw" * 6,
    "stripe": "sk" + "_live_" + "9dK2" * 6,
    "huggingface": "hf" + "_" + "QrStUv" * 6,
    "jwt": "ey" + "JhbGciOiJIUzI1NiJ9" + "." + "ey" + "JzdWIiOiI5ODc2NTQzMjEwIn0" + "."
    "Zm9vYmFyYmF6cXV4cXV1eF9zaWduYXR1cmU",
    "url_password": "pa" + "ss" + "W0rd!" + "x7",
    "env_secret": "db" + "pw" + "-" + "correct-horse-42",
    "private_key_body": "MIIE" + "ow" + "IBAAKCAQEA" + "r" * 48,
}

SECRET_TEXT = "\n".join(
    [
        f"export OPENAI_API_KEY={SECRETS['openai']}",
        f"anthropic key {SECRETS['anthropic']} here",
        f"router {SECRETS['openrouter']}",
        f"https://maps.example.com/api?key={SECRETS['google']}&q=1",
        f"aws_access_key_id = {SECRETS['aws']}",
        f"git push https://{SECRETS['github']}@github.com/org/repo.git",
        f"CI token {SECRETS['gitlab']} for pushes",
        f"SLACK_BOT={SECRETS['slack']}",
        f"stripe.api_key = {SECRETS['stripe']}",
        f"huggingface-cli login --token {SECRETS['huggingface']}",
        f"cookie: {SECRETS['jwt']};",
        f"DATABASE_URL=postgres://admin:{SECRETS['url_password']}@db.internal:5432/app",
        f"DB_PASSWORD={SECRETS['env_secret']}",
        "-----BEGIN RSA " + "PRIVATE KEY-----\n" + SECRETS["private_key_body"] + "\n"
        "-----END RSA " + "PRIVATE KEY-----",
    ]
)


def test_corpus_has_at_least_ten_kinds() -> None:
    from tinyjuice.redact import find_secrets

    kinds = {h.kind for h in find_secrets(SECRET_TEXT)}
    assert len(kinds) >= 10, kinds


# -------------------------------------------------------------------------- server


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


Action = Callable[[BaseHTTPRequestHandler], None]


@dataclass
class Script:
    actions: list[Action] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> Action | None:
        with self.lock:
            return self.actions.pop(0) if self.actions else None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length)
        script = self.server.script
        with script.lock:
            script.requests.append(
                Recorded("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            )
        action = script.next() or reply(500, {"error": {"message": "no scripted response"}})
        action(self)

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def finish(self) -> None:
        with contextlib.suppress(OSError):
            super().finish()


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: Script

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # scripted resets and slow replies end in socket errors on purpose


@dataclass
class LiveServer:
    base: str
    script: Script

    def push(self, *actions: Action) -> None:
        self.script.actions.extend(actions)

    @property
    def requests(self) -> list[Recorded]:
        return self.script.requests


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("all_proxy", raising=False)
    monkeypatch.setenv(KEY_VAR, KEY)


@pytest.fixture
def server() -> Iterator[LiveServer]:
    srv = _Server(("127.0.0.1", 0), _Handler)
    srv.script = Script()
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.02})
    thread.daemon = True
    thread.start()
    host, port = srv.server_address[:2]
    try:
        yield LiveServer(f"http://{host}:{port}", srv.script)
    finally:
        srv.shutdown()
        srv.server_close()


# ---------------------------------------------------------------- scripted actions


def reply(status: int, obj: Any, headers: dict[str, str] | None = None) -> Action:
    return raw(status, orjson.dumps(obj), "application/json", headers)


def raw(
    status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
) -> Action:
    def act(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("content-type", content_type)
        h.send_header("content-length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)
        h.wfile.flush()

    return act


def slow(seconds: float, then: Action) -> Action:
    def act(h: BaseHTTPRequestHandler) -> None:
        time.sleep(seconds)
        then(h)

    return act


def cut_short(declared: int = 4000, sent: bytes = b'{"choices": [{"message": {"con') -> Action:
    """Headers promise ``declared`` bytes; the server sends a few and closes."""

    def act(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", str(declared))
        h.end_headers()
        h.wfile.write(sent)
        h.wfile.flush()
        h.close_connection = True
        h.connection.shutdown(socket.SHUT_RDWR)

    return act


def reset() -> Action:
    """Close the connection with a TCP reset before any response."""

    def act(h: BaseHTTPRequestHandler) -> None:
        h.close_connection = True
        h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        h.connection.close()

    return act


def openai_ok(text: str, finish: str = "stop", model: str = "m") -> Action:
    return reply(
        200,
        {
            "id": "x",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
        },
    )


def anthropic_ok(text: str, stop: str = "end_turn") -> Action:
    return reply(
        200,
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-x",
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop,
        },
    )


# ---------------------------------------------------------------------- transcript


def _user(text: str) -> Message:
    return Message(Role.USER, (TextPart(text),))


def _assistant(text: str, *calls: ToolCall) -> Message:
    return Message(Role.ASSISTANT, (TextPart(text),) if text else (), tool_calls=calls)


def _tool(call_id: str, name: str, text: str, *, error: bool = False) -> Message:
    return Message(
        Role.TOOL,
        (TextPart(text),),
        tool_call_id=call_id,
        tool_name=name,
        meta=MessageMeta(is_error=error),
    )


def _call(call_id: str, name: str, **args: Any) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(args))


def transcript() -> Transcript:
    """Six exchanges; secrets in the middle (user text, tool arguments, tool output)."""
    log = "\n".join(f"collected item {i} from src/pkg/mod_{i}.py" for i in range(60))
    msgs: list[Message] = [
        Message(Role.SYSTEM, (TextPart("You are a coding agent."),)),
        _user("Set up the project."),
        _assistant("Done with setup."),
    ]
    for i in range(4):
        msgs += [
            _user(f"Step {i}: fix src/pkg/mod_{i}.py. Credentials:\n{SECRET_TEXT}"),
            _assistant(
                "Running the tests.",
                _call(f"c{i}", "terminal", command=f"pytest -q tests/test_mod_{i}.py"),
            ),
            _tool(f"c{i}", "terminal", f"{log}\n{SECRET_TEXT}\nFAILED test_{i}\nexit code 1"),
            _assistant(f"Fixed mod_{i}; see https://ci.example.com/run/{i}."),
        ]
    msgs += [_user("Now write the changelog."), _assistant("Writing it.")]
    return Transcript(messages=tuple(msgs), format="openai", model="gpt-4o")


OPTIONS = CompactionOptions(keep_last=1, focus_topic="the pytest failures")


def run(provider: Any, options: CompactionOptions = OPTIONS) -> tuple[Transcript, CompactionResult]:
    t = transcript()
    result = compress(t, options, provider, CompactionState(), now=NOW)
    return t, result


def openai(server: LiveServer, **kw: Any) -> OpenAICompatProvider:
    kw.setdefault("api_key_env", KEY_VAR)
    kw.setdefault("timeout", 5.0)
    return OpenAICompatProvider(name="local", base_url=server.base + "/v1", model="main-m", **kw)


def anthropic(server: LiveServer, **kw: Any) -> AnthropicProvider:
    kw.setdefault("api_key_env", KEY_VAR)
    kw.setdefault("timeout", 5.0)
    return AnthropicProvider(name="claude", base_url=server.base, model="claude-main", **kw)


def assert_preserved(original: Transcript, result: CompactionResult, failure: str) -> None:
    assert result.report.status is Status.ABORTED
    assert result.report.failure_class == failure
    assert result.transcript.messages == original.messages
    # Byte-identical when written back.
    assert dumps(result.transcript, "openai") == dumps(original, "openai")
    assert result.summary_message is None
    assert "nothing was changed" in result.report.reason


def assert_fallback(result: CompactionResult, failure: str) -> None:
    """The deterministic fallback replaced the middle; the failure is on the report.

    (A completed compaction clears the cooldown in CompactionState — budget.py's
    ``record_compaction`` — so the cooldown is asserted on the lossless path, where
    the failure leaves every message in place: see :func:`assert_cooldown`.)
    """
    report = result.report
    assert report.status is Status.COMPACTED
    assert report.summary_kind is SummaryKind.FALLBACK
    assert report.failure_class == failure
    assert report.retry_class == "fallback"
    assert "generated locally without a model" in inserted_summary(result).text
    assert any(f"summary provider failed ({failure})" in w for w in report.warnings)


def assert_cooldown(original: Transcript, result: CompactionResult, failure: str, s: int) -> None:
    """Lossy fallback not accepted: preserved, with the cooldown recorded in the state."""
    assert_preserved(original, result, failure)
    assert result.state.cooldown_until == NOW + s
    assert result.state.cooldown_reason == failure
    assert result.report.retry_class == "cooldown"


LOSSLESS = CompactionOptions(keep_last=1, accept_lossy_fallback=False)


def inserted_summary(result: CompactionResult) -> Message:
    """The one summary message in the compacted transcript (its role may have been
    flipped to fit the seam)."""
    found = [m for m in result.transcript.messages if m.meta.is_summary]
    assert len(found) == 1
    assert result.summary_message is not None
    assert found[0].text == result.summary_message.text
    return found[0]


def no_key_anywhere(result: CompactionResult, *extra: str) -> None:
    blob = orjson.dumps(result.report.to_dict()).decode() + "".join(extra)
    blob += "".join(m.text for m in result.transcript.messages)
    assert KEY not in blob


# ------------------------------------------------------------------------- success


def test_openai_success_request_body_and_inserted_summary(server: LiveServer) -> None:
    answer = (
        "## Historical Task Snapshot\nFixed the pytest failures in src/pkg/mod_0.py.\n"
        f"## Critical Context\nthe server echoed {SECRETS['openai']} and {SECRETS['aws']}"
    )
    server.push(openai_ok(answer, model="main-m"))
    original, result = run(openai(server))

    assert len(server.requests) == 1
    req = server.requests[0]
    assert req.path == "/v1/chat/completions"
    assert req.headers["authorization"] == f"Bearer {KEY}"
    body = req.json()
    assert body["model"] == "main-m"
    assert body["stream"] is False and body["max_tokens"] >= 1024
    roles = [m["role"] for m in body["messages"]]
    assert roles == ["system", "user"]
    prompt = body["messages"][1]["content"]
    for title in SECTION_TITLES:
        assert f"## {title}" in prompt
    assert 'Focus topic: "the pytest failures"' in prompt
    # The middle's content is there, redacted; no secret reached the server.
    assert "pytest -q tests/test_mod_1.py" in prompt
    assert "src/pkg/mod_2.py" in prompt
    assert "[REDACTED:openai_key]" in prompt and "[REDACTED:aws_access_key]" in prompt
    for secret in SECRETS.values():
        assert secret not in req.body.decode()

    report = result.report
    assert report.status is Status.COMPACTED
    assert report.summary_kind is SummaryKind.LLM
    assert report.summary_provider == "local"
    assert report.failure_class is None
    msg = inserted_summary(result)
    assert "Fixed the pytest failures in src/pkg/mod_0.py." in msg.text
    # The answer is redacted before insertion.
    for secret in SECRETS.values():
        assert secret not in msg.text
    assert "[REDACTED:" in msg.text
    no_key_anywhere(result)
    assert len(result.transcript.messages) < len(original.messages)


def test_anthropic_success_request_body_and_headers(server: LiveServer) -> None:
    server.push(anthropic_ok(f"## Goal\nShip the changelog.\nkey was {SECRETS['github']}"))
    _, result = run(anthropic(server))
    req = server.requests[0]
    assert req.path == "/v1/messages"
    assert req.headers["x-api-key"] == KEY
    assert req.headers["anthropic-version"] == ANTHROPIC_VERSION
    assert "authorization" not in req.headers
    body = req.json()
    assert body["model"] == "claude-main"
    assert body["max_tokens"] >= 1024
    assert "handoff summaries" in body["system"]
    assert [m["role"] for m in body["messages"]] == ["user"]
    content = body["messages"][0]["content"]
    assert "## Historical Pending Asks" in content
    assert 'Focus topic: "the pytest failures"' in content
    assert "[REDACTED:" in content
    for secret in SECRETS.values():
        assert secret not in req.body.decode()
    assert result.report.summary_kind is SummaryKind.LLM
    assert result.summary_message is not None
    assert "Ship the changelog." in result.summary_message.text
    assert SECRETS["github"] not in result.summary_message.text


def test_anthropic_base_url_with_v1_is_not_doubled(server: LiveServer) -> None:
    server.push(anthropic_ok("## Goal\nok"))
    provider = AnthropicProvider("c", server.base + "/v1/", "m", api_key_env=None, timeout=5)
    text = provider.summarize(SummaryRequest(messages=(_user("hi there"),)))
    assert text.text == "## Goal\nok"
    assert server.requests[0].path == "/v1/messages"
    assert "x-api-key" not in server.requests[0].headers  # no key configured: none sent


def test_local_server_without_key_sends_no_authorization(server: LiveServer) -> None:
    server.push(openai_ok("## Goal\nlocal"))
    provider = openai(server, api_key_env=None)
    out = provider.summarize(SummaryRequest(messages=(_user("hello"),), focus_topic="x"))
    assert out.text == "## Goal\nlocal" and out.model == "m"
    assert "authorization" not in server.requests[0].headers


def test_content_as_list_of_parts_is_joined(server: LiveServer) -> None:
    server.push(
        reply(
            200,
            {
                "choices": [
                    {
                        "message": {
                            "content": [
                                {"type": "text", "text": "## Goal\n"},
                                {"type": "text", "text": "parts"},
                            ]
                        },
                        "finish_reason": "stop",
                    }
                ]
            },
        )
    )
    out = openai(server).summarize(SummaryRequest(messages=(_user("hi"),)))
    assert out.text == "## Goal\nparts"


# ---------------------------------------------------------- auth: abort, preserved


@pytest.mark.parametrize("status", [401, 403])
@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_auth_failure_aborts_and_preserves_every_message(
    server: LiveServer, status: int, protocol: str
) -> None:
    body = {
        "error": {"type": "authentication_error", "message": f"Incorrect API key provided: {KEY}"}
    }
    server.push(reply(status, body))
    provider = openai(server) if protocol == "openai" else anthropic(server)
    original, result = run(provider)
    assert_preserved(original, result, "auth")
    assert len(server.requests) == 1  # never retried
    assert result.state.cooldown_until == NOW + 600
    no_key_anywhere(result)  # the key the server echoed is scrubbed from the report


def test_bad_key_answered_with_400_is_auth(server: LiveServer) -> None:
    server.push(reply(400, {"error": {"code": "invalid_api_key", "message": "Invalid API key"}}))
    original, result = run(openai(server))
    assert_preserved(original, result, "auth")


def test_unset_key_variable_is_auth_naming_the_variable(
    server: LiveServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_VAR)
    original, result = run(openai(server))
    assert_preserved(original, result, "auth")
    assert server.requests == []  # nothing was sent
    assert any(f"export {KEY_VAR}=" in w for w in result.report.warnings)


# ------------------------------------------------------- network: abort, preserved


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_connection_refused_aborts_and_preserves(protocol: str) -> None:
    base = f"http://127.0.0.1:{_free_port()}"
    cls = OpenAICompatProvider if protocol == "openai" else AnthropicProvider
    provider = cls("p", base, "m", api_key_env=KEY_VAR, timeout=5)
    original, result = run(provider)
    assert_preserved(original, result, "network")
    assert result.state.cooldown_until == NOW + 60


def test_dns_failure_aborts_and_preserves(monkeypatch: pytest.MonkeyPatch) -> None:
    real = socket.getaddrinfo

    def fake(host: Any, *args: Any, **kw: Any) -> Any:
        if host not in ("127.0.0.1", b"127.0.0.1"):
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", fake)
    provider = OpenAICompatProvider(
        "p", "http://summaries.invalid/v1", "m", api_key_env=KEY_VAR, timeout=5
    )
    original, result = run(provider)
    assert_preserved(original, result, "network")
    assert any("could not connect" in w for w in result.report.warnings)


def test_connection_reset_before_response_aborts_and_preserves(server: LiveServer) -> None:
    server.push(reset())
    original, result = run(openai(server))
    assert_preserved(original, result, "network")


# ---------------------------------------------------------------- model not found


def test_model_not_found_retries_once_with_fallback_model(server: LiveServer) -> None:
    server.push(
        reply(404, {"error": {"code": "model_not_found", "message": "model main-m not found"}}),
        openai_ok("## Goal\nfrom the fallback model", model="small-m"),
    )
    _, result = run(openai(server, fallback_model="small-m"))
    assert [r.json()["model"] for r in server.requests] == ["main-m", "small-m"]
    assert result.report.status is Status.COMPACTED
    assert result.report.summary_kind is SummaryKind.LLM
    assert "retried" in (result.report.summary_confidence or "")
    assert "from the fallback model" in inserted_summary(result).text


def test_model_not_found_without_fallback_model_goes_to_policy(server: LiveServer) -> None:
    server.push(reply(404, {"error": {"message": "model 'main-m' not found"}}))
    _, result = run(openai(server))
    assert len(server.requests) == 1  # no fallback model: no retry
    assert_fallback(result, "model_not_found")
    server.push(reply(404, {"error": {"message": "model 'main-m' not found"}}))
    original, result = run(openai(server), LOSSLESS)
    assert_cooldown(original, result, "model_not_found", 60)


def test_model_not_found_twice_then_policy(server: LiveServer) -> None:
    missing = reply(404, {"error": {"type": "not_found_error", "message": "model: x"}})
    server.push(missing, missing)
    original, result = run(anthropic(server, fallback_model="claude-small"), LOSSLESS)
    assert [r.json()["model"] for r in server.requests] == ["claude-main", "claude-small"]
    assert_cooldown(original, result, "model_not_found", 60)


def test_400_saying_the_model_does_not_exist_is_model_not_found(server: LiveServer) -> None:
    server.push(
        reply(400, {"error": {"message": "The model `nope` does not exist", "code": None}}),
        openai_ok("## Goal\nsecond try"),
    )
    _, result = run(openai(server, fallback_model="other"))
    assert len(server.requests) == 2
    assert result.report.summary_kind is SummaryKind.LLM


# -------------------------------------------------- transient: fallback + cooldown


@pytest.mark.parametrize(
    ("status", "failure", "cooldown"),
    [
        (408, "timeout", 30),
        (429, "rate_limit", 60),
        (500, "server", 30),
        (502, "server", 30),
        (503, "server", 30),
        (529, "server", 30),
    ],
)
def test_transient_status_inserts_fallback_with_cooldown(
    server: LiveServer, status: int, failure: str, cooldown: int
) -> None:
    busy = reply(status, {"error": {"message": "busy"}}, {"retry-after": "7"})
    server.push(busy)
    original, result = run(openai(server))
    assert_fallback(result, failure)
    assert len(server.requests) == 1
    assert result.transcript.messages != original.messages
    assert any(f"HTTP {status}" in w and "retry after 7" in w for w in result.report.warnings)
    server.push(busy)
    original, result = run(openai(server), LOSSLESS)
    assert_cooldown(original, result, failure, cooldown)


def test_transient_with_abort_on_failure_preserves(server: LiveServer) -> None:
    server.push(reply(503, {"error": {"message": "overloaded"}}))
    original, result = run(
        openai(server), CompactionOptions(keep_last=1, abort_on_summary_failure=True)
    )
    assert_preserved(original, result, "server")


@pytest.mark.perf
def test_slow_response_hits_the_timeout(server: LiveServer) -> None:
    server.push(slow(2.0, openai_ok("## Goal\ntoo late")))
    start = time.monotonic()
    _, result = run(openai(server, timeout=0.3))
    elapsed = time.monotonic() - start
    assert elapsed < 1.8
    assert_fallback(result, "timeout")
    assert "too late" not in inserted_summary(result).text
    server.push(slow(2.0, openai_ok("## Goal\ntoo late")))
    original, result = run(openai(server, timeout=0.3), LOSSLESS)
    assert_cooldown(original, result, "timeout", 30)


def test_timeout_retries_once_on_the_fallback_model(server: LiveServer) -> None:
    server.push(slow(1.5, openai_ok("late")), openai_ok("## Goal\nquick small model"))
    _, result = run(openai(server, timeout=0.3, fallback_model="small-m"))
    assert [r.json()["model"] for r in server.requests] == ["main-m", "small-m"]
    assert result.report.summary_kind is SummaryKind.LLM
    assert "quick small model" in inserted_summary(result).text


def test_trickling_body_is_stopped_by_the_overall_deadline(server: LiveServer) -> None:
    def trickle(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("content-type", "application/json")
        h.send_header("content-length", "2000")
        h.end_headers()
        for _ in range(40):
            h.wfile.write(b" ")
            h.wfile.flush()
            time.sleep(0.05)

    server.push(trickle)
    provider = openai(server, timeout=0.4)
    with pytest.raises(SummaryError) as err:
        provider.summarize(SummaryRequest(messages=(_user("hi"),)))
    assert err.value.failure_class is FailureClass.TIMEOUT


@pytest.mark.parametrize(
    ("action", "failure"),
    [
        (
            raw(200, b"<!DOCTYPE html><html><body>Sign in to the proxy</body></html>", "text/html"),
            "malformed",
        ),
        (raw(200, b'{"choices": [{"message": ', "application/json"), "malformed"),
        (raw(200, b'{"unexpected": true}', "application/json"), "malformed"),
        (cut_short(), "stream_closed"),
    ],
    ids=["html-proxy-page", "malformed-json", "wrong-shape", "stream-closed-mid-body"],
)
def test_bad_bodies_are_transient_and_insert_fallback(
    server: LiveServer, action: Action, failure: str
) -> None:
    server.push(action)
    _, result = run(openai(server))
    assert_fallback(result, failure)
    server.push(action)
    original, result = run(openai(server), LOSSLESS)
    assert_cooldown(original, result, failure, 30)


def test_anthropic_overloaded_error_is_server(server: LiveServer) -> None:
    server.push(
        reply(
            529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
        )
    )
    _, result = run(anthropic(server))
    assert_fallback(result, "server")


def test_error_object_inside_a_200_reply(server: LiveServer) -> None:
    server.push(reply(200, {"error": {"code": 429, "message": "upstream rate limited"}}))
    with pytest.raises(SummaryError) as err:
        openai(server).summarize(SummaryRequest(messages=(_user("hi"),)))
    assert err.value.failure_class is FailureClass.RATE_LIMIT


# ------------------------------------------------ empty / truncated: never inserted


@pytest.mark.parametrize(
    ("protocol", "action", "failure", "leak"),
    [
        ("openai", openai_ok(""), "empty", None),
        ("openai", openai_ok("   \n "), "empty", None),
        ("openai", openai_ok("## Goal\nPARTIAL-OPENAI cut", finish="length"), "truncated", "PARTIAL-OPENAI"),
        ("anthropic", anthropic_ok(""), "empty", None),
        ("anthropic", anthropic_ok("## Goal\nPARTIAL-CLAUDE", stop="max_tokens"), "truncated", "PARTIAL-CLAUDE"),
    ],
    ids=["openai-empty", "openai-blank", "openai-length", "anthropic-empty", "anthropic-max-tokens"],
)  # fmt: skip
def test_empty_or_truncated_answer_is_never_inserted(
    server: LiveServer, protocol: str, action: Action, failure: str, leak: str | None
) -> None:
    make = openai if protocol == "openai" else anthropic
    provider = make(server, fallback_model="small")
    # The policy retries these once on the fallback model; that answer is bad too.
    server.push(action, action)
    _, result = run(provider)
    assert len(server.requests) == 2
    assert_fallback(result, failure)
    if leak:
        assert all(leak not in m.text for m in result.transcript.messages)
    # With the fallback disabled nothing at all is inserted.
    server.push(action, action)
    original, result = run(provider, CompactionOptions(keep_last=1, fallback_enabled=False))
    assert_preserved(original, result, failure)
    assert len(server.requests) == 4


# ------------------------------------------------------------- secrets, key, misc


def test_secrets_never_reach_the_server_nor_the_summary(server: LiveServer) -> None:
    # The server answers with every secret of the corpus in the summary.
    server.push(openai_ok("## Critical Context\n" + SECRET_TEXT))
    request = SummaryRequest(
        messages=(
            _user(SECRET_TEXT),  # not redacted by a caller: the provider redacts anyway
            _assistant("", _call("c1", "terminal", command=f"deploy --token {SECRETS['github']}")),
            _tool("c1", "terminal", SECRET_TEXT),
        ),
        previous_summary=f"## Goal\nold summary with {SECRETS['stripe']}",
        focus_topic=f"rotate {SECRETS['aws']}",
    )
    out = openai(server).summarize(request)
    sent = server.requests[0].body.decode()
    for name, secret in SECRETS.items():
        assert secret not in sent, name
        assert secret not in out.text, name
    assert KEY not in sent  # the key travels in the header only
    assert "[REDACTED:" in out.text


def test_provider_objects_never_hold_the_key() -> None:
    provider = make_provider(
        ProviderConfig("p", "http://127.0.0.1:1/v1", "m", KEY_VAR, kind=ProviderKind.OPENAI)
    )
    assert KEY not in repr(provider)
    assert not any(getattr(provider, f) == KEY for f in provider.__dataclass_fields__)
    assert isinstance(
        make_provider(ProviderConfig("a", "http://127.0.0.1:1", "m", kind=ProviderKind.ANTHROPIC)),
        AnthropicProvider,
    )


def test_one_definition_of_the_endpoint_settings() -> None:
    """Config and both providers share the fields; make_provider carries every one."""
    from dataclasses import fields

    from tinyjuice.providers.endpoint import ENDPOINT_SETTINGS, Endpoint

    assert ENDPOINT_SETTINGS == ("base_url", "model", "api_key_env", "timeout", "fallback_model")
    for kind, cls in (
        (ProviderKind.OPENAI, OpenAICompatProvider),
        (ProviderKind.ANTHROPIC, AnthropicProvider),
    ):
        assert issubclass(cls, Endpoint) and issubclass(ProviderConfig, Endpoint)
        config = ProviderConfig("n", "http://127.0.0.1:9/v1", "m", "VAR_X", 7.5, "small", kind=kind)
        provider = make_provider(config)
        assert type(provider) is cls
        for f in fields(Endpoint):
            assert getattr(provider, f.name) == getattr(config, f.name), f.name


def test_with_main_model_only_when_a_fallback_model_is_configured() -> None:
    p = OpenAICompatProvider("p", "http://127.0.0.1:1/v1", "big", fallback_model="small")
    retry = p.with_main_model
    assert callable(retry)
    q = retry()
    assert q.model == "small" and q.fallback_model is None and q.with_main_model is None
    assert OpenAICompatProvider("p", "http://127.0.0.1:1/v1", "big").with_main_model is None
    same = AnthropicProvider("p", "http://127.0.0.1:1", "big", fallback_model="big")
    assert same.with_main_model is None


def test_invalid_base_url_is_network_and_sends_nothing() -> None:
    provider = OpenAICompatProvider("p", "ftp://127.0.0.1/v1", "m", timeout=1)
    with pytest.raises(SummaryError) as err:
        provider.summarize(SummaryRequest(messages=(_user("hi"),)))
    assert err.value.failure_class is FailureClass.NETWORK
    assert "base_url" in err.value.message
