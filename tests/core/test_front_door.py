"""The host's front door: ``tinyjuice.__all__``, message dicts in and out, the README."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from pathlib import Path

import pytest

import tinyjuice as tj
from tinyjuice.model import Role

ROOT = Path(__file__).resolve().parents[2]

FRONT_DOOR = (
    "compress",
    "plan_boundary",
    "CompactionOptions",
    "CompactionResult",
    "CompactionState",
    "SummaryProvider",
    "load",
    "save",
    "from_messages",
    "to_messages",
)

OPENAI = [
    {"role": "system", "content": "You are a build bot."},
    {"role": "user", "content": "Run the tests."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_7",
                "type": "function",
                "function": {"name": "shell", "arguments": '{"cmd": "make test"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_7", "content": "3 passed"},
    {"role": "assistant", "content": "All 3 pass.", "x_vendor": {"k": 1}},
]

ANTHROPIC = [
    {"role": "user", "content": "What is in notes.txt?"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "tu_1", "name": "read", "input": {"path": "notes.txt"}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": "buy milk"}],
    },
    {"role": "assistant", "content": "It says: buy milk."},
]


def test_all_names_the_front_door_and_each_resolves() -> None:
    for name in FRONT_DOOR:
        assert name in tj.__all__
    for name in tj.__all__:
        assert getattr(tj, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = tj.nope  # type: ignore[attr-defined]


def test_import_is_lazy() -> None:
    code = (
        "import sys, tinyjuice; print(sorted(m for m in sys.modules if m.startswith('tinyjuice')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "['tinyjuice']"


def test_openai_dicts_round_trip_unchanged() -> None:
    given = copy.deepcopy(OPENAI)
    t = tj.from_messages(given)
    assert given == OPENAI  # not modified
    assert [m.role for m in t.messages][:2] == [Role.SYSTEM, Role.USER]
    assert t.messages[2].tool_calls[0].id == "call_7"
    assert tj.to_messages(t) == OPENAI


def test_anthropic_dicts_round_trip_and_system_is_separate() -> None:
    t = tj.from_messages(ANTHROPIC, "anthropic", system="Be brief.")
    assert t.system_prompt == "Be brief."
    tool = next(m for m in t.messages if m.role is Role.TOOL)
    assert tool.tool_call_id == "tu_1"
    assert tj.to_messages(t, "anthropic") == ANTHROPIC
    assert tj.system_text(t) == "Be brief."


def test_shapes_convert_both_ways() -> None:
    as_anthropic = tj.to_messages(tj.from_messages(OPENAI), "anthropic")
    assert [m["role"] for m in as_anthropic] == ["user", "assistant", "user", "assistant"]
    back = tj.to_messages(tj.from_messages(as_anthropic, "anthropic"), "openai")
    assert [m["role"] for m in back] == ["user", "assistant", "tool", "assistant"]
    openai_with_system = tj.to_messages(tj.from_messages(ANTHROPIC, "anthropic", system="S"))
    assert openai_with_system[0] == {"role": "system", "content": "S"}


def test_bad_input_is_a_clear_error() -> None:
    with pytest.raises(tj.LoadError, match=r"<messages>.*unknown role"):
        tj.from_messages([{"role": "wizard", "content": "hi"}])
    with pytest.raises(TypeError, match="list of message dicts"):
        tj.from_messages("hello")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown message shape 'gemini'"):
        tj.from_messages(OPENAI, "gemini")  # type: ignore[arg-type]


def _readme_example() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## The library: tinyjuice") :]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match is not None, "README's library section has no python example"
    return match.group(1)


def test_readme_embedding_example_runs() -> None:
    code = _readme_example()
    assert len(code.strip().splitlines()) <= 10
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    status, before, arrow, after = out.split()
    assert (status, arrow) == ("compacted", "->")
    assert int(after) < int(before)


def test_all_and_the_lazy_table_agree() -> None:
    assert sorted(tj.__all__) == sorted([*tj._HOME, "__version__"])
