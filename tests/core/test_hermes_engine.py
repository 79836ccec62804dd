"""The Hermes context engine's logic (tinyjuice.hermes._core), without hermes-agent."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tinyjuice.hermes._aux import (
    ENV_BASE_URL,
    ENV_MODEL,
    HermesAuxProvider,
    classify_hermes_error,
    default_provider,
)
from tinyjuice.hermes._core import ENGINE_NAME, EngineCore
from tinyjuice.summary import FailureClass, SummaryError, SummaryRequest, SummaryText


def conversation(turns: int = 30) -> list[dict[str, Any]]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You fix flaky CI jobs."}]
    for i in range(turns):
        msgs.append({"role": "user", "content": f"Job {i} failed again, look at it. " * 8})
        msgs.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": f"call_{i}",
                        "type": "function",
                        "function": {"name": "read_log", "arguments": f'{{"job": {i}}}'},
                    }
                ],
            }
        )
        msgs.append(
            {"role": "tool", "tool_call_id": f"call_{i}", "content": f"job {i}: timeout\n" * 60}
        )
        msgs.append({"role": "assistant", "content": f"Job {i} timed out in step {i % 5}."})
    return msgs


def pairs_intact(msgs: list[dict[str, Any]]) -> bool:
    open_calls: set[str] = set()
    for m in msgs:
        for call in m.get("tool_calls") or ():
            open_calls.add(call["id"])
        if m["role"] == "tool":
            if m["tool_call_id"] not in open_calls:
                return False
            open_calls.discard(m["tool_call_id"])
    return not open_calls


class Failing:
    def __init__(self, failure: FailureClass) -> None:
        self.failure = failure
        self.calls = 0

    @property
    def name(self) -> str:
        return "failing"

    def summarize(self, request: SummaryRequest) -> SummaryText:
        self.calls += 1
        raise SummaryError(self.failure, f"{self.failure.value} failure")


def engine(provider: Any = None) -> EngineCore:
    e = EngineCore(lambda runtime: provider, clock=lambda: 1000.0)
    e.update_model("gpt-test", 128_000, base_url="http://127.0.0.1:9/v1", api_key="sk-secret")
    e.on_session_start("s1")
    return e


def test_decision_threshold_and_the_minus_one_sentinel() -> None:
    e = engine()
    assert e.name == ENGINE_NAME
    assert e.threshold_tokens == 96_000  # Hermes raises 50% to 75% under a 200K window
    assert e.should_compress(10_000) is False
    assert e.last_decision is not None and e.last_decision["code"] == "below_threshold"
    e.update_from_response({"prompt_tokens": 100_000, "completion_tokens": 10})
    assert e.last_total_tokens == 100_010
    assert e.should_compress() is True
    e.last_prompt_tokens = -1  # Hermes parks -1 right after a compaction
    assert e.should_compress() is False
    status = e.get_status()
    assert status["last_prompt_tokens"] == 0 and status["usage_percent"] == 0
    assert "sk-secret" not in repr(status)
    assert status["threshold_rule"].startswith("threshold 96,000")


def test_compress_keeps_pairs_and_reports() -> None:
    e = engine()
    msgs = conversation()
    before = copy.deepcopy(msgs)
    out = e.compress(msgs, current_tokens=90_000)
    assert msgs == before  # the input is not modified
    assert len(out) < len(msgs) and out[0]["role"] == "system"
    assert pairs_intact(out)
    assert e.compression_count == 1 and e._last_compression_made_progress
    assert e._last_summary_fallback_used and not e._last_compress_aborted
    last = e.get_status()["last_compaction"]
    assert last["status"] == "compacted" and last["summary_kind"] == "fallback"
    assert last["tokens_after"] < last["tokens_before"]
    assert last["messages_before"] == len(msgs) and last["messages_after"] == len(out)


@pytest.mark.parametrize("failure", [FailureClass.AUTH, FailureClass.NETWORK])
def test_auth_and_network_failures_keep_the_messages(failure: FailureClass) -> None:
    provider = Failing(failure)
    e = engine(provider)
    msgs = conversation()
    out = e.compress(msgs)
    assert provider.calls >= 1
    assert out is msgs
    assert e._last_compress_aborted and e.compression_count == 0
    assert e.get_status()["last_compaction"]["status"] == "aborted"


def test_other_failures_get_the_fallback_summary() -> None:
    e = engine(Failing(FailureClass.SERVER))
    out = e.compress(conversation())
    assert e.compression_count == 1 and e._last_summary_fallback_used
    assert e._last_summary_error == "server"
    assert pairs_intact(out)


def test_bad_input_comes_back_unchanged_without_raising() -> None:
    e = engine()
    bad: list[dict[str, Any]] = [{"role": "wizard", "content": "hi"}]
    assert e.compress(bad) is bad
    assert e._last_compress_aborted
    assert e.get_status()["last_compaction"]["status"] == "error"
    assert e.compress("not a list") == "not a list"  # type: ignore[arg-type]


def test_deepcopy_gives_an_independent_engine() -> None:
    e = engine()
    twin = copy.deepcopy(e)
    twin.update_model("small", 32_000)
    assert e.context_length == 128_000 and twin.context_length == 32_000
    twin.compress(conversation())
    assert twin.compression_count == 1 and e.compression_count == 0


def test_session_reset_clears_the_counters() -> None:
    e = engine()
    e.compress(conversation())
    e.update_from_response({"prompt_tokens": 70_000})
    e.on_session_reset()
    assert e.compression_count == 0 and e.last_prompt_tokens == 0
    assert e.get_status()["last_compaction"] is None


class _Err(Exception):
    def __init__(self, msg: str, status: int | None = None) -> None:
        super().__init__(msg)
        self.status_code = status


def test_hermes_errors_map_to_failure_classes() -> None:
    assert classify_hermes_error(_Err("x", 401)) is FailureClass.AUTH
    assert classify_hermes_error(_Err("x", 402)) is FailureClass.AUTH
    assert classify_hermes_error(_Err("x", 503)) is FailureClass.SERVER
    assert classify_hermes_error(_Err("x", 429)) is FailureClass.RATE_LIMIT
    no_provider = RuntimeError("No LLM provider configured for task")
    assert classify_hermes_error(no_provider) is FailureClass.NO_PROVIDER
    assert classify_hermes_error(_Err("boom"), lambda e: True) is FailureClass.NETWORK
    assert classify_hermes_error(_Err("boom"), lambda e: False) is FailureClass.OTHER


def test_provider_choice_without_hermes() -> None:
    # The dev environment has no hermes-agent: no auxiliary client.
    assert default_provider({}, env={}) is None
    env = {ENV_BASE_URL: "http://127.0.0.1:9/v1", ENV_MODEL: "m"}
    provider = default_provider({}, env=env)
    assert provider is not None and provider.name == "tinyjuice-env"
    assert HermesAuxProvider().name == "hermes-auxiliary"


def test_has_content_to_compress_follows_the_boundary() -> None:
    e = engine()
    assert e.has_content_to_compress(conversation()) is True
    short = conversation(1)  # system, one ask and its tool round: all protected
    assert e.has_content_to_compress(short) is False
    assert e.has_content_to_compress([{"role": "wizard"}]) is True  # compress() decides


def test_the_aux_provider_never_shows_the_key() -> None:
    provider = HermesAuxProvider({"model": "m", "api_key": "sk-live-123456"})
    assert "sk-live-123456" not in repr(provider)
