"""conversion_losses names exactly what a writable format drops: checked against real writes."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

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
    MediaPart,
    Message,
    MessageMeta,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
)
from tinyjuice.pipeline import compress
from tinyjuice.report import CompactionOptions

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


def _assert_losses_match_a_real_write(t: Transcript, fmt: str) -> list[ConversionLoss]:
    losses = conversion_losses(t, fmt)
    back = load_bytes(dumps(t, fmt), "converted", fmt)
    reported = {loss.kind: loss.count for loss in losses}
    assert set(reported) <= set(MEASURES)
    for kind, measure in MEASURES.items():
        before, after = measure(t), measure(back)
        if kind in reported:
            assert before - after == reported[kind], (kind, before, after)
        else:
            assert after >= before, f"{kind}: {before} -> {after} dropped without a word"
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
        "sidechain",
    ]


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
