"""Following a transcript an agent is still writing, like ``tail -f``.

:class:`FileTail` reads only what was appended since the last poll (from a byte
offset), holds a half-written last line back until its newline arrives, and notices a
file that was truncated or replaced (another inode, or different bytes before the
offset) so the caller reloads it whole. A JSON document (not JSON lines) cannot grow
by appending: any change to it is reported as a rewrite.

:func:`live_status` is what a live view shows: the live context, its share of the
window, and the next auto-compaction predicted under the agent's own policy (tokens
and turns left, from :func:`tinyjuice.explain.explain`).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from tinyjuice.formats import LoadOptions, Source, load_appended
from tinyjuice.model import Transcript
from tinyjuice.policies import UsageSeries, extend_usage_series, usage_series
from tinyjuice.tokens import (
    TokenCounter,
    TranscriptTokens,
    count_transcript,
    default_counter,
    extend_tokens,
)

__all__ = ["Change", "ChangeKind", "FileTail", "FollowedFile", "LiveStatus", "live_status"]

#: Bytes before the offset compared on each poll to notice a rewrite in place.
_PROBE = 64


class ChangeKind(StrEnum):
    #: New complete lines at the end (``Change.data`` holds the whole file so far).
    APPENDED = "appended"
    #: Shorter than what was read: reload from the start.
    TRUNCATED = "truncated"
    #: Another file at the path, or the bytes already read changed: reload.
    REPLACED = "replaced"
    #: The file is gone (deleted or being renamed into place).
    MISSING = "missing"


@dataclass(frozen=True, slots=True)
class Change:
    kind: ChangeKind
    #: Every complete byte read so far (the whole file for a reload).
    data: bytes = b""
    #: How many bytes this poll read from the file.
    read: int = 0
    #: Bytes of a half-written last line held back.
    pending: int = 0
    #: The sha256 (hex) of ``data``, kept up to date as the file grows (only the new
    #: bytes are hashed).
    sha256: str = ""


class FileTail:
    """Incremental reads of a growing file; ``data`` is everything complete so far."""

    def __init__(self, path: str | Path, data: bytes | None = None) -> None:
        """Start after ``data`` (the bytes already loaded), or read the file now."""
        self.path = Path(path)
        st = self.path.stat()
        self._identity = (st.st_dev, st.st_ino)
        if data is None:
            data = self.path.read_bytes()
        self.jsonl = _looks_like_jsonl(data)
        # What was loaded counts as read (it parsed); later polls hold partial lines back.
        self.data = data
        self.pending = 0
        # The running digest of ``data`` (made on first use, by whoever polls): an append
        # hashes only its own bytes.
        self._hash: Any = None
        self._size = st.st_size
        self._mtime_ns = st.st_mtime_ns
        #: A truncation or replacement seen while the JSON-lines file held no complete
        #: line yet (caught mid-rewrite): said with the first lines written after it.
        self._unsaid: ChangeKind | None = None

    @staticmethod
    def _split(data: bytes) -> tuple[bytes, int]:
        """(complete lines, bytes of a trailing half-written line)."""
        end = data.rfind(b"\n") + 1
        return data[:end], len(data) - end

    def changed(self) -> bool:
        """Whether :meth:`poll` may find something (a ``stat``: nothing is read)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return True
        return st.st_size != self._size or st.st_mtime_ns != self._mtime_ns

    def poll(self) -> Change | None:
        """What changed since the last poll (None: nothing, or only a partial line)."""
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return Change(ChangeKind.MISSING)
        if st.st_size == self._size and st.st_mtime_ns == self._mtime_ns:
            return None
        self._size, self._mtime_ns = st.st_size, st.st_mtime_ns
        if (st.st_dev, st.st_ino) != self._identity:
            return self._reload(ChangeKind.REPLACED, st)
        offset = len(self.data)
        if st.st_size < offset:
            return self._reload(ChangeKind.TRUNCATED, st)
        if not self.jsonl:
            return self._reload(ChangeKind.REPLACED, st)
        start = max(0, offset - _PROBE)
        with self.path.open("rb") as fh:
            fh.seek(start)
            chunk = fh.read()
        if chunk[: offset - start] != self.data[start:offset]:
            return self._reload(ChangeKind.REPLACED, st)
        new = chunk[offset - start :]
        end = new.rfind(b"\n") + 1
        self.pending = len(new) - end
        if end == 0:
            return None  # only a half-written line so far
        digest = self._digest()
        digest.update(new[:end])
        self.data += new[:end]
        kind, self._unsaid = self._unsaid or ChangeKind.APPENDED, None
        return Change(kind, self.data, len(new), self.pending, digest.copy().hexdigest())

    def _reload(self, kind: ChangeKind, st: os.stat_result) -> Change | None:
        data = self.path.read_bytes()
        self._identity = (st.st_dev, st.st_ino)
        if self.jsonl and b"\n" not in data:
            # Emptied and not yet written again: nothing to load, and its shape cannot be
            # told from nothing. What follows is read as appended, and said as ``kind``.
            self.data, self.pending, self._hash = b"", len(data), None
            self._unsaid = kind
            return None
        self._unsaid = None
        self.jsonl = _looks_like_jsonl(data)
        self.data, self.pending = self._split(data) if self.jsonl else (data, 0)
        self._hash = None
        return Change(kind, self.data, len(data), self.pending, self.sha256)

    def _digest(self) -> Any:
        """The running sha256 of ``data``."""
        if self._hash is None:
            self._hash = hashlib.sha256(self.data)
        return self._hash

    @property
    def sha256(self) -> str:
        """The sha256 (hex) of ``data``."""
        return str(self._digest().copy().hexdigest())


def _looks_like_jsonl(data: bytes) -> bool:
    """Several lines, each starting a JSON object: a file that grows by appending."""
    first = data.lstrip()[:1]
    if first != b"{":
        return False
    newline = data.find(b"\n")
    return newline != -1 and data[newline + 1 :].lstrip()[:1] in (b"{", b"")


@dataclass(frozen=True, slots=True)
class LiveStatus:
    """A live session's context now, and when the agent's policy will compact it."""

    messages: int
    live_tokens: int
    context_window: int
    threshold_tokens: int
    #: Tokens left before the threshold (negative: over it, fires on the next call).
    headroom_tokens: int
    #: Assistant turns until it fires at the recent growth rate (None: not growing).
    turns_left: int | None
    policy: str

    @property
    def percent(self) -> float:
        return 100.0 * self.live_tokens / self.context_window if self.context_window else 0.0

    @property
    def threshold_percent(self) -> float:
        return 100.0 * self.threshold_tokens / self.context_window if self.context_window else 0.0

    def prediction(self) -> str:
        """One short phrase: "compaction in ~12k tokens (~4 turns)"."""
        if self.headroom_tokens <= 0:
            return "compaction due on the next call"
        text = f"compaction in {_short(self.headroom_tokens)} tokens"
        if self.turns_left is not None:
            text += f" (~{self.turns_left} turn{'s' if self.turns_left != 1 else ''})"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": self.messages,
            "live_tokens": self.live_tokens,
            "context_window": self.context_window,
            "percent": round(self.percent, 1),
            "threshold_tokens": self.threshold_tokens,
            "headroom_tokens": self.headroom_tokens,
            "turns_to_compaction": self.turns_left,
            "policy": self.policy,
        }


def _short(n: int) -> str:
    return f"{n / 1000:.1f}k" if n >= 1000 else str(n)


def live_status(
    transcript: Transcript,
    tokens: TranscriptTokens,
    *,
    context_window: int | None = None,
    series: UsageSeries | None = None,
) -> LiveStatus:
    """The live context of ``transcript`` and the next compaction under its agent's policy.

    ``series`` is ``usage_series(transcript, tokens)`` when the caller keeps it up to
    date (:func:`~tinyjuice.policies.extend_usage_series`, as :class:`FollowedFile`
    does).
    """
    from tinyjuice.explain import explain

    ex = explain(transcript, tokens=tokens, context_window=context_window, series=series)
    cur = ex.current
    return LiveStatus(
        messages=len(transcript.messages),
        live_tokens=cur.tokens,
        context_window=ex.window.context_window,
        threshold_tokens=cur.threshold_tokens,
        headroom_tokens=cur.headroom_tokens,
        turns_left=cur.headroom_turns,
        policy=ex.policy.name.value,
    )


class FollowedFile:
    """A followed file's transcript, token counts and usage series, each extended by
    what was appended (the reader's lines, :func:`~tinyjuice.tokens.extend_tokens`,
    :func:`~tinyjuice.policies.extend_usage_series`): after any sequence of reads they
    equal a fresh load and count of the same bytes. Not thread-safe."""

    def __init__(
        self,
        path: str | Path,
        format: str | None = None,
        *,
        options: LoadOptions | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.path = Path(path)
        self.format = format
        self.options = options or LoadOptions()
        self.counter = counter or default_counter()
        self.source: Source | None = None
        self.transcript: Transcript | None = None
        self.tokens: TranscriptTokens | None = None
        self.series: UsageSeries | None = None

    def read(self, data: bytes) -> Transcript:
        """Load ``data`` (everything read so far: see :class:`FileTail`)."""
        transcript, source = load_appended(
            data, self.source, self.path, self.format, options=self.options
        )
        before, before_tokens, series = self.transcript, self.tokens, self.series
        if before is None or before_tokens is None or series is None:
            tokens = count_transcript(transcript, self.counter)
            series = usage_series(transcript, tokens)
        else:
            tokens = extend_tokens(before_tokens, before, transcript, self.counter)
            series = extend_usage_series(series, before, before_tokens, transcript, tokens)
        self.source, self.transcript, self.tokens, self.series = source, transcript, tokens, series
        return transcript

    def status(self, context_window: int | None = None) -> LiveStatus:
        """The live status of what was read last."""
        if self.transcript is None or self.tokens is None:
            raise ValueError("nothing read yet")
        return live_status(
            self.transcript, self.tokens, context_window=context_window, series=self.series
        )
