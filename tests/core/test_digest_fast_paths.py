"""The digest pass's shortcuts give exactly what the plain code gives: a read without a
line range skips the range lookups; a digest's size is its lines and bytes, pluralised;
a tail with nothing before the size is the size; a search counts its non-blank lines at
C speed."""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tinyjuice import digest as digest_mod
from tinyjuice.digest import _first, digest_line
from tinyjuice.model import Message, MessageMeta, Role, TextPart, ToolCall


def test_digest_messages_equal_a_plain_rebuild() -> None:
    msg = Message(
        Role.TOOL,
        (TextPart("x" * 500, {"k": 1}),),
        tool_call_id="c1",
        tool_name="bash",
        meta=MessageMeta(is_error=True, original_index=3),
        extra={"e": 1},
    )
    out = digest_mod._with_text(msg, "[bash] ran a command -> exit 1")
    assert out == Message(
        Role.TOOL,
        (TextPart("[bash] ran a command -> exit 1", {"k": 1}),),
        tool_call_id="c1",
        tool_name="bash",
        meta=MessageMeta(is_error=True, original_index=3, generated_by="digest"),
        extra={"e": 1},
    )


@pytest.mark.parametrize(
    ("args", "span"),
    [
        ({"path": "a.py"}, "from line 1"),
        ({"path": "a.py", "offset": 5}, "from line 5"),
        ({"path": "a.py", "limit": 10}, "lines 1-10"),
        ({"path": "a.py", "offset": 5, "limit": 10}, "lines 5-14"),
        ({"path": "a.py", "start_line": 3, "end_line": 9}, "lines 3-9"),
        ({"path": "a.py", "view_range": [2, 4]}, "lines 2-4"),
        ({"path": "a.py", "lines": 0}, "from line 1"),
        ({"path": "a.py", "line": "12"}, "from line 12"),
        ({"path": "a.py", "offset": ""}, "from line 1"),
        ({"path": "a.py", "unrelated": 4}, "from line 1"),
        ("a.py", "from line 1"),
        (None, "from line 1"),
    ],
)
def test_read_file_span_with_and_without_range_keys(args: Any, span: str) -> None:
    line = digest_line("read_file", args, "x\n" * 300)
    assert f" {span} -> " in line


def test_first_treats_only_empty_values_as_absent() -> None:
    args: dict[str, Any] = {"a": None, "b": "", "c": [], "d": {}, "e": 0, "f": False, "g": "v"}
    assert _first(args, "a", "b", "c", "d", "e") == 0
    assert _first(args, "a", "b", "c", "d", "f") is False
    assert _first(args, "a", "b", "c", "d", "missing") is None
    assert _first(args, "g", "e") == "v"
    assert _first("not a dict", "g") is None


@pytest.mark.parametrize(
    "body", ["", "a", "a\n", "a\nb", "\n", "\n\n", "é", "x" * 1000 + "\n" * 999, "\ud800x"]
)
def test_size_is_the_plural_of_lines_and_bytes(body: str) -> None:
    lines = digest_mod._plural(digest_mod._count_lines(body), "line")
    size = digest_mod._plural(digest_mod._byte_len(body), "byte")
    assert digest_mod._size(body) == f"{lines}, {size}"


def _every_field_set() -> Message:
    """A one-text tool result with every field of the model set to a value of its own
    (flags too: no two fields are equal), so a field the fast path forgot to copy, or
    passed in another field's place, shows in the comparison."""
    values: dict[str, Any] = {f.name: f"{f.name}-v" for f in fields(MessageMeta)}
    values["original_index"] = 7
    meta = MessageMeta(**values)
    call = ToolCall("c9", "bash", '{"command": "ls"}')
    msg = Message(Role.TOOL, (TextPart("x" * 500, {"k": 1}),), meta=meta)
    changes: dict[str, Any] = {
        "tool_calls": (call,),
        "tool_call_id": "c9",
        "tool_name": "bash",
        "reasoning": "why",
        "extra": {"e": 1},
        "hints": {"content_form": "parts"},
    }
    assert {f.name for f in fields(Message)} == {"role", "parts", "meta", *changes}
    return replace(msg, **changes)


def test_the_one_text_digest_message_equals_the_plain_rebuild() -> None:
    msg = _every_field_set()
    fast = digest_mod._with_only_text(msg, msg.parts[0], "[bash] ran `ls` -> exit 0")
    meta = replace(msg.meta, generated_by="digest")
    part = replace(msg.parts[0], text="[bash] ran `ls` -> exit 0")
    assert fast == replace(msg, parts=(part,), meta=meta)
    assert digest_mod._with_text(msg, "[bash] ran `ls` -> exit 0") == fast


@pytest.mark.parametrize("show_exit", [False, True])
@pytest.mark.parametrize("is_error", [False, True])
@pytest.mark.parametrize("exit_code", [None, 0, 2])
@pytest.mark.parametrize("extra", [(), ("status done",)])
def test_tail_equals_the_joined_status_and_size(
    show_exit: bool, is_error: bool, exit_code: int | None, extra: tuple[str, ...]
) -> None:
    out = digest_mod._Output("a\nb\n", None, exit_code, is_error)
    plain = ", ".join(
        [*digest_mod._status(out, show_exit=show_exit), *extra, digest_mod._size(out.body)]
    )
    assert digest_mod._tail(out, show_exit=show_exit, extra=extra) == plain


#: Line boundaries ``str.splitlines`` knows, and spaces ``str.strip`` removes.
_LINE_TEXT = st.text(
    st.sampled_from(["a", " ", "\t", "\n", "\r", "\x0b", "\x1c", "\x85", "\u2028", "\xa0"])
)


@given(_LINE_TEXT)
def test_search_counts_the_lines_that_are_not_blank(body: str) -> None:
    body = "x" * 300 + "\n" + body  # long enough to digest; no count in its first line
    plain = sum(1 for ln in body.splitlines() if ln.strip())
    noun = "result line" if plain == 1 else "result lines"
    assert f"-> {plain:,} {noun}, " in digest_line("search_files", {"pattern": "x"}, body)


@pytest.mark.parametrize("n", [-1001, -1000, -999, -1, 0, 1, 2, 999, 1000, 1001, 123456789])
def test_plural_writes_thousands_with_commas(n: int) -> None:
    assert digest_mod._plural(n, "line").split(" ")[0] == f"{n:,}"
