"""Bad input for the newer agents' readers: only ever a LoadError, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tinyjuice.formats import LoadError, LoadOptions, load_bytes

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
NEW = ("gemini-cli", "cline", "aider", None)
SEEDS = [
    (SESSIONS / name).read_bytes()
    for name in (
        "gemini-cli-session.jsonl",
        "cline-task/api_conversation_history.json",
        "aider-chat-history.md",
        "sharegpt-glaive.jsonl",
        "mini-swe-agent.traj.json",
    )
]
KEYS = [
    "id", "type", "content", "toolCalls", "result", "status", "tokens", "thoughts", "model",
    "$set", "$rewindTo", "sessionId", "projectHash", "messages", "role", "isSummary",
    "condenseId", "tool_use", "input", "functionResponse", "response", "output", "text",
    "from", "value", "conversations", "trajectory_format", "action",
]  # fmt: skip


def _check(data: bytes, fmt: str | None, lenient: bool = False) -> None:
    try:
        load_bytes(data, "fuzz.json", fmt, options=LoadOptions(lenient=lenient))
    except LoadError as exc:
        assert str(exc).startswith("fuzz.json")


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    value=st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=12),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.sampled_from(KEYS), children, max_size=5)
        ),
        max_leaves=30,
    ),
    fmt=st.sampled_from(NEW),
    lines=st.booleans(),
)
def test_random_records_raise_only_load_error(value: object, fmt: str | None, lines: bool) -> None:
    if lines and isinstance(value, list):
        data = "".join(json.dumps(v) + "\n" for v in value).encode() or b"{}"
    else:
        data = json.dumps(value).encode()
    _check(data, fmt)


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, len(SEEDS) - 1),
    cuts=st.lists(
        st.tuples(st.floats(0, 1), st.integers(0, 40), st.binary(max_size=8)),
        min_size=1,
        max_size=4,
    ),
    fmt=st.sampled_from(NEW),
    lenient=st.booleans(),
)
def test_mutated_new_samples_raise_only_load_error(
    seed: int, cuts: list[tuple[float, int, bytes]], fmt: str | None, lenient: bool
) -> None:
    data = bytearray(SEEDS[seed])
    for where, length, insert in cuts:
        pos = int(where * len(data))
        data[pos : pos + length] = insert
    _check(bytes(data), fmt, lenient)
