"""`tjui convert`: another format, nothing compacted, losses said, never over the input."""

from __future__ import annotations

import json
from pathlib import Path

from cli_helpers import run

from tinyjuice.formats import load

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"


def test_convert_writes_every_message_in_the_target_format(tmp_path: Path) -> None:
    src = SESSIONS / "anthropic-messages.json"
    out = tmp_path / "sub" / "out.jsonl"
    code, stdout, err = run("convert", str(src), "--to", "sharegpt", "-o", str(out))
    assert code == 0, err
    assert "tjui: warning: sharegpt output drops 1 image" in err
    assert "the input is unchanged" in stdout
    back = load(out)
    assert back.format == "sharegpt"
    assert out.read_bytes().count(b"\n") == 1
    original = load(src)
    # The same conversation (ShareGPT carries the system prompt as its first turn).
    assert [m.role for m in back.messages if m.text and m.role.value != "system"] == [
        m.role for m in original.messages if m.text
    ]


def test_convert_json_and_refusals(tmp_path: Path) -> None:
    src = tmp_path / "chat.json"
    src.write_bytes((SESSIONS / "openai-chat.json").read_bytes())
    code, stdout, _ = run(
        "convert", str(src), "--to", "anthropic", "-o", str(tmp_path / "a.json"), "--json"
    )
    assert code == 0
    got = json.loads(stdout)
    assert got["format"] == "anthropic" and got["source_format"] == "openai"
    assert got["messages"] == len(load(src).messages)
    code, _, err = run("convert", str(src), "--to", "openai", "-o", str(src))
    assert code == 2 and "refusing to write over the input" in err
    code, _, err = run("convert", str(src), "--to", "openai")
    assert code == 2 and "needs -o OUT" in err
    code, _, err = run("convert", str(src), "--to", "codex", "-o", str(tmp_path / "c.jsonl"))
    assert code == 2 and "codex" in err
