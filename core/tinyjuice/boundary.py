"""Where compaction may cut a conversation, and how the pieces are put back together.

Details: docs/compaction.md (`tinyjuice.boundary`).
"""

from __future__ import annotations

from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum
from itertools import pairwise

from tinyjuice.model import MediaPart, Message, MessageMeta, Role, TextPart
from tinyjuice.tokens import TranscriptTokens

#: The snap reason of a requested boundary that was already legal.
AS_REQUESTED = "legal as requested"

__all__ = [
    "AS_REQUESTED",
    "BRIDGE_RESULT_TEXT",
    "BoundaryIndex",
    "OrphanCallPolicy",
    "PartialSplit",
    "PreviewCounts",
    "SanitizeResult",
    "SeamPolicy",
    "Snap",
    "SnapDirection",
    "align_end_backward",
    "align_start_forward",
    "anchor_tail_start",
    "is_legal_boundary",
    "is_visible_assistant_message",
    "latest_real_user_index",
    "latest_visible_assistant_index",
    "legal_boundaries",
    "preview_boundary",
    "protected_head_end",
    "rejoin",
    "sanitize_tool_pairs",
    "select_tail_by_budget",
    "snap_boundary",
    "split_for_partial_compaction",
    "tail_floor",
]

#: Text of the stub result that bridges a retained call whose result was not retained.
BRIDGE_RESULT_TEXT = "[result not retained after compaction]"

#: ``meta.generated_by`` on every message this module creates.
_BRIDGE = "bridge"
#: Generated assistant messages that are not a rendered answer.
_NOT_AN_ANSWER = frozenset({"summary", "bridge"})
_SYSTEM_ROLES = (Role.SYSTEM, Role.DEVELOPER)
_SEAM_ROLES = (Role.USER, Role.ASSISTANT)

_BRIDGE_TEXT = {
    Role.USER: "[Earlier turns were compacted; continuing from the summary.]",
    Role.ASSISTANT: "[Noted the compacted context; continuing.]",
}


class SnapDirection(StrEnum):
    NEAREST = "nearest"
    BACKWARD = "backward"
    FORWARD = "forward"


class OrphanCallPolicy(StrEnum):
    """What :func:`sanitize_tool_pairs` does with a call whose result was not retained."""

    #: Remove the call from its message; drop the message when nothing else is left.
    STRIP = "strip"
    #: Keep the call and add a stub result (:data:`BRIDGE_RESULT_TEXT`).
    BRIDGE = "bridge"


class SeamPolicy(StrEnum):
    """How :func:`rejoin` resolves a seam no role choice can fix."""

    #: Insert a one-line bridge message of the missing role.
    BRIDGE = "bridge"
    #: Fold the single inserted message's text into the head's last message.
    MERGE = "merge"


# --------------------------------------------------------------------------- predicates


def is_visible_assistant_message(message: Message) -> bool:
    """An assistant message a user saw as an answer: non-empty visible text, not a summary.

    A message holding only tool calls (or only reasoning) is not visible; neither are
    generated summaries and bridges.
    """
    if message.role is not Role.ASSISTANT or message.meta.is_summary:
        return False
    if message.meta.generated_by in _NOT_AN_ANSWER:
        return False
    return any(isinstance(p, TextPart) and p.text.strip() for p in message.parts)


def latest_real_user_index(messages: Sequence[Message]) -> int | None:
    """Index of the latest real user message (summaries, injected context skipped)."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].is_real_user:
            return i
    return None


def latest_visible_assistant_index(messages: Sequence[Message]) -> int | None:
    """Index of the latest assistant message with visible text, else ``None``."""
    for i in range(len(messages) - 1, -1, -1):
        if is_visible_assistant_message(messages[i]):
            return i
    return None


def tail_floor(protect_last_n: int = 20) -> int:
    """Hermes' tail message floor: ``max(3, min(protect_last_n, 8))``."""
    return max(3, min(protect_last_n, 8))


# --------------------------------------------------------------------------- the index


@dataclass(frozen=True, slots=True)
class Snap:
    """Where a requested boundary landed, and a sentence saying why."""

    index: int
    requested: int
    moved: bool
    reason: str


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _walk(points: Sequence[int], here: int, delta: int) -> tuple[int, int, str]:
    """Move ``delta`` entries of the sorted ``points`` from ``here`` (clamped at the ends).

    Returns the point landed on, how many entries were actually stepped over, and
    "back" or "forward". ``delta`` is non-zero.
    """
    if delta < 0:
        base = bisect_left(points, here)
        pos = max(base + delta, 0)
        return points[pos], base - pos, "back"
    base = bisect_right(points, here) - 1
    pos = min(base + delta, len(points) - 1)
    return points[pos], pos - base, "forward"


class BoundaryIndex:
    """Legal boundaries of one message list, precomputed in O(n).

    Attributes (treat as read-only):

    * ``n`` — the number of messages;
    * ``legal`` — ``array('b')`` of length ``n + 1``, 1 where a cut is legal;
    * ``group_start[i]`` / ``group_end[i]`` — first / last index of the (merged) tool
      group holding message ``i`` (``i`` itself for a message outside any group);
    * ``legal_indices`` — the legal boundaries in ascending order;
    * ``user_indices`` — indices of real user messages (exchange starts), ascending.

    Snaps are O(1); exchange and legal-boundary steps are O(log n).
    """

    __slots__ = (
        "_call_prefix",
        "_calls_at",
        "_has_summary",
        "_last_call",
        "_messages",
        "_reach",
        "_stops",
        "_tool_prefix",
        "group_end",
        "group_start",
        "legal",
        "legal_indices",
        "n",
        "user_indices",
    )

    n: int
    legal: array[int]
    group_start: array[int]
    group_end: array[int]
    legal_indices: list[int]
    user_indices: list[int]
    _messages: Sequence[Message]
    _has_summary: bool | None
    _reach: list[int]
    _last_call: dict[str, int]
    _calls_at: bytes
    _tool_prefix: array[int]
    _call_prefix: array[int]
    _stops: list[int]

    def __init__(self, messages: Sequence[Message]) -> None:
        self._build(messages, None)

    def extended(self, messages: Sequence[Message]) -> BoundaryIndex:
        """The index of ``messages``, which extend this index's messages (the same
        messages first, new ones after): only the new messages and the tool group they
        may join are looked at. Any other list is indexed whole."""
        k = self.n
        # (in C: identity first, then equality — an equal message indexes the same)
        if len(messages) < k or tuple(self._messages) != tuple(messages[:k]):
            return BoundaryIndex(messages)
        out = BoundaryIndex.__new__(BoundaryIndex)
        out._build(messages, self)
        return out

    # Long for speed: one pass over the messages, then one over the groups.
    def _build(self, messages: Sequence[Message], base: BoundaryIndex | None) -> None:
        self._messages = messages
        self._has_summary = None
        n = len(messages)
        if base is None:
            k = 0
            reach = list(range(n))
            last_call: dict[str, int] = {}
            users: list[int] = []
            calls_at = bytearray(n)
            tool_prefix = array("q", [0]) * (n + 1)
            call_prefix = array("q", [0]) * (n + 1)
            tools = calls = 0
        else:
            # Carry the prefix over; the new messages continue its running state.
            k = base.n
            reach = base._reach + list(range(k, n))
            last_call = dict(base._last_call)
            users = list(base.user_indices)
            calls_at = bytearray(base._calls_at) + bytearray(n - k)
            tool_prefix = base._tool_prefix[: k + 1] + array("q", [0]) * (n - k)
            call_prefix = base._call_prefix[: k + 1] + array("q", [0]) * (n - k)
            tools, calls = tool_prefix[k], call_prefix[k]
            if base._has_summary is not None:
                from tinyjuice.summary import is_summary_message

                self._has_summary = base._has_summary or any(map(is_summary_message, messages[k:]))
        # The first group a new message can reach back into (0: build whole).
        lo = k
        tool_role = Role.TOOL
        for i in range(k, n):
            m = messages[i]
            role = m.role
            if role is tool_role:
                tools += 1
                parent = last_call.get(m.tool_call_id) if m.tool_call_id is not None else None
                owner = parent if parent is not None else i - 1
                if owner >= 0 and reach[owner] < i:
                    reach[owner] = i
                    if base is not None and owner < k:
                        lo = min(lo, base.group_start[owner])
            else:
                if m.tool_calls:
                    calls += 1
                    calls_at[i] = 1
                    for call in m.tool_calls:
                        last_call[call.id] = i
                if m.is_real_user:
                    users.append(i)
            tool_prefix[i + 1] = tools
            call_prefix[i + 1] = calls

        if base is None:
            group_start = array("q", [0]) * n
            group_end = array("q", [0]) * n
        else:
            # Groups before ``lo`` end before it: they stay as they were.
            group_start = base.group_start[:lo] + array("q", [0]) * (n - lo)
            group_end = base.group_end[:lo] + array("q", [0]) * (n - lo)
        if base is None:
            legal = array("b", [0]) * (n + 1)
            legal_indices: list[int] = []
        else:
            legal = base.legal[:lo] + array("b", [0]) * (n + 1 - lo)
            legal_indices = base.legal_indices[: bisect_left(base.legal_indices, lo)]
        # A boundary is legal at each group's start (0 is one) and at the end.
        add_legal = legal_indices.append
        i = lo
        while i < n:
            legal[i] = 1
            add_legal(i)
            end = reach[i]
            if end == i:  # a message alone (most are)
                group_start[i] = group_end[i] = i
                i += 1
                continue
            j = i + 1
            while j <= end:
                if reach[j] > end:
                    end = reach[j]
                j += 1
            for k in range(i, end + 1):
                group_start[k] = i
                group_end[k] = end
            i = end + 1
        legal[n] = 1
        add_legal(n)

        self._reach = reach
        self._last_call = last_call
        self.n = n
        self.legal = legal
        self.group_start = group_start
        self.group_end = group_end
        self.legal_indices = legal_indices
        self.user_indices = users
        self._calls_at = bytes(calls_at)
        self._tool_prefix = tool_prefix
        self._call_prefix = call_prefix
        stops = sorted({0, n, *users})
        self._stops = stops

    def __len__(self) -> int:
        return self.n

    def built_over(self, messages: Sequence[Message]) -> bool:
        """Whether this index was built over ``messages`` (the same sequence, same length),
        so what it caches about them (:meth:`has_summary`) holds for them."""
        return self._messages is messages and self.n == len(messages)

    def has_summary(self) -> bool:
        """Whether any message is a compaction summary (computed once, then cached)."""
        if self._has_summary is None:
            from tinyjuice.summary import is_summary_message

            self._has_summary = any(map(is_summary_message, self._messages))
        return self._has_summary

    def is_legal(self, index: int) -> bool:
        return 0 <= index <= self.n and bool(self.legal[index])

    def align_start_forward(self, index: int) -> int:
        """The first legal boundary at or after ``index`` (clamped to ``[0, n]``)."""
        index = min(max(index, 0), self.n)
        if self.legal[index]:
            return index
        return self.group_end[index] + 1

    def align_end_backward(self, index: int) -> int:
        """The last legal boundary at or before ``index`` (clamped to ``[0, n]``)."""
        index = min(max(index, 0), self.n)
        if self.legal[index]:
            return index
        return self.group_start[index]

    def _why(self, start: int, end: int) -> str:
        results = self._tool_prefix[end + 1] - self._tool_prefix[start]
        callers = self._call_prefix[end + 1] - self._call_prefix[start]
        if callers == 1 and self._calls_at[start]:
            return f"so the tool call at {start} stays with its {_plural(results, 'result')}"
        if callers:
            return (
                f"so the tool calls from {start} to {end} stay with their "
                f"{_plural(results, 'result')}"
            )
        return "so the tail does not start on a tool result whose call is missing"

    def snap(self, index: int, direction: SnapDirection | str = SnapDirection.NEAREST) -> Snap:
        """Snap ``index`` to a legal boundary; ties under ``nearest`` go backward."""
        way = SnapDirection(direction)
        n = self.n
        if index < 0:
            return Snap(0, index, True, "index before the start clamped to 0")
        if index > n:
            return Snap(n, index, True, f"index beyond the end clamped to {n}")
        if self.legal[index]:
            return Snap(index, index, False, AS_REQUESTED)
        start = self.group_start[index]
        end = self.group_end[index]
        after = end + 1
        if way is SnapDirection.BACKWARD:
            target = start
        elif way is SnapDirection.FORWARD:
            target = after
        else:
            target = start if index - start <= after - index else after
        return Snap(target, index, True, f"moved from {index} to {target} {self._why(start, end)}")

    def step(self, index: int, delta_exchanges: int) -> Snap:
        """Move ``delta_exchanges`` user exchanges back (< 0) or forward (> 0).

        Stops are the real user messages plus the two ends of the transcript. The
        landing index is snapped backward, so a user message inside a tool group (a
        result arriving after a later user message) keeps the group in the tail; a
        forward step that would not advance that way snaps forward instead.
        """
        if delta_exchanges == 0:
            return self.snap(index)
        here = min(max(index, 0), self.n)
        target, steps, word = _walk(self._stops, here, delta_exchanges)
        if steps == 0:
            edge = "earlier" if delta_exchanges < 0 else "later"
            return Snap(here, index, here != index, f"no {edge} user exchange; stayed at {here}")
        if target == 0 and not self._is_user_stop(0):
            what = "the start of the transcript"
        elif target == self.n:
            what = "the end of the transcript"
        else:
            what = f"the user message at {target}"
        reason = f"moved {word} {_plural(steps, 'exchange')} from {here} to {what}"
        snapped = self.snap(target, SnapDirection.BACKWARD)
        if delta_exchanges > 0 and snapped.index <= here:
            # The stop sits inside a group reaching back to ``here``: go past the group.
            snapped = self.snap(target, SnapDirection.FORWARD)
        if snapped.moved:
            reason += f"; {snapped.reason}"
        return Snap(snapped.index, index, snapped.index != index, reason)

    def _is_user_stop(self, index: int) -> bool:
        users = self.user_indices
        k = bisect_left(users, index)
        return k < len(users) and users[k] == index

    def step_legal(self, index: int, delta: int) -> Snap:
        """Move ``delta`` legal boundaries back (< 0) or forward (> 0)."""
        if delta == 0:
            return self.snap(index)
        here = min(max(index, 0), self.n)
        target, steps, word = _walk(self.legal_indices, here, delta)
        if steps == 0:
            edge = "first" if delta < 0 else "last"
            return Snap(here, index, here != index, f"already at the {edge} legal boundary")
        reason = f"moved {word} {steps} legal boundar{'y' if steps == 1 else 'ies'} to {target}"
        return Snap(target, index, True, reason)

    def exchange_start(self, keep_last: int) -> int | None:
        """Index of the real user message starting the ``keep_last``-th newest exchange."""
        users = self.user_indices
        if keep_last <= 0 or not users:
            return None
        return users[-min(keep_last, len(users))]


def _prepare(messages: Sequence[Message], prepared: BoundaryIndex | None) -> BoundaryIndex:
    if prepared is None:
        return BoundaryIndex(messages)
    if prepared.n != len(messages):
        raise ValueError(
            f"the prepared BoundaryIndex was built for {prepared.n} messages but "
            f"{len(messages)} were given; rebuild it after the messages change"
        )
    return prepared


def is_legal_boundary(
    messages: Sequence[Message], i: int, *, prepared: BoundaryIndex | None = None
) -> bool:
    """Whether cutting before message ``i`` splits no tool group (0 and n are legal)."""
    return _prepare(messages, prepared).is_legal(i)


def legal_boundaries(
    messages: Sequence[Message], *, prepared: BoundaryIndex | None = None
) -> list[int]:
    """Every legal boundary index in ascending order (always includes 0 and n)."""
    return list(_prepare(messages, prepared).legal_indices)


def align_start_forward(
    messages: Sequence[Message], i: int, *, prepared: BoundaryIndex | None = None
) -> int:
    """Move a compression start forward past any tool group it would split."""
    return _prepare(messages, prepared).align_start_forward(i)


def align_end_backward(
    messages: Sequence[Message], i: int, *, prepared: BoundaryIndex | None = None
) -> int:
    """Move a compression end (tail start) backward to the start of its tool group."""
    return _prepare(messages, prepared).align_end_backward(i)


def snap_boundary(
    messages: Sequence[Message],
    index: int,
    *,
    direction: SnapDirection | str = SnapDirection.NEAREST,
    prepared: BoundaryIndex | None = None,
) -> Snap:
    """Snap ``index`` to a legal boundary and say why it moved (see :meth:`BoundaryIndex.snap`)."""
    return _prepare(messages, prepared).snap(index, direction)


# --------------------------------------------------------------------------- head and tail


def protected_head_end(
    messages: Sequence[Message],
    *,
    protect_first_n: int = 3,
    compaction_count: int = 0,
    decay: bool = True,
    protect_system: bool = True,
    prepared: BoundaryIndex | None = None,
) -> int:
    """End of the protected head (exclusive).

    With ``protect_system`` the leading system/developer messages are always kept; on
    the first compaction (or when ``decay`` is off) the next ``protect_first_n``
    messages are kept too, so the opening framing survives once but is not copied into
    every later compaction (it already lives in the summary). Without
    ``protect_system`` the first ``protect_first_n`` messages are counted from index 0
    whatever their role. The end moves forward past a tool group it would split.
    """
    if protect_first_n < 0 or compaction_count < 0:
        raise ValueError("protect_first_n and compaction_count must be >= 0")
    n = len(messages)
    end = 0
    if protect_system:
        while end < n and messages[end].role in _SYSTEM_ROLES:
            end += 1
    if compaction_count == 0 or not decay:
        end = min(n, end + protect_first_n)
    if end in (0, n):
        return end
    return _prepare(messages, prepared).align_start_forward(end)


def select_tail_by_budget(
    messages: Sequence[Message],
    tokens: Sequence[int],
    head_end: int,
    token_budget: int,
    min_tail_messages: int,
    soft_ceiling_ratio: float = 1.5,
    *,
    force_middle: bool = False,
    prepared: BoundaryIndex | None = None,
) -> int:
    """Start of the tail kept verbatim, chosen by walking back from the end.

    The walk takes whole units (a tool group, or one message) so the result is always
    legal. A unit is taken when the message floor (``min_tail_messages``) is not met
    yet, or when it fits the ``token_budget``. One unit that crosses the budget is
    still let in when the total stays within ``token_budget × soft_ceiling_ratio``;
    the walk stops after it. A unit that would pass the ceiling stops the walk before
    it, so one huge old tool result never drags all the history after it into the tail.

    Returns ``head_end`` (aligned forward) when everything after the head fits: nothing
    to compress. With ``force_middle`` (compression explicitly requested) it falls back
    to keeping only the floor, and always leaves at least the first unit after the head
    in the middle when there are two or more units, so a short transcript never turns
    into a no-op compaction.
    """
    n = len(messages)
    if len(tokens) != n:
        raise ValueError(
            f"tokens has {len(tokens)} entries for {n} messages; pass one count per message"
        )
    if token_budget < 0 or min_tail_messages < 0:
        raise ValueError("token_budget and min_tail_messages must be >= 0")
    if soft_ceiling_ratio < 1.0:
        raise ValueError(f"soft_ceiling_ratio must be >= 1.0, got {soft_ceiling_ratio}")
    index = _prepare(messages, prepared)
    head_end = index.align_start_forward(head_end)
    if head_end >= n:
        return n
    group_start = index.group_start
    ceiling = int(token_budget * soft_ceiling_ratio)

    cur, acc, kept = n, 0, 0
    while cur > head_end:
        start = group_start[cur - 1]
        unit = sum(tokens[start:cur])
        if kept < min_tail_messages or acc + unit <= token_budget:
            cur, acc, kept = start, acc + unit, kept + cur - start
            continue
        if acc + unit <= ceiling:
            cur = start
        break

    if cur > head_end or not force_middle:
        return cur
    first_unit_end = index.group_end[head_end] + 1
    if first_unit_end >= n:
        return head_end
    cur, kept = n, 0
    while cur > first_unit_end and kept < min_tail_messages:
        start = group_start[cur - 1]
        kept += cur - start
        cur = start
    return max(cur, first_unit_end)


def anchor_tail_start(
    messages: Sequence[Message],
    tail_start: int,
    *,
    anchor_user: bool = True,
    anchor_assistant: bool = True,
    head_end: int = 0,
    prepared: BoundaryIndex | None = None,
) -> int:
    """Move the tail start earlier so the latest ask and latest answer stay verbatim.

    Never moves later. The latest real user message (and with it any tool group in
    flight right after it) and the latest visible assistant reply end up in the tail;
    when the anchored reply directly follows the real user message it answers
    (injected context in between is skipped), the pair stays together.
    Anchors already inside the head (``< head_end``) are left alone. The result is
    aligned backward to a legal boundary.
    """
    n = len(messages)
    target = min(max(tail_start, 0), n)
    if anchor_user:
        u = latest_real_user_index(messages)
        if u is not None and head_end <= u < target:
            target = u
    if anchor_assistant:
        a = latest_visible_assistant_index(messages)
        if a is not None and head_end <= a < target:
            target = a
            p = a - 1
            while p >= head_end and messages[p].role is Role.USER and not messages[p].is_real_user:
                p -= 1
            if p >= head_end and messages[p].is_real_user:
                target = p
    return _prepare(messages, prepared).align_end_backward(target)


# --------------------------------------------------------------------------- partial


@dataclass(frozen=True, slots=True)
class PartialSplit:
    """Where a "keep the last N exchanges" compaction cuts.

    ``messages[start:tail_start]`` is compressed; ``messages[:start]`` (the leading
    system messages) and ``messages[tail_start:]`` are kept verbatim. ``no_op`` means
    there is nothing to compress; ``full`` means the caller asked for
    ``allow_full`` and should run the normal (budget-tail) compaction instead.
    """

    start: int
    tail_start: int
    no_op: bool
    full: bool
    reason: str
    exchanges_kept: int
    exchanges_total: int


def split_for_partial_compaction(
    messages: Sequence[Message],
    keep_last: int,
    *,
    allow_full: bool = False,
    protect_system: bool = True,
    prepared: BoundaryIndex | None = None,
) -> PartialSplit:
    """Split so the last ``keep_last`` user exchanges stay verbatim.

    An exchange starts at a real user message (not a summary, injected context or a
    generated message) and runs until the next one, so the tail starts at a real user
    message. ``keep_last=0`` keeps no exchange. When the split leaves no exchange to
    compress the result is a no-op, or, with ``allow_full``, a request for full
    compression.
    """
    if keep_last < 0:
        raise ValueError(f"keep_last must be >= 0, got {keep_last}")
    index = _prepare(messages, prepared)
    n = index.n
    start = 0
    if protect_system:
        while start < n and messages[start].role in _SYSTEM_ROLES:
            start += 1
    users = index.user_indices
    total = len(users)

    def _nothing(tail: int, why: str, kept: int) -> PartialSplit:
        if allow_full:
            return PartialSplit(
                start, tail, False, True, f"{why}; falling back to full compression", kept, total
            )
        return PartialSplit(start, tail, True, False, why, kept, total)

    if keep_last == 0:
        if n <= start:
            return _nothing(n, "nothing after the system prompt to compress", 0)
        return PartialSplit(
            start,
            n,
            False,
            False,
            f"keeping no exchange verbatim; compressing messages {start}–{n - 1}",
            0,
            total,
        )
    if total == 0:
        return _nothing(n, "no real user message to split at", 0)
    if keep_last >= total:
        tail = index.align_end_backward(users[0])
        return _nothing(
            tail,
            f"keeping the last {_plural(keep_last, 'exchange')} leaves nothing to compress: "
            f"the transcript has {_plural(total, 'user exchange')}",
            total,
        )
    wanted = users[-keep_last]
    tail = index.align_end_backward(wanted)
    reason = (
        f"keeping the last {keep_last} of {_plural(total, 'user exchange')} from message "
        f"{tail}; compressing messages {start}–{tail - 1}"
    )
    if tail != wanted:
        reason += f" (moved from {wanted} {index._why(tail, index.group_end[tail])})"
    if tail <= start:
        return _nothing(tail, "the split leaves no head to compress", keep_last)
    return PartialSplit(start, tail, False, False, reason, keep_last, total)


@dataclass(frozen=True, slots=True)
class PreviewCounts:
    head_messages: int
    middle_messages: int
    tail_messages: int
    total_messages: int
    head_tokens: int
    middle_tokens: int
    tail_tokens: int
    total_tokens: int


def preview_boundary(
    tokens_prefix: Sequence[int] | TranscriptTokens, start: int, end: int
) -> PreviewCounts:
    """Counts and tokens of head / middle / tail for boundary ``(start, end)`` in O(1).

    ``tokens_prefix`` is a prefix-sum sequence (``prefix[i]`` = tokens of messages
    ``[0, i)``, length n + 1) or a :class:`~tinyjuice.tokens.TranscriptTokens`.
    """
    prefix = tokens_prefix.prefix if isinstance(tokens_prefix, TranscriptTokens) else tokens_prefix
    n = len(prefix) - 1
    if n < 0:
        raise ValueError("tokens_prefix must hold at least one entry (prefix[0] = 0)")
    if not 0 <= start <= end <= n:
        raise ValueError(f"boundary ({start}, {end}) must satisfy 0 <= start <= end <= {n}")
    total = prefix[n] - prefix[0]
    head = prefix[start] - prefix[0]
    middle = prefix[end] - prefix[start]
    return PreviewCounts(
        head_messages=start,
        middle_messages=end - start,
        tail_messages=n - end,
        total_messages=n,
        head_tokens=head,
        middle_tokens=middle,
        tail_tokens=total - head - middle,
        total_tokens=total,
    )


# --------------------------------------------------------------------------- rejoin


def _other(role: Role) -> Role:
    return Role.ASSISTANT if role is Role.USER else Role.USER


def _clash(left: Role | None, right: Role | None) -> bool:
    return left is not None and left is right and left in _SEAM_ROLES


def _head_role(head: Sequence[Message]) -> Role:
    """Role the seam sees before the inserted messages.

    When the head holds nothing but system messages the conversation is about to
    start, and providers want a user message first; that reads as an assistant turn.
    """
    if any(m.role not in _SYSTEM_ROLES for m in head):
        return head[-1].role
    return Role.ASSISTANT


def _flexible(message: Message) -> bool:
    return message.role in _SEAM_ROLES and not message.tool_calls


def _bridge_message(role: Role) -> Message:
    meta = MessageMeta(
        generated_by=_BRIDGE,
        is_injected=role is Role.USER,
        injected_kind="compaction_bridge" if role is Role.USER else None,
    )
    return Message(role=role, parts=(TextPart(_BRIDGE_TEXT[role]),), meta=meta)


def rejoin(
    head: Sequence[Message],
    inserted: Sequence[Message],
    tail: Sequence[Message],
    *,
    on_conflict: SeamPolicy | str = SeamPolicy.BRIDGE,
) -> list[Message]:
    """Join head, inserted (summary) messages and the verbatim tail without a bad seam.

    No user/user or assistant/assistant adjacency is left at the seams (head's last,
    the inserted messages, tail's first). Inserted user/assistant messages without tool
    calls may change role: their own role is kept when it fits, else the other role.
    When no role fits both neighbours, ``bridge`` adds a one-line message of the
    missing role (``meta.generated_by="bridge"``; a user bridge is also marked
    injected) and ``merge`` folds a single inserted message's text into the head's
    last message. A head of only system messages counts as "before the first user
    turn", so the first conversational message comes out as a user message. Tail
    messages are never changed.
    """
    policy = SeamPolicy(on_conflict)
    head = list(head)
    tail = list(tail)
    before = _head_role(head)
    after = tail[0].role if tail else None

    chosen: list[Message] = []
    for k, m in enumerate(inserted):
        left = chosen[k - 1].role if k else before
        right = inserted[k + 1].role if k + 1 < len(inserted) else after
        if _flexible(m) and (_clash(left, m.role) or _clash(m.role, right)):
            alt = _other(m.role)
            if not _clash(left, alt) and not _clash(alt, right):
                m = replace(m, role=alt)
        chosen.append(m)

    seam = [*chosen, *tail[:1]]
    roles = [before, *(m.role for m in seam)]
    conflict = any(_clash(a, b) for a, b in pairwise(roles))
    if (
        conflict
        and policy is SeamPolicy.MERGE
        and len(chosen) == 1
        and head
        and head[-1].role in _SEAM_ROLES
        and before is head[-1].role
        and not _clash(head[-1].role, after)
    ):
        last = head[-1]
        text = chosen[0].text
        merged = replace(last, parts=(*last.parts, TextPart(text))) if text else last
        return [*head[:-1], merged, *tail]

    out = list(head)
    last_role: Role | None = before
    for m in seam:
        if _clash(last_role, m.role):
            out.append(_bridge_message(_other(m.role)))
        out.append(m)
        last_role = m.role
    out.extend(tail[1:])
    return out


# --------------------------------------------------------------------------- sanitizer


@dataclass(frozen=True, slots=True)
class SanitizeResult:
    messages: tuple[Message, ...]
    #: Tool results dropped because no retained earlier call had their id (or a
    #: result for that call was already kept).
    removed_results: int
    #: Calls removed from their assistant message (``strip``).
    stripped_calls: int
    #: Calls answered with a stub result (``bridge``).
    bridged_calls: int
    #: Assistant messages dropped because stripping left them empty.
    dropped_messages: int
    #: Unanswered calls left alone in the final in-flight tool group.
    kept_in_flight: int


def _is_empty(message: Message) -> bool:
    if message.tool_calls:
        return False
    for part in message.parts:
        if isinstance(part, MediaPart) or (isinstance(part, TextPart) and part.text.strip()):
            return False
    return True


def _stub_result(call_id: str, name: str) -> Message:
    return Message(
        role=Role.TOOL,
        parts=(TextPart(BRIDGE_RESULT_TEXT),),
        tool_call_id=call_id,
        tool_name=name,
        meta=MessageMeta(generated_by=_BRIDGE),
    )


def _paired(messages: Sequence[Message]) -> tuple[list[bool], set[tuple[int, int]]]:
    """Which messages to keep (a tool result only when an earlier call has its id and
    no result for that call came yet), and the calls answered, as (message, position)."""
    open_calls: dict[str, tuple[int, int]] = {}
    answered: set[tuple[int, int]] = set()
    keep = [True] * len(messages)
    for i, m in enumerate(messages):
        if m.role is Role.TOOL:
            occurrence = (
                open_calls.pop(m.tool_call_id, None) if m.tool_call_id is not None else None
            )
            if occurrence is None:
                keep[i] = False
            else:
                answered.add(occurrence)
        elif m.tool_calls:
            for pos, call in enumerate(m.tool_calls):
                open_calls[call.id] = (i, pos)
    return keep, answered


def _in_flight_group(messages: Sequence[Message]) -> int:
    """The message whose calls open the final tool group, when nothing but its results
    (if any) follows it; else -1."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role is not Role.TOOL:
            return i if messages[i].tool_calls else -1
    return -1


def sanitize_tool_pairs(
    messages: Sequence[Message],
    *,
    orphan_calls: OrphanCallPolicy | str = OrphanCallPolicy.STRIP,
    keep_in_flight: bool = False,
) -> SanitizeResult:
    """Make every retained tool result and tool call part of a complete pair.

    A tool result is kept only when an earlier retained call has its id and no result
    for that call was kept yet; others are removed. A call left without a result is
    stripped from its message (the message is dropped when nothing visible remains) or
    bridged with a stub result placed after the message's own results, per
    ``orphan_calls``. With ``keep_in_flight`` the calls of a final tool group still
    waiting for results are left as they are.
    """
    policy = OrphanCallPolicy(orphan_calls)
    keep, answered = _paired(messages)
    removed = keep.count(False)
    in_flight = _in_flight_group(messages) if keep_in_flight else -1
    out: list[Message] = []
    stubs: list[Message] = []
    stripped = bridged = dropped = held = 0
    for i, m in enumerate(messages):
        if m.role is Role.TOOL:
            if keep[i]:
                out.append(m)
            continue
        if stubs:
            out.extend(stubs)
            stubs = []
        if not m.tool_calls:
            out.append(m)
            continue
        missing = [c for pos, c in enumerate(m.tool_calls) if (i, pos) not in answered]
        if not missing:
            out.append(m)
        elif i == in_flight:
            held += len(missing)
            out.append(m)
        elif policy is OrphanCallPolicy.BRIDGE:
            bridged += len(missing)
            stubs = [_stub_result(c.id, c.name) for c in missing]
            out.append(m)
        else:
            stripped += len(missing)
            kept_calls = tuple(c for pos, c in enumerate(m.tool_calls) if (i, pos) in answered)
            trimmed = replace(m, tool_calls=kept_calls)
            if _is_empty(trimmed):
                dropped += 1
            else:
                out.append(trimmed)
    out.extend(stubs)
    return SanitizeResult(
        messages=tuple(out),
        removed_results=removed,
        stripped_calls=stripped,
        bridged_calls=bridged,
        dropped_messages=dropped,
        kept_in_flight=held,
    )
