"""Live follow counts only what was appended: extended counts equal a full count."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise
from pathlib import Path

import pytest
from builders import SpyCounter, parsed_lines, text_message

from tinyjuice.formats import LoadError, load_appended, load_bytes
from tinyjuice.model import Role, Transcript
from tinyjuice.tokens import RoughCounter, count_transcript, default_counter, extend_tokens

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
JSONL = [
    "claude-code.jsonl",
    "codex-rollout.jsonl",
    "hermes-gateway.jsonl",
    "gemini-cli-session.jsonl",
]


def _prefixes(name: str) -> list[Transcript]:
    """The sample loaded whole at every line boundary (prefixes that do not load skipped)."""
    data = (SESSIONS / name).read_bytes()
    cuts = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    out = []
    for cut in cuts:
        try:
            out.append(load_bytes(data[:cut], SESSIONS / name))
        except LoadError:
            continue
    return out


@pytest.mark.parametrize("name", JSONL)
def test_extend_tokens_equals_a_full_count_at_every_line(name: str) -> None:
    counter = default_counter()
    prefixes = _prefixes(name)
    assert len(prefixes) > 3
    for before, after in pairwise(prefixes):
        previous = count_transcript(before, counter)
        assert extend_tokens(previous, before, after, counter) == count_transcript(after, counter)


def test_extend_tokens_counts_only_the_new_messages() -> None:
    spy = SpyCounter()
    before = Transcript(
        messages=(text_message("one"), text_message("two")), format="t", system_prompt="sys"
    )
    after = replace(before, messages=(*before.messages, text_message("three", Role.ASSISTANT)))
    previous = count_transcript(before, spy)
    spy.seen.clear()
    assert extend_tokens(previous, before, after, spy) == count_transcript(after, RoughCounter())
    assert "one" not in spy.seen and "sys" not in spy.seen and "three" in spy.seen


@pytest.mark.parametrize(
    "change",
    ["edited", "shorter", "system", "tools", "counter"],
)
def test_extend_tokens_falls_back_to_a_full_count(change: str) -> None:
    before = Transcript(messages=(text_message("one"), text_message("two")), format="t")
    after = replace(before, messages=(*before.messages, text_message("three")))
    previous = count_transcript(before, RoughCounter())
    if change == "edited":
        after = replace(after, messages=(text_message("ONE, much longer now"), *after.messages[1:]))
    elif change == "shorter":
        after = replace(before, messages=before.messages[:1])
    elif change == "system":
        after = replace(after, system_prompt="a system prompt appeared")
    elif change == "tools":
        after = replace(after, tools=({"name": "grep", "description": "search"},))
    else:
        previous = replace(previous, counter="another")
    assert extend_tokens(previous, before, after, RoughCounter()) == count_transcript(
        after, RoughCounter()
    )


# ------------------------------------------------------------------ appended lines


def _cuts(data: bytes) -> list[int]:
    return [i + 1 for i, b in enumerate(data) if b == 0x0A]


def _whole(data: bytes, name: str) -> Transcript | None:
    try:
        return load_bytes(data, SESSIONS / name)
    except LoadError:
        return None


@pytest.mark.parametrize("name", JSONL)
def test_load_appended_equals_a_full_reload_at_every_line(name: str) -> None:
    """Grown one line at a time, and from every line to the end in one append."""
    data = (SESSIONS / name).read_bytes()
    previous = None
    for cut in _cuts(data):
        want = _whole(data[:cut], name)
        if want is None:
            previous = None
            continue
        got, previous = load_appended(data[:cut], previous, SESSIONS / name)
        assert got == want
        rest, _ = load_appended(data, previous, SESSIONS / name)
        assert rest == load_bytes(data, SESSIONS / name)


def test_load_appended_parses_only_the_new_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    data = (SESSIONS / "claude-code.jsonl").read_bytes()
    half = _cuts(data)[len(_cuts(data)) // 2]
    _, previous = load_appended(data[:half], None, SESSIONS / "claude-code.jsonl")
    with parsed_lines(monkeypatch) as parsed:
        load_appended(data, previous, SESSIONS / "claude-code.jsonl")
    assert parsed and all(raw in data[half:] for raw in parsed)


@pytest.mark.parametrize("change", ["truncated", "rewritten", "bad line", "half line", "json"])
def test_load_appended_parses_whole_when_it_cannot_append(change: str) -> None:
    name = "claude-code.jsonl"
    data = (SESSIONS / name).read_bytes()
    cut = _cuts(data)[len(_cuts(data)) // 2]
    _, previous = load_appended(data[:cut], None, SESSIONS / name)
    if change == "truncated":
        grown = data[: _cuts(data)[2]]
    elif change == "rewritten":
        grown = b" " + data  # the bytes already read moved (still valid JSON lines)
    elif change == "bad line":
        grown = data[:cut] + b"{not json\n" + data[cut:]
    elif change == "half line":
        previous = replace(previous, data=previous.data[:-1])  # not ending at a newline
        grown = data
    else:
        previous = replace(previous, kind="json")
        grown = data
    if change == "bad line":
        with pytest.raises(LoadError):
            load_appended(grown, previous, SESSIONS / name)
        return
    got, source = load_appended(grown, previous, SESSIONS / name)
    assert got == load_bytes(grown, SESSIONS / name)
    assert source.data == grown
