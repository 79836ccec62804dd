"""The digest pass's fast paths give exactly what the plain code gives.

Digests build five frozen objects each (tens of thousands per run): they are made by
:func:`tinyjuice.digest._fast_constructor` and ``_fast_replacer``, which set each slot
directly. A read without a line range skips the range lookups; a digest's size is
formatted inline.
"""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass, fields, replace
from typing import Any

import pytest

from tinyjuice import digest as digest_mod
from tinyjuice.digest import (
    DigestRecord,
    _fast_constructor,
    _fast_replacer,
    _first,
    digest_line,
)
from tinyjuice.model import Message, MessageMeta, Role, TextPart

_VALUES: dict[type, tuple[Any, ...]] = {
    Message: (
        Role.TOOL,
        (TextPart("out"),),
        (),
        "call_1",
        "terminal",
        None,
        MessageMeta(is_error=True, original_index=7),
        {"x": 1},
        {"content_form": "string"},
    ),
    MessageMeta: (False, True, "kind", "src", 3, True, False, True, "digest"),
    TextPart: ("text", {"cache_control": 1}, "text"),
    DigestRecord: (4, "call_2", "Read", "duplicate", 900, 40, 9),
    digest_mod._Output: ("body", {"a": 1}, 2, True),
}


@pytest.mark.parametrize("cls", list(_VALUES), ids=lambda c: c.__name__)
def test_fast_constructor_builds_what_the_class_builds(cls: type) -> None:
    make: Any = _fast_constructor(cls)
    assert make is not cls  # the fast path is taken for every class the digest builds
    values = _VALUES[cls]
    fast, plain = make(*values), cls(*values)
    assert type(fast) is cls
    assert fast == plain and repr(fast) == repr(plain)
    assert all(getattr(fast, f.name) is v for f, v in zip(fields(cls), values, strict=True))
    with pytest.raises(FrozenInstanceError):
        setattr(fast, fields(cls)[0].name, None)  # still frozen
    assert not hasattr(fast, "__dict__")  # and slotted


@pytest.mark.parametrize("cls", list(_VALUES), ids=lambda c: c.__name__)
def test_fast_replacer_equals_dataclasses_replace(cls: type) -> None:
    obj = cls(*_VALUES[cls])
    names = [f.name for f in fields(cls)]
    for changed in ([names[0]], [names[-1]], names[1::2], names[:1] + names[-1:]):
        values = [object() for _ in changed]
        made: Any = _fast_replacer(cls, *changed)(obj, *values)
        assert type(made) is cls
        assert made == replace(obj, **dict(zip(changed, values, strict=True)))


def test_fast_constructor_keeps_the_class_when_init_does_more() -> None:
    @dataclass(frozen=True, slots=True)
    class Checked:
        a: int

        def __post_init__(self) -> None:
            if self.a < 0:
                raise ValueError("negative")

    @dataclass(slots=True)
    class Mutable:
        a: int

    assert _fast_constructor(Checked) is Checked
    assert _fast_constructor(Mutable) is Mutable
    with pytest.raises(ValueError, match="negative"):
        _fast_replacer(Checked, "a")(Checked(1), -1)  # through replace, so __post_init__


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
