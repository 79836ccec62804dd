"""The counters' fast paths give exactly what the general code gives.

The rough count of a whole transcript (the decisive planner's first look at every
message) is summed in one pass; a one-text message is counted without its list of
texts; whether a count includes an image is answered without a tuple per message.
"""

from __future__ import annotations

import pytest

from tinyjuice import tokens as tokens_mod
from tinyjuice.model import (
    MediaPart,
    Message,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
)
from tinyjuice.tokens import CountKind, RoughCounter, count_transcript, counted_kind, message_tokens


class _PlainRough(RoughCounter):
    """Not exactly RoughCounter: counted through the general path."""


def _odd_transcript() -> Transcript:
    msgs = (
        Message(Role.SYSTEM, (TextPart("you are helpful"),)),
        Message(Role.USER, (TextPart(""), TextPart("two parts"))),
        Message(
            Role.ASSISTANT,
            (
                ThinkingPart("hidden", redacted=True),
                ThinkingPart("visible thought"),
                TextPart("answer"),
                MediaPart("image/png", 10),
            ),
            tool_calls=(ToolCall("c1", "bash", '{"command": "ls"}'), ToolCall("c2", "", "")),
            reasoning="because",
        ),
        Message(Role.TOOL, (TextPart("out" * 50),), tool_call_id="c1", tool_name="bash"),
        Message(Role.TOOL, (), tool_call_id="c2"),
        Message(Role.USER, (MediaPart("image/jpeg", 5),)),
    )
    return Transcript(
        messages=msgs,
        format="openai",
        system_prompt="system text",
        tools=({"name": "bash", "parameters": {}},),
    )


def test_rough_count_in_one_pass_equals_the_general_count(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    t = _odd_transcript()
    plain = count_transcript(t, _PlainRough())
    # The one-pass count never builds the list of texts for count_many.
    monkeypatch.setattr(RoughCounter, "count_many", None)
    fast = count_transcript(t, RoughCounter())
    assert fast == plain


def test_one_text_message_is_counted_without_its_list_of_texts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    counter = RoughCounter()
    t = _odd_transcript()
    expected = [message_tokens(m, counter) for m in t.messages]
    assert expected == list(count_transcript(t, counter).per_message)
    one_text = [i for i, m in enumerate(t.messages) if len(m.parts) == 1 and not m.tool_calls]

    def refuse(message: Message) -> list[str]:
        raise AssertionError("the list of texts was built for a one-text message")

    monkeypatch.setattr(tokens_mod, "_message_texts", refuse)
    for i in one_text:
        if type(t.messages[i].parts[0]) is TextPart:
            assert message_tokens(t.messages[i], counter) == expected[i]


def test_counted_kind_is_an_estimate_only_with_an_image() -> None:
    msgs = _odd_transcript().messages
    assert counted_kind(msgs, CountKind.EXACT) is CountKind.ESTIMATED
    no_media = [m for m in msgs if not m.media]
    assert counted_kind(no_media, CountKind.EXACT) is CountKind.EXACT
    assert counted_kind(msgs, CountKind.MEASURED) is CountKind.MEASURED


@pytest.mark.parametrize("call_id", [None, "", "call_1"])
def test_a_one_text_message_costs_its_text_and_fixed_overhead(call_id: str | None) -> None:
    counter = RoughCounter()
    msg = Message(Role.TOOL, (TextPart("some output " * 9),), tool_call_id=call_id)
    general = sum(counter.count(t) for t in tokens_mod._message_texts(msg))
    assert message_tokens(msg, counter) == general + tokens_mod._fixed_overhead(msg, counter)
