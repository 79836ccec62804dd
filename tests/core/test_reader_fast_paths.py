"""A reader's fast path must build exactly what its readable path builds.

Every reader has one seam (``tinyjuice.formats._messages``): :func:`fast_paths` says
whether the fast paths run, and :func:`readable_paths` switches them off (the model's own
constructors, the checked per-message code). Each file below is loaded both ways and the
whole transcripts must be equal: messages, meta, hints, events, usage, warnings; for bad
input, the same :class:`LoadError`. The files: every sample in sessions/ (every
registered reader has one), the benchmark generator's native shapes, and mutations of
both with values of the wrong type.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks import gen
from tinyjuice.formats import _MODULES, LoadError, detect, load
from tinyjuice.formats._io import Source
from tinyjuice.formats._messages import fast_paths, readable_paths, text_part
from tinyjuice.formats.openai import fast_message, known_keys, message_from_dict
from tinyjuice.model import Message, TextPart, Transcript

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
SAMPLES = sorted(
    p for p in SESSIONS.iterdir() if p.name not in ("README.md", "manifest.json", "demo.json")
)
#: Values a mutation puts where the reader expects something else.
ODD_VALUES: tuple[Any, ...] = (42, None, "x", [], {}, [1], True)


def _both(path: Path, format: str | None = None) -> tuple[Any, Any]:
    """``load(path)`` with the fast paths, then with the readable paths (or their errors)."""

    def one() -> Transcript | str:
        try:
            return load(path, format)
        except LoadError as exc:
            return f"LoadError: {exc}"

    assert fast_paths()
    fast = one()
    with readable_paths():
        assert not fast_paths()
        readable = one()
    return fast, readable


def _same(fast: Any, readable: Any) -> None:
    assert fast == readable
    if isinstance(fast, Transcript):
        # Equal values of the same classes, message by message (clearer when one fails).
        for a, b in zip(fast.messages, readable.messages, strict=True):
            assert type(a) is type(b) is Message
            assert a == b
            assert a.meta == b.meta and a.hints == b.hints


@pytest.mark.parametrize("path", SAMPLES, ids=lambda p: p.name)
def test_every_sample_loads_the_same_both_ways(path: Path) -> None:
    fast, readable = _both(path)
    assert isinstance(fast, Transcript), fast
    _same(fast, readable)


def test_the_samples_cover_every_registered_reader() -> None:
    assert {load(p).format for p in SAMPLES} >= set(_MODULES)


def _generated(tmp: Path, n: int = 60) -> Iterator[tuple[str, Path]]:
    conv = gen.conversation(n, seed=7)
    for format in gen.FORMATS:
        path = tmp / gen.filename(format, n)
        path.write_bytes(gen.render(conv, format))
        yield format, path


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, Path]]:
    return list(_generated(tmp_path_factory.mktemp("gen")))


@pytest.mark.parametrize("format", gen.FORMATS)
def test_generated_files_load_the_same_both_ways(
    format: str, generated: list[tuple[str, Path]]
) -> None:
    (path,) = [p for f, p in generated if f == format]
    fast, readable = _both(path, format)
    assert isinstance(fast, Transcript), fast
    assert fast.format == format
    _same(fast, readable)


def _nodes(value: Any, out: list[tuple[Any, Any]]) -> None:
    """Every (container, key) pair below ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            out.append((value, key))
            _nodes(item, out)
    elif isinstance(value, list):
        for key, item in enumerate(value):
            out.append((value, key))
            _nodes(item, out)


def _mutants(data: bytes, jsonl: bool, rng: random.Random, count: int) -> Iterator[bytes]:
    """``data`` with one value (a key's or an item's) replaced by one of the wrong type."""
    for _ in range(count):
        if jsonl:
            docs = [orjson.loads(line) for line in data.splitlines() if line.strip()]
        else:
            docs = [orjson.loads(data)]
        nodes: list[tuple[Any, Any]] = []
        for doc in docs:
            _nodes(doc, nodes)
        container, key = rng.choice(nodes)
        container[key] = rng.choice(ODD_VALUES)
        if jsonl:
            yield b"\n".join(orjson.dumps(d) for d in docs) + b"\n"
        else:
            yield orjson.dumps(docs[0])


_JSON_SAMPLES = [p for p in SAMPLES if p.is_file() and p.suffix in (".json", ".jsonl", ".traj")]


@pytest.mark.parametrize("path", _JSON_SAMPLES, ids=lambda p: p.name)
def test_mutated_samples_load_or_fail_the_same_both_ways(path: Path, tmp_path: Path) -> None:
    rng = random.Random(path.name)
    format = detect(path)
    target = tmp_path / path.name
    for data in _mutants(path.read_bytes(), path.suffix == ".jsonl", rng, 40):
        target.write_bytes(data)
        _same(*_both(target, format))


@pytest.mark.parametrize("format", gen.FORMATS)
def test_mutated_generated_files_load_or_fail_the_same_both_ways(
    format: str, tmp_path: Path
) -> None:
    rng = random.Random(format)
    conv = gen.conversation(12, seed=3)
    target = tmp_path / gen.filename(format, 12)
    for data in _mutants(gen.render(conv, format), gen.is_jsonl(target), rng, 60):
        target.write_bytes(data)
        _same(*_both(target, format))


def test_readable_paths_build_with_the_model_constructors() -> None:
    """Inside readable_paths the constructors are the model's own (and equal outside)."""
    fast = text_part("x")
    with readable_paths():
        readable = text_part("x")
    assert fast == readable == TextPart("x")
    assert type(fast) is type(readable) is TextPart


# ------------------------------------------------------------- the shared OpenAI seam

_CALL = {
    "id": "call_q1",
    "type": "function",
    "function": {"name": "run_shell", "arguments": '{"cmd": "make lint"}'},
}

SHAPES: list[dict[str, Any]] = [
    {"role": "system", "content": "You tidy gardens in the greenhouse project."},
    {"role": "developer", "content": "Prefer short answers."},
    {"role": "user", "content": "Why does seedling_tray.py fail on empty trays?"},
    {"role": "user", "content": ""},
    {"role": "user", "content": None},
    {"role": "assistant", "content": "Looking at the tray loader.", "tool_calls": [_CALL]},
    {"role": "assistant", "content": None, "tool_calls": [_CALL, {**_CALL, "id": "call_q2"}]},
    {"role": "assistant", "content": "Done: trays load.", "name": "helper"},
    {"role": "tool", "tool_call_id": "call_q1", "content": "lint: 0 problems"},
    {"role": "tool", "tool_call_id": "call_q1", "name": "run_shell", "content": "ok"},
    {"role": "user", "content": "with an extra key", "x_trace": {"span": 7}},
    {"role": "assistant", "content": "extra on the call", "tool_calls": [{**_CALL, "index": 0}]},
]


@pytest.mark.parametrize("raw", SHAPES, ids=lambda r: f"{r['role']}-{len(r)}")
def test_openai_fast_message_equals_the_readable_path(raw: dict[str, Any], tmp_path: Path) -> None:
    source = Source(path=tmp_path / "s.json", data=b"", doc=None, kind="json")
    fast = fast_message(raw, 4, known_keys())
    slow = message_from_dict(source, raw, "$.messages[4]", index=4)
    if fast is None:
        pytest.skip("not a shape the fast path takes")
    assert fast == slow


def test_the_fast_path_takes_the_common_shapes() -> None:
    taken = [r for r in SHAPES if fast_message(r, 0, known_keys()) is not None]
    assert len(taken) >= 8  # else the equality test above checks little
