"""Property: a secret planted anywhere never reaches a provider or a written file.

For any secret of the catalogue, planted in any position (assistant or user text, a
JSON-escaped tool output, JSON nested in a string of one, tool-call arguments, a system
message, reasoning) of a transcript written in any writable format and read back as
stored, compaction — the pipeline with a summary provider (OpenAI-compatible or
Anthropic, served by a real HTTP server on 127.0.0.1), the rules profile, and a batch
trajectory with a provider — sends no request body and writes no transcript or report
that holds the secret. The secret is planted only in the compressed middle: the head
and the verbatim tail are the user's own messages, written back as they were.
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_providers import (  # the loopback server of the provider tests, reused
    KEY_VAR,
    LiveServer,
    _no_proxies,  # noqa: F401  (autouse: no proxy variables, the test key set)
    anthropic_ok,
    openai_ok,
    server,  # noqa: F401  (fixture)
)
from test_redact_catalogue import CATALOGUE, Case

from tinyjuice.batch import BatchOptions, compress_trajectory
from tinyjuice.budget import CompactionState
from tinyjuice.formats import WRITABLE_FORMATS, dumps, load_bytes
from tinyjuice.model import Message, Role, TextPart, ToolCall, Transcript
from tinyjuice.pipeline import compress
from tinyjuice.providers import AnthropicProvider, OpenAICompatProvider
from tinyjuice.report import CompactionOptions, Profile, Status
from tinyjuice.tokens import RoughCounter

POSITIONS = (
    "assistant_text",
    "user_text",
    "tool_output_json",
    "tool_output_nested_json",
    "tool_arguments",
    "system_message",
    "reasoning",
)
ROUTES = ("pipeline_openai", "pipeline_anthropic", "rules", "batch_openai")
ANSWER = (
    "## Historical Task Snapshot\nThe deploy scripts were reviewed in src/deploy/run.py.\n"
    "## Critical Context\nThe staging run passed."
)
COUNTER = RoughCounter()


def _call(call_id: str, command: str) -> ToolCall:
    return ToolCall(call_id, "terminal", orjson.dumps({"command": command}).decode())


def _planted(text: str, position: str) -> list[Message]:
    if position == "assistant_text":
        return [Message(Role.ASSISTANT, (TextPart(f"Noting the setting:\n{text}"),))]
    if position == "user_text":
        return [Message(Role.USER, (TextPart(f"Use this:\n{text}"),))]
    if position == "system_message":
        return [Message(Role.SYSTEM, (TextPart(f"Environment notes.\n{text}"),))]
    if position == "reasoning":
        return [Message(Role.ASSISTANT, (TextPart("Checked."),), reasoning=f"I saw {text} there")]
    if position == "tool_arguments":
        call = _call("p1", f"deploy --config '{text}' --verbose")
        return [
            Message(Role.ASSISTANT, (), tool_calls=(call,)),
            Message(Role.TOOL, (TextPart("deployed"),), tool_call_id="p1", tool_name="terminal"),
        ]
    output = "$ cat settings\n" + text + "\n" + "line of output\n" * 5
    if position == "tool_output_nested_json":
        output = orjson.dumps({"stdout": output, "code": 0}).decode()
    result = orjson.dumps({"output": output, "exit_code": 0}).decode()
    return [
        Message(Role.ASSISTANT, (), tool_calls=(_call("p1", "cat settings"),)),
        Message(Role.TOOL, (TextPart(result),), tool_call_id="p1", tool_name="terminal"),
    ]


def _transcript(case: Case, position: str) -> Transcript:
    """Head (system, first exchange), a middle of three steps with the secret planted in
    the second, and a tail of two exchanges (``keep_last=2`` keeps them verbatim)."""
    log = "\n".join(f"collected item {i} from src/pkg/mod_{i}.py" for i in range(80))
    msgs = [
        Message(Role.SYSTEM, (TextPart("You are a deployment agent."),)),
        Message(Role.USER, (TextPart("Deploy the service to staging."),)),
        Message(Role.ASSISTANT, (TextPart("Starting."),)),
    ]
    for i in range(3):
        msgs += [
            Message(Role.USER, (TextPart(f"Run step {i}."),)),
            Message(Role.ASSISTANT, (TextPart(f"Step {i}."),), tool_calls=(_call(f"c{i}", "ls"),)),
            Message(
                Role.TOOL,
                (TextPart(f"{log}\nstep {i}"),),
                tool_call_id=f"c{i}",
                tool_name="terminal",
            ),
        ]
        if i == 1:
            msgs += _planted(case.text.format(case.secret), position)
            msgs.append(Message(Role.ASSISTANT, (TextPart("Noted."),)))
    msgs += [
        Message(Role.USER, (TextPart("Now write the changelog."),)),
        Message(Role.ASSISTANT, (TextPart("Writing it."),)),
        Message(Role.USER, (TextPart("Thanks."),)),
        Message(Role.ASSISTANT, (TextPart("Done."),)),
    ]
    return Transcript(messages=tuple(msgs), format="openai", model="gpt-4o")


def _stored(case: Case, position: str, fmt: str) -> Transcript:
    """The planted transcript written in ``fmt`` and read back, as it is stored."""
    return load_bytes(dumps(_transcript(case, position), fmt), f"planted.{fmt}", format=fmt)


def _needles(secret: str) -> list[str]:
    """The secret as it can appear in a body or file: raw, JSON-escaped once or twice,
    and each of its lines."""
    once = orjson.dumps(secret).decode()[1:-1]
    twice = orjson.dumps(once).decode()[1:-1]
    lines = [line for line in secret.splitlines() if len(line) >= 8]
    return sorted({secret, once, twice, *lines})


@dataclass
class _Run:
    written: list[str]
    compacted: bool


def _via_pipeline(stored: Transcript, fmt: str, route: str, srv: LiveServer) -> _Run:
    provider: OpenAICompatProvider | AnthropicProvider | None = None
    if route == "pipeline_openai":
        srv.push(openai_ok(ANSWER))
        provider = OpenAICompatProvider(
            name="local", base_url=srv.base + "/v1", model="m", api_key_env=KEY_VAR, timeout=5
        )
    elif route == "pipeline_anthropic":
        srv.push(anthropic_ok(ANSWER))
        provider = AnthropicProvider(
            name="claude", base_url=srv.base, model="c", api_key_env=KEY_VAR, timeout=5
        )
    profile = Profile.RULES if route == "rules" else Profile.HERMES
    opts = CompactionOptions(keep_last=2, force=True, profile=profile, include_preview=True)
    result = compress(stored, opts, provider, CompactionState(), counter=COUNTER, now=0.0)
    report = orjson.dumps(result.report.to_dict()).decode()
    return _Run(
        [dumps(result.transcript, fmt).decode(), report], result.report.status is Status.COMPACTED
    )


def _via_batch(stored: Transcript, fmt: str, srv: LiveServer) -> _Run:
    srv.push(openai_ok(ANSWER))
    provider = OpenAICompatProvider(
        name="local", base_url=srv.base + "/v1", model="m", api_key_env=KEY_VAR, timeout=5
    )
    opts = BatchOptions(target_tokens=300, keep_last=2, summary_tokens=120)
    result = compress_trajectory(stored, opts, counter=COUNTER, provider=provider)
    return _Run([dumps(result.transcript, fmt).decode()], result.changed)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    case=st.sampled_from(CATALOGUE),
    position=st.sampled_from(POSITIONS),
    fmt=st.sampled_from(WRITABLE_FORMATS),
    route=st.sampled_from(ROUTES),
)
def test_no_planted_secret_reaches_a_provider_or_a_written_file(
    server: LiveServer,  # noqa: F811
    case: Case,
    position: str,
    fmt: str,
    route: str,
) -> None:
    stored = _stored(case, position, fmt)
    if route == "rules" and any(
        m.role is Role.USER and case.secret in m.text for m in stored.messages
    ):
        # Rule 5: the rules profile never touches a user message — the user's own text,
        # written back as it was. A format may store a system message as one (Anthropic).
        stored = _stored(case, "assistant_text", fmt)
    server.script.actions.clear()
    server.script.requests.clear()
    if route == "batch_openai":
        run = _via_batch(stored, fmt, server)
    else:
        run = _via_pipeline(stored, fmt, route, server)
    assert run.compacted  # the property is about real compactions, never a no-op
    bodies = [r.body.decode() for r in server.requests]
    if route != "rules":
        assert len(bodies) == 1  # the provider was asked
    for needle in _needles(case.secret):
        for body in bodies:
            assert needle not in body, (case.kind, position, fmt, route)
        for text in run.written:
            assert needle not in text, (case.kind, position, fmt, route)
