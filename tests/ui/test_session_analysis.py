"""A session built from the one before it keeps its per-message analysis only while the
two share message objects: a file read whole again starts afresh (the old results
would keep every old message alive, and could never be found again)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tinyjuice.formats import load
from tinyjuice.model import Message, Role, TextPart, Transcript
from tinyjuice.pipeline import compress
from tinyjuice.tokens import RoughCounter, count_transcript
from tjui.session import InspectorSession

_SAMPLE = Path(__file__).parents[2] / "sessions" / "claude-code.jsonl"


def _session(t: Transcript, previous: InspectorSession | None = None) -> InspectorSession:
    counter = RoughCounter()
    return InspectorSession.build(t, count_transcript(t, counter), counter, previous=previous)


def _previewed() -> InspectorSession:
    s = _session(load(_SAMPLE))
    compress(
        s.transcript,
        s.compaction_options(),
        tokens=s.tokens,
        counter=s.counter,
        index=s.index,
        analysis=s.analysis,
    )
    assert s.analysis.redacted_fresh  # it holds results worth keeping
    return s


def test_a_grown_transcript_keeps_the_analysis() -> None:
    s = _previewed()
    grown = (*s.transcript.messages, Message(Role.USER, (TextPart("and now?"),)))
    assert _session(replace(s.transcript, messages=grown), s).analysis is s.analysis


def test_a_newest_message_merged_with_the_append_keeps_the_analysis() -> None:
    s = _previewed()
    *kept, last = s.transcript.messages
    merged = replace(last, parts=(*last.parts, TextPart("more of the same reply")))
    again = _session(replace(s.transcript, messages=(*kept, merged)), s)
    assert again.analysis is s.analysis


def test_a_live_part_that_moved_on_keeps_the_analysis() -> None:
    s = _previewed()
    later = s.transcript.messages[5:]
    assert _session(replace(s.transcript, messages=later), s).analysis is s.analysis


def test_a_file_read_whole_again_starts_afresh() -> None:
    s = _previewed()
    again = _session(load(_SAMPLE), s)
    assert again.analysis is not s.analysis
    assert again.analysis.redacted_fresh == 0
