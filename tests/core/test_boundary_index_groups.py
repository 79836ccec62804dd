"""BoundaryIndex's groups and legal boundaries, built in one loop (legal boundaries as
each group starts, lone messages without the inner walk), equal the two-pass reference;
so does an index extended from a prefix."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.boundary import BoundaryIndex
from tinyjuice.model import Message, Role, TextPart, ToolCall


def _reference(messages: list[Message]) -> tuple[list[int], list[int], list[int], list[int]]:
    """group_start, group_end, legal, legal_indices: the two passes as first written."""
    n = len(messages)
    reach = list(range(n))
    last_call: dict[str, int] = {}
    for i, m in enumerate(messages):
        if m.role is Role.TOOL:
            parent = last_call.get(m.tool_call_id) if m.tool_call_id is not None else None
            owner = parent if parent is not None else i - 1
            if owner >= 0 and reach[owner] < i:
                reach[owner] = i
        else:
            for call in m.tool_calls:
                last_call[call.id] = i
    start, end_of = [0] * n, [0] * n
    i = 0
    while i < n:
        end = reach[i]
        j = i + 1
        while j <= end:
            end = max(end, reach[j])
            j += 1
        for k in range(i, end + 1):
            start[k], end_of[k] = i, end
        i = end + 1
    legal = [1 if j in (0, n) or start[j] == j else 0 for j in range(n + 1)]
    return start, end_of, legal, [j for j in range(n + 1) if legal[j]]


_ids = st.sampled_from(["a", "b", "c", "d"])
_message = st.one_of(
    st.builds(lambda: Message(Role.USER, (TextPart("u"),))),
    st.builds(lambda: Message(Role.ASSISTANT, (TextPart("a"),))),
    st.builds(
        lambda ids: Message(Role.ASSISTANT, tool_calls=tuple(ToolCall(i, "t") for i in ids)),
        st.lists(_ids, min_size=1, max_size=3),
    ),
    st.builds(lambda i: Message(Role.TOOL, (TextPart("r"),), tool_call_id=i), st.none() | _ids),
)


def _observed(index: BoundaryIndex) -> tuple[list[int], list[int], list[int], list[int]]:
    return (
        list(index.group_start),
        list(index.group_end),
        list(index.legal),
        list(index.legal_indices),
    )


@settings(max_examples=300, deadline=None)
@given(st.lists(_message, max_size=30), st.integers(0, 30))
def test_groups_and_legal_boundaries_equal_the_reference(messages: list[Message], cut: int) -> None:
    assert _observed(BoundaryIndex(messages)) == _reference(messages)
    prefix = BoundaryIndex(messages[: min(cut, len(messages))])
    assert _observed(prefix.extended(messages)) == _reference(messages)
