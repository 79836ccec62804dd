"""conversion_losses names exactly what a writable format drops: checked against real writes."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tinyjuice.formats import (
    WRITABLE_FORMATS,
    ConversionLoss,
    SaveError,
    conversion_losses,
    dumps,
    load,
    load_bytes,
    save,
)
from tinyjuice.formats.losses import _CARRIES
from tinyjuice.model import (
    CompactionEvent,
    MediaPart,
    Message,
    MessageMeta,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
    Trigger,
)
from tinyjuice.options import CompactionOptions
from tinyjuice.pipeline import compress

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
SAMPLES = sorted(json.loads((SESSIONS / "manifest.json").read_text())["files"])


def _thinking(t: Transcript) -> list[ThinkingPart]:
    return [p for m in t.messages for p in m.parts if isinstance(p, ThinkingPart)]


#: How much of each loss kind a transcript holds, measured independently of the module.
MEASURES: dict[str, Callable[[Transcript], int]] = {
    "media": lambda t: sum(len(m.media) for m in t.messages),
    "thinking_signature": lambda t: sum(1 for p in _thinking(t) if p.signature and not p.redacted),
    "redacted_thinking": lambda t: sum(1 for p in _thinking(t) if p.redacted),
    "tool_error_flag": lambda t: sum(
        1 for m in t.messages if m.role is Role.TOOL and m.meta.is_error
    ),
    "usage": lambda t: len(t.usage),
    "compaction_summary": lambda t: sum(1 for m in t.messages if m.meta.is_summary),
    "sidechain": lambda t: len(t.sidechains),
}


def _event_keys(t: Transcript) -> Counter[tuple[Any, ...]]:
    """Recorded compactions (not tinyjuice's own), by what a reader could give back."""
    keys: Counter[tuple[Any, ...]] = Counter()
    for e in t.compactions:
        if e.extra.get("generated_by") == "tinyjuice":
            continue
        i = e.summary_index
        text = t.messages[i].text if i is not None and i < len(t.messages) else None
        keys[(e.trigger, e.pre_tokens, e.post_tokens, text)] += 1
    return keys


def _records_lost(t: Transcript, back: Transcript) -> int:
    """Compaction records of ``t`` that do not come back from the written file as they were."""
    before = _event_keys(t)
    return sum(before.values()) - sum((before & _event_keys(back)).values())


def _thinking_blocks(value: Any) -> Iterator[dict[str, Any]]:
    if isinstance(value, dict):
        if value.get("type") == "thinking":
            yield value
        for v in value.values():
            yield from _thinking_blocks(v)
    elif isinstance(value, list):
        for v in value:
            yield from _thinking_blocks(v)


def _unsigned_written(t: Transcript, data: bytes) -> int:
    """Unsigned thinking blocks an Anthropic write adds (an Anthropic source's own aside)."""
    written = sum(1 for b in _thinking_blocks(orjson.loads(data)) if not b.get("signature"))
    own = 0
    if t.format == "anthropic":
        own = sum(1 for p in _thinking(t) if not p.redacted and not p.signature)
    return written - own


def _assert_losses_match_a_real_write(t: Transcript, fmt: str) -> list[ConversionLoss]:
    losses = conversion_losses(t, fmt)
    data = dumps(t, fmt)
    back = load_bytes(data, "converted", fmt)
    reported = {loss.kind: loss.count for loss in losses}
    assert set(reported) <= {*MEASURES, "compaction_record", "unsigned_thinking"}
    for kind, measure in MEASURES.items():
        before, after = measure(t), measure(back)
        if kind in reported:
            assert before - after == reported[kind], (kind, before, after)
        else:
            assert after >= before, f"{kind}: {before} -> {after} dropped without a word"
    # Compaction records: compared event by event (a reader rebuilds them from summaries).
    assert reported.get("compaction_record", 0) == _records_lost(t, back)
    # The caveat counts the thinking blocks the Anthropic writer emits without a signature.
    unsigned = _unsigned_written(t, data) if fmt == "anthropic" else 0
    assert reported.get("unsigned_thinking", 0) == unsigned
    return losses


def test_every_writable_format_has_a_capability_entry() -> None:
    assert set(_CARRIES) == set(WRITABLE_FORMATS)


@pytest.mark.parametrize("fmt", WRITABLE_FORMATS)
@pytest.mark.parametrize("name", SAMPLES)
def test_losses_are_exactly_what_the_writer_drops(name: str, fmt: str) -> None:
    _assert_losses_match_a_real_write(load(SESSIONS / name), fmt)


def test_sharegpt_reports_images() -> None:
    t = load(SESSIONS / "anthropic-messages.json")
    messages = [str(loss) for loss in conversion_losses(t, "sharegpt")]
    assert "1 image (sharegpt has no media)" in messages
    assert conversion_losses(t, "anthropic") == []


def test_claude_code_to_openai_lists_every_kind_it_drops() -> None:
    t = load(SESSIONS / "claude-code.jsonl")
    kinds = [loss.kind for loss in _assert_losses_match_a_real_write(t, "openai")]
    assert kinds == [
        "thinking_signature",
        "tool_error_flag",
        "usage",
        "compaction_summary",
        "compaction_record",
        "sidechain",
    ]


def test_compactions_say_exactly_what_is_lost() -> None:
    # Claude Code marks its summaries with isCompactSummary, not a text prefix: written
    # as OpenAI they become ordinary messages, and the compactions (auto at 167,000
    # tokens, manual at 98,000) are no longer recorded at all.
    t = load(SESSIONS / "claude-code.jsonl")
    said = {loss.kind: str(loss) for loss in conversion_losses(t, "openai")}
    assert said["compaction_summary"].startswith("2 compaction summary markers (openai tells")
    assert said["compaction_record"] == (
        "2 compaction records (2 lost entirely, trigger and token counts too; openai records"
        " a compaction only as a summary message starting with the compaction prefix)"
    )
    back = load_bytes(dumps(t, "openai"), "x.json", "openai")
    assert back.compactions == ()
    # A Hermes summary is told by its prefix: every writable format's reader finds it
    # again, as the same compaction (trigger unknown, no token counts): nothing is lost.
    demo = load(SESSIONS / "demo.json")
    for fmt in WRITABLE_FORMATS:
        kinds = {loss.kind for loss in conversion_losses(demo, fmt)}
        assert not kinds & {"compaction_summary", "compaction_record"}, fmt
        again = load_bytes(dumps(demo, fmt), "x", fmt)
        assert [(e.trigger, e.pre_tokens) for e in again.compactions] == [
            (e.trigger, e.pre_tokens) for e in demo.compactions
        ], fmt


def _with_summary(*events: CompactionEvent) -> Transcript:
    return Transcript(
        format="openai",
        messages=(
            Message(Role.USER, (TextPart("[CONTEXT COMPACTION — REFERENCE ONLY] Earlier: x."),)),
            Message(Role.ASSISTANT, (TextPart("ok"),)),
        ),
        compactions=events,
    )


@pytest.mark.parametrize("fmt", WRITABLE_FORMATS)
def test_compaction_record_details_and_events_without_a_summary(fmt: str) -> None:
    detailed = CompactionEvent(0, Trigger.AUTO, pre_tokens=9000, summary_index=0)
    t = _with_summary(detailed, CompactionEvent(1, Trigger.UNKNOWN))
    losses = _assert_losses_match_a_real_write(t, fmt)
    (record,) = [loss for loss in losses if loss.kind == "compaction_record"]
    assert record.count == 2
    assert record.message.startswith(
        "2 compaction records (1 lost entirely; the trigger and token counts of 1; "
    )
    # A bare summary's event comes back as it was: nothing to report.
    plain = _with_summary(CompactionEvent(0, Trigger.UNKNOWN, summary_index=0))
    assert _assert_losses_match_a_real_write(plain, fmt) == []


def test_tinyjuice_own_compaction_is_not_reported(tmp_path: Path) -> None:
    # Its figures are in the compaction report; no writable format stores them.
    t = load(SESSIONS / "anthropic-messages.json")
    result = compress(t, CompactionOptions(keep_last=2, force=True))
    assert result.transcript.compactions[-1].extra.get("generated_by") == "tinyjuice"
    for fmt in WRITABLE_FORMATS:
        kinds = {loss.kind for loss in conversion_losses(result.transcript, fmt)}
        assert "compaction_record" not in kinds, fmt


def test_reasoning_to_anthropic_is_a_caveat_with_its_count() -> None:
    t = load(SESSIONS / "demo.json")
    losses = _assert_losses_match_a_real_write(t, "anthropic")
    assert [str(loss) for loss in losses] == [
        "API replay of 10 reasoning blocks: written as unsigned thinking (the reasoning text"
        " is kept; the API needs a signature to accept them back)"
    ]
    # Reasoning survives the trip; only OpenAI-shaped targets need no signature at all.
    back = load_bytes(dumps(t, "anthropic"), "x.json", "anthropic")
    assert sum(1 for m in back.messages for p in m.thinking if not p.signature) == 10
    for fmt in ("openai", "hermes", "sharegpt"):
        assert "unsigned_thinking" not in {loss.kind for loss in conversion_losses(t, fmt)}
    # Signed thinking (Claude Code, or Anthropic itself) raises no caveat.
    assert "unsigned_thinking" not in {
        loss.kind for loss in conversion_losses(load(SESSIONS / "claude-code.jsonl"), "anthropic")
    }


@pytest.mark.parametrize("name", SAMPLES)
def test_writing_a_sample_in_its_own_format_loses_nothing(name: str) -> None:
    t = load(SESSIONS / name)
    if t.format in WRITABLE_FORMATS:
        assert conversion_losses(t, t.format) == []


def _rich() -> Transcript:
    """A transcript with every droppable kind that a hand-built one can hold."""
    image = MediaPart(media_type="image/png", byte_size=3, data="data:image/png;base64,AAAA")
    pdf = MediaPart(
        media_type="application/pdf", byte_size=3, data="data:application/pdf;base64,AAAA"
    )
    return Transcript(
        format="anthropic",
        messages=(
            Message(Role.USER, (TextPart("look"), image, pdf)),
            Message(
                Role.ASSISTANT,
                (
                    ThinkingPart("hmm", signature="sig-1"),
                    ThinkingPart("", redacted=True, extra={"data": "enc"}),
                    TextPart("reading"),
                ),
                tool_calls=(ToolCall("c1", "read", "{}"),),
            ),
            Message(
                Role.TOOL,
                (TextPart("boom"),),
                tool_call_id="c1",
                meta=MessageMeta(is_error=True),
            ),
            Message(Role.ASSISTANT, (TextPart("done"),)),
        ),
    )


@pytest.mark.parametrize("fmt", WRITABLE_FORMATS)
def test_hand_built_transcript_losses_match_a_real_write(fmt: str) -> None:
    _assert_losses_match_a_real_write(_rich(), fmt)


def test_hand_built_transcript_messages() -> None:
    assert [str(loss) for loss in conversion_losses(_rich(), "sharegpt")] == [
        "2 media attachments (sharegpt has no media)",
        "1 thinking signature (sharegpt has no field for them; the reasoning text is kept)",
        "1 redacted thinking block (sharegpt cannot carry encrypted reasoning)",
        "1 tool-error flag (sharegpt has no is_error field; the error output is kept)",
    ]
    assert [loss.kind for loss in conversion_losses(_rich(), "openai")] == [
        "thinking_signature",
        "redacted_thinking",
        "tool_error_flag",
    ]
    assert conversion_losses(_rich(), "anthropic") == []


def test_compress_to_sharegpt_is_not_silent(tmp_path: Path) -> None:
    # The reviewer's case: tjui compress anthropic-messages.json --keep-last 2
    # --to sharegpt -o x.jsonl dropped the image without a word and wrote indented JSON.
    t = load(SESSIONS / "anthropic-messages.json")
    result = compress(t, CompactionOptions(keep_last=2, force=True))
    assert sum(len(m.media) for m in result.transcript.messages) == 1
    assert "1 image (sharegpt has no media)" in [
        str(loss) for loss in conversion_losses(result.transcript, "sharegpt")
    ]
    out = tmp_path / "x.jsonl"
    save(result.transcript, out, "sharegpt")
    data = out.read_bytes()
    assert data.count(b"\n") == 1 and data.endswith(b"\n")
    assert load(out).format == "sharegpt"


def test_unwritable_format_is_a_save_error() -> None:
    t = load(SESSIONS / "openai-chat.json")
    with pytest.raises(SaveError, match="cannot write format 'codex'; writable formats: "):
        conversion_losses(t, "codex")
