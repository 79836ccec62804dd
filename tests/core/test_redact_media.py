"""An image's remote URL and its source record are redacted like text; its encoded bytes
are never scanned."""

from __future__ import annotations

from dataclasses import replace

from test_redact import GITHUB, GOOGLE

from tinyjuice.formats import dumps
from tinyjuice.model import MediaPart, Message, Role, TextPart, ToolCall, Transcript
from tinyjuice.options import CompactionOptions, Profile
from tinyjuice.pipeline import compress
from tinyjuice.redact import redact_message, redact_messages
from tinyjuice.tokens import RoughCounter


def _image(data: str, source: str = "url", **extra: str) -> Message:
    return Message(Role.TOOL, (MediaPart("image/png", 0, source, data, extra),), tool_call_id="c")  # type: ignore[arg-type]


def _both(message: Message) -> Message:
    """redact_message's answer, checked against the batch's."""
    one = redact_message(message)
    (batch,), changed = redact_messages([message])
    assert batch == one
    assert changed == (one is not message)
    return one


def test_a_signed_image_url_loses_its_key() -> None:
    url = f"https://maps.example.com/static.png?center=0,0&key={GOOGLE}"
    part = _both(_image(url)).parts[0]
    assert isinstance(part, MediaPart)
    assert part.data is not None and GOOGLE not in part.data
    assert part.data.startswith("https://maps.example.com/static.png?center=0,0&key=")


def test_an_image_source_record_is_redacted() -> None:
    part = _both(_image("https://cdn.example/a.png", note=f"fetched with {GITHUB}")).parts[0]
    assert isinstance(part, MediaPart)
    assert GITHUB not in str(part.extra)
    assert part.data == "https://cdn.example/a.png"


def test_encoded_image_bytes_are_never_scanned() -> None:
    # Bytes that happen to spell a key are left alone: redacting them breaks the image.
    for message in (
        _image(f"data:image/png;base64,{GITHUB}", source="url"),
        _image(f"DATA:image/png;base64,{GITHUB}", source="url"),
        _image(f"{GITHUB}AAAA", source="base64"),
    ):
        assert _both(message) is message


def test_a_clean_image_is_the_same_object() -> None:
    message = _image("https://cdn.example/plain.png", detail="high")
    assert _both(message) is message


def test_the_rules_profile_writes_no_image_url_secret() -> None:
    url = f"https://maps.example.com/static.png?key={GOOGLE}"
    messages = [Message(Role.USER, (TextPart("look at the map"),))]
    for i in range(12):
        shot = (TextPart(f"step {i}"), MediaPart("image/png", 0, "url", url))
        messages += [
            Message(Role.ASSISTANT, shot, (ToolCall(f"c{i}", "shot", "{}"),)),
            Message(Role.TOOL, (TextPart(f"shot {i} " + "x" * 400),), tool_call_id=f"c{i}"),
            Message(Role.USER, (TextPart(f"next {i}"),)),
        ]
    t = Transcript(messages=tuple(messages), format="openai")
    options = CompactionOptions(
        force=True, keep_last=3, profile=Profile.RULES, reduce_media=False, context_window=8_000
    )
    result = compress(t, options, counter=RoughCounter())
    # The verbatim tail is the original's own (docs/compaction.md, "What redaction covers").
    tail = {id(m) for m in t.messages[result.report.boundary_end :]}
    rewritten = tuple(m for m in result.transcript.messages if id(m) not in tail)
    assert sum(isinstance(p, MediaPart) for m in rewritten for p in m.parts) == 10
    assert GOOGLE not in dumps(replace(result.transcript, messages=rewritten), "openai").decode()
