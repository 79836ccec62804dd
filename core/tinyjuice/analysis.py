"""Per-message work done once per transcript, reused by every compress() on it.

An interactive preview compresses the same transcript again and again — the boundary
moves, the focus or the profile changes — and most of each run redoes per-message work
whose result does not depend on any of those: the redaction of a message is the same
wherever the boundary falls. A :class:`TranscriptAnalysis` remembers it; pass the same
object to each ``compress(..., analysis=...)`` on one transcript (it holds no text of
its own beyond the results, and only for the messages it was asked about).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tinyjuice.digest import DigestMemo, OutcomeMemo
from tinyjuice.model import Message
from tinyjuice.redact import redact_messages, without_source_fields
from tinyjuice.summary.fallback import TextRedactor
from tinyjuice.tokens import TokenCounter, message_tokens

__all__ = ["TranscriptAnalysis"]


class TranscriptAnalysis:
    """Memoised per-message results, keyed by the message object itself.

    A message is recognised by identity (the object, kept alive with its result), so a
    result is never served for another message that merely reuses a freed id.
    """

    def __init__(self) -> None:
        self._redacted: dict[int, tuple[Message, Message]] = {}
        #: How many messages were redacted afresh, and answered from memory (for tests).
        self.redacted_fresh = 0
        self.redacted_reused = 0
        self._tokens: dict[int, tuple[Message, TokenCounter, int]] = {}
        #: Each failed digest with the original's error lines (pipeline._with_error_lines).
        self.error_lines: dict[int, tuple[Message, Message, Message]] = {}
        #: Each tool result's digest (tinyjuice.digest.digest_tool_results).
        self.digests: DigestMemo = {}
        #: Each tool result's outcome in the digest pass (tinyjuice.digest.OutcomeMemo).
        self.digest_outcomes: OutcomeMemo = {}
        self._derived: dict[int, tuple[Message, Message, Message]] = {}
        self._bare: dict[int, tuple[Message, Message]] = {}
        #: The last tokens_by_id: its two sequences, their lengths and the result.
        self._by_id: (
            tuple[Sequence[Message], Sequence[int], tuple[int, int], dict[int, int]] | None
        ) = None
        #: Text redaction of the fallback summary's items (a pure function, remembered).
        self.redact_text = TextRedactor()

    def redact_messages(self, messages: Sequence[Message]) -> tuple[list[Message], int]:
        """:func:`tinyjuice.redact.redact_messages`, scanning each message once ever."""
        memo = self._redacted
        if not memo:  # the first run: nothing to look up (a preview's middle is large)
            out, changed = redact_messages(messages)
            memo.update(zip(map(id, messages), zip(messages, out, strict=True), strict=True))
            self.redacted_fresh += len(messages)
            return out, changed
        out = list(messages)
        todo: list[int] = []
        for i, m in enumerate(messages):
            hit = memo.get(id(m))
            if hit is not None and hit[0] is m:
                out[i] = hit[1]
            else:
                todo.append(i)
        if todo:
            fresh, _ = redact_messages([messages[i] for i in todo])
            for i, r in zip(todo, fresh, strict=True):
                memo[id(messages[i])] = (messages[i], r)
                out[i] = r
        self.redacted_fresh += len(todo)
        self.redacted_reused += len(messages) - len(todo)
        changed = sum(1 for r, m in zip(out, messages, strict=True) if r is not m)
        return out, changed

    def without_source_fields(self, messages: Sequence[Message]) -> list[Message]:
        """:func:`tinyjuice.redact.without_source_fields`, remembered per message object:
        every run gets the same objects back, so the results remembered for them
        (redaction, digests) are found again."""
        memo = self._bare
        if not memo:  # the first run: nothing to look up (a preview's middle is large)
            out = without_source_fields(messages)
            memo.update(zip(map(id, messages), zip(messages, out, strict=True), strict=True))
            return out
        todo = [m for m in messages if (hit := memo.get(id(m))) is None or hit[0] is not m]
        for m, bare in zip(todo, without_source_fields(todo), strict=True):
            memo[id(m)] = (m, bare)
        return [memo[id(m)][1] for m in messages]

    def redact_derived(
        self, sources: Sequence[Message], derived: Sequence[Message]
    ) -> tuple[list[Message], int]:
        """:func:`tinyjuice.redact.redact_messages` of messages written from ``sources``
        (a digest of each), remembered per source.

        A digest is a new object on every run, but redaction is a pure function of the
        message's value: the stored result is reused when this run's digest of the same
        source equals the one redacted before (compared by value), so a result is never
        served for a different digest (another boundary can change a back-reference).
        """
        memo = self._derived
        out = list(derived)
        todo: list[int] = []
        for i, (src, m) in enumerate(zip(sources, derived, strict=True)):
            hit = memo.get(id(src))
            if hit is not None and hit[0] is src and (hit[1] is m or hit[1] == m):
                # Nothing redacted then: this run's own object, so it counts as unchanged.
                out[i] = m if hit[2] is hit[1] else hit[2]
            else:
                todo.append(i)
        if todo:
            fresh, _ = redact_messages([derived[i] for i in todo])
            for i, r in zip(todo, fresh, strict=True):
                memo[id(sources[i])] = (sources[i], derived[i], r)
                out[i] = r
        self.redacted_fresh += len(todo)
        self.redacted_reused += len(derived) - len(todo)
        changed = sum(1 for r, m in zip(out, derived, strict=True) if r is not m)
        return out, changed

    def message_tokens(self, message: Message, counter: TokenCounter) -> int:
        """:func:`tinyjuice.tokens.message_tokens`, remembered per message object and
        counter (the digests a run writes are the same objects on the next run)."""
        hit = self._tokens.get(id(message))
        if hit is not None and hit[0] is message and hit[1] is counter:
            return hit[2]
        n = message_tokens(message, counter)
        if message.meta.generated_by != "summary":
            # A summary is written afresh for each middle: kept, it would only pile up.
            self._tokens[id(message)] = (message, counter, n)
        return n

    def tokens_of(
        self, messages: Sequence[Message], counter: TokenCounter, known: Mapping[int, int]
    ) -> list[int]:
        """Each message's count: ``known[id(m)]`` when there, else :meth:`message_tokens`."""
        memo = self._tokens
        out: list[int] = []
        append = out.append
        for m in messages:
            k = id(m)
            n = known.get(k)
            if n is None:
                hit = memo.get(k)
                if hit is not None and hit[0] is m and hit[1] is counter:
                    n = hit[2]
                else:
                    n = self.message_tokens(m, counter)
            append(n)
        return out

    def tokens_by_id(
        self, messages: Sequence[Message], per_message: Sequence[int]
    ) -> dict[int, int]:
        """``{id(m): n for m, n in zip(messages, per_message)}``, remembered for the same
        two sequences (the same objects, unchanged in length); do not mutate the result."""
        kept = self._by_id
        if (
            kept is not None
            and kept[0] is messages
            and kept[1] is per_message
            and kept[2] == (len(messages), len(per_message))
        ):
            return kept[3]
        by_id = {id(m): n for m, n in zip(messages, per_message, strict=True)}
        self._by_id = (messages, per_message, (len(messages), len(per_message)), by_id)
        return by_id
