"""Error messages clip what they echo from the input and say where the problem is
(issue #12 item 13)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tinyjuice.formats import LoadError, load, load_bytes
from tinyjuice.formats._base import clip
from tinyjuice.formats._locate import locate, locate_nearest

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"
HUGE = "A" * 2_000_000


def _message(excinfo: pytest.ExceptionInfo[LoadError]) -> str:
    text = str(excinfo.value)
    assert len(text) < 900, text[:300]
    return text


@pytest.mark.parametrize(
    ("fmt", "doc"),
    [
        ("openai", {"messages": [{"role": HUGE, "content": "hi"}]}),
        ("anthropic", {"messages": [{"role": HUGE, "content": "hi"}]}),
        ("sharegpt", {"conversations": [{"from": HUGE, "value": "hi"}]}),
    ],
)
def test_a_huge_bad_value_is_clipped(fmt: str, doc: dict) -> None:
    with pytest.raises(LoadError) as info:
        load_bytes(json.dumps(doc).encode(), "t.json", fmt)
    text = _message(info)
    assert "AAAA" in text and "(2,000,000 characters)" in text


def test_a_huge_codex_role_is_clipped() -> None:
    lines = (SESSIONS / "codex-rollout.jsonl").read_bytes().splitlines()
    for n, raw in enumerate(lines):
        record = json.loads(raw)
        payload = record.get("payload") or {}
        if payload.get("type") == "message" and payload.get("role") == "user":
            payload["role"] = HUGE
            lines[n] = json.dumps(record).encode()
            break
    with pytest.raises(LoadError) as info:
        load_bytes(b"\n".join(lines), "rollout.jsonl", "codex")
    assert "(2,000,000 characters)" in _message(info)


def test_huge_names_asked_for_are_clipped() -> None:
    with pytest.raises(LoadError) as info:
        load(SESSIONS / "hermes-state.db", session=HUGE)
    assert "(2,000,000 characters)" in _message(info)
    with pytest.raises(LoadError) as info:
        load(SESSIONS / "sharegpt.jsonl", session=HUGE)
    assert "(2,000,000 characters)" in _message(info)
    with pytest.raises(LoadError) as info:
        load(SESSIONS / "demo.json", HUGE)
    assert "(2,000,000 characters)" in _message(info)


def test_the_cli_prints_a_clipped_line(tmp_path: Path) -> None:
    from tjui.cli import main

    path = tmp_path / "t.json"
    path.write_text(json.dumps({"messages": [{"role": HUGE, "content": "hi"}]}))
    result = CliRunner().invoke(main, ["inspect", str(path)])
    assert result.exit_code == 2
    assert len(result.stderr) < 900 and "(2,000,000 characters)" in result.stderr


def test_a_nul_byte_is_reported_with_its_byte_and_line() -> None:
    data = b'{\n  "messages": [\n  \x00\n]}'
    with pytest.raises(LoadError) as info:
        load_bytes(data, "t.json")
    assert info.value.offset == 20 and info.value.line == 3
    assert "t.json, line 3, byte 20: file looks binary (a NUL byte)" in str(info.value)


def test_a_damaged_field_names_its_line_byte_and_path(tmp_path: Path) -> None:
    doc = {
        "model": "gpt-4o",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {"rXle": "user", "content": "Summarise the log."},
        ],
    }
    data = json.dumps(doc, indent=2).encode()
    with pytest.raises(LoadError) as info:
        load_bytes(data, "t.json")
    err = info.value
    assert err.json_path == "$.messages[1].role"
    assert "unrecognised transcript" in str(err) and "closest to openai" in str(err)
    # The role is missing: the position is the message that lacks it.
    assert err.offset == data.index(b'{\n      "rXle"') and err.line == 8
    # A file that is no transcript at all gets no guess.
    with pytest.raises(LoadError) as info:
        load_bytes(json.dumps({"hello": "world", "items": [1, 2]}).encode(), "o.json")
    assert "closest" not in str(info.value)


def test_a_forced_format_error_gets_its_line_and_byte() -> None:
    data = json.dumps({"messages": [{"role": "user", "content": 7}]}, indent=1).encode()
    with pytest.raises(LoadError) as info:
        load_bytes(data, "t.json", "openai")
    err = info.value
    assert err.json_path is not None and err.offset is not None
    assert data[err.offset : err.offset + 1] == b"7" or err.offset == data.index(b'{"role"')


def test_locate() -> None:
    doc = {"a": {'b"x': [1, {"c": 'q\\"]}'}, [2, 3]], "m": [{"r": "u"}, {"r": "v", "k": [{}]}]}}
    data = json.dumps(doc, indent=2).encode()
    assert data[locate(data, "$.a.m[1].r") :].startswith(b'"v"')
    assert data[locate(data, '$.a.b"x[1].c') :].startswith(b'"q')
    assert data[locate(data, "$.a.m[1].k[0]") :].startswith(b"{}")
    assert locate(data, "$.a.m[2]") is None and locate(data, "$.zz") is None
    assert data[locate_nearest(data, "$.a.m[1].gone") :].startswith(b'{\n        "r": "v"')
    assert locate_nearest(data, "$.nothing") is None


def test_clip() -> None:
    assert clip("short") == "'short'"
    assert clip("x" * 100) == repr("x" * 60) + "… (100 characters)"
    assert clip(b"y" * 100).endswith("… (100 bytes)")
    assert clip(None) == "None"
