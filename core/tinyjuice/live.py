"""The live context: what the agent sends on its next call, apart from its history.

After a compaction an append-only log (Claude Code, Codex, Hermes' archived rows)
still holds every earlier turn; the agent itself continues from the reset (see the
contract in :mod:`tinyjuice.model`). :func:`live_view` is that live context as a
transcript of its own, which compaction and the inspector work on; :func:`with_history`
puts the history back in front of a compacted live context, so a commit in place
keeps every earlier line of the file as it was.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from tinyjuice.model import CompactionEvent, Message, Transcript

__all__ = ["LiveSplit", "live_split", "live_view", "with_history"]


@dataclass(frozen=True, slots=True)
class LiveSplit:
    """A transcript cut at its last reset: ``history`` + ``live`` is the whole file."""

    whole: Transcript
    live: Transcript
    #: Index (in ``whole``) of the live context's first message.
    start: int

    @property
    def history(self) -> tuple[Message, ...]:
        return self.whole.messages[: self.start]


def _shifted(ev: CompactionEvent, delta: int) -> CompactionEvent:
    summary = ev.summary_index
    return replace(
        ev,
        message_index=ev.message_index + delta,
        summary_index=None if summary is None else summary + delta,
    )


def _reindexed(m: Message, index: int) -> Message:
    if m.meta.original_index == index:
        return m
    return replace(m, meta=replace(m.meta, original_index=index))


def live_view(transcript: Transcript, previous: LiveSplit | None = None) -> Transcript:
    """The live context as its own transcript (``transcript`` itself when nothing reset it).

    Messages are ``transcript.messages[live_start:]`` with ``meta.original_index``
    renumbered from 0; usage measured at a live message and compaction events from
    the reset on are kept, re-indexed; system prompt, tools, model, window, sidechains
    and ``extra`` are the transcript's (they are sent, or describe the session).
    ``previous`` (the split of the file before it grew, at the same reset) lends its
    renumbered messages for the messages both hold (the same objects).
    """
    start = transcript.live_start
    if start == 0:
        return transcript
    msgs = transcript.messages[start:]
    reuse: tuple[Message, ...] = ()
    if previous is not None and previous.start == start:
        old = previous.whole.messages[start:]
        k = min(len(old), len(msgs))
        k = next((i for i in range(k) if old[i] is not msgs[i]), k)
        reuse = previous.live.messages[:k]
    messages = reuse + tuple(_reindexed(msgs[i], i) for i in range(len(reuse), len(msgs)))
    usage = tuple(
        replace(u, message_index=u.message_index - start)
        for u in transcript.usage
        if u.message_index is not None and u.message_index >= start
    )
    events = tuple(
        _shifted(ev, -start)
        for ev in transcript.compactions
        if ev.message_index >= start and (ev.summary_index is None or ev.summary_index >= start)
    )
    return replace(transcript, messages=messages, usage=usage, compactions=events)


def live_split(
    transcript: Transcript, *, whole_file: bool = False, previous: LiveSplit | None = None
) -> LiveSplit:
    """The transcript cut at its last reset; ``whole_file`` keeps it whole (start 0).
    ``previous``: the split before the file grew (see :func:`live_view`)."""
    if whole_file:
        return LiveSplit(transcript, transcript, 0)
    start = transcript.live_start
    return LiveSplit(transcript, live_view(transcript, previous), start)


def with_history(split: LiveSplit, compacted: Transcript) -> Transcript:
    """``compacted`` (a compaction of ``split.live``) with the history put back before it.

    The history's messages, usage and compaction events are the original file's,
    untouched; the compacted part's indices are shifted after them. Nothing before the
    reset is lost or changed.
    """
    start = split.start
    if start == 0:
        return compacted
    whole = split.whole
    head_events = tuple(ev for ev in whole.compactions if ev.message_index < start)
    moved_events = tuple(_shifted(ev, start) for ev in compacted.compactions)
    reset = whole.reset_event
    if reset is not None and not any(
        ev.resets_context and ev.message_index == start for ev in moved_events
    ):
        # The reset's summary went into the new summary: the reset still starts here.
        head_events += (replace(reset, message_index=start, summary_index=None),)
    head_usage = tuple(
        u for u in whole.usage if u.message_index is not None and u.message_index < start
    )
    moved_usage = tuple(
        replace(u, message_index=u.message_index + start)
        for u in compacted.usage
        if u.message_index is not None
    )
    return replace(
        compacted,
        messages=split.history + compacted.messages,
        compactions=head_events + moved_events,
        usage=head_usage + moved_usage,
    )
