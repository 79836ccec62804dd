"""The shared empty mapping behaves as an empty, read-only dict."""

from __future__ import annotations

import pytest

from tinyjuice.model import EMPTY, Message, Role


def test_it_answers_as_an_empty_dict() -> None:
    assert EMPTY == {} and len(EMPTY) == 0 and list(EMPTY) == []
    assert EMPTY.get("x") is None and EMPTY.get("x", 7) == 7
    assert "x" not in EMPTY and None not in EMPTY
    assert dict(EMPTY) == {} and repr(EMPTY) == "{}" and hash(EMPTY) == 0
    with pytest.raises(KeyError):
        EMPTY["x"]


def test_it_is_the_default_of_hints_and_source_fields() -> None:
    m = Message(Role.USER)
    assert m.extra is EMPTY and m.hints is EMPTY
    assert m.hints.get("kind", "none") == "none"
