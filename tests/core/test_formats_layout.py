"""Whitespace layout: a transcript loads however it is formatted, and JSONL is written as JSONL.

A one-document transcript written on one line (``jq -c .``, ``json.dumps(doc) + "\\n"``)
looks like a one-line JSONL file; a genuine one-record JSONL file must still be read as
what it is. Writers asked for JSON lines give one compact record per line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest

from tinyjuice.formats import (
    FORMAT_NAMES,
    WRITABLE_FORMATS,
    LoadError,
    detect,
    dumps,
    load,
    load_bytes,
    save,
)
from tinyjuice.model import Transcript

SESSIONS = Path(__file__).resolve().parents[2] / "sessions"
MANIFEST = json.loads((SESSIONS / "manifest.json").read_text())["files"]
#: Samples that are a single JSON document (not JSONL, not SQLite).
DOCUMENTS = sorted(
    name
    for name in MANIFEST
    if not name.endswith((".jsonl", ".db", ".md"))
    and isinstance(json.loads((SESSIONS / name).read_bytes()), dict)
)
SAMPLES = sorted(MANIFEST)
LAYOUTS = {
    "compact+lf": lambda doc: json.dumps(doc).encode() + b"\n",
    "compact+crlf": lambda doc: json.dumps(doc).encode() + b"\r\n",
    "compact+blank-lines": lambda doc: json.dumps(doc).encode() + b"\n\n  \n",
    "leading-blank+compact": lambda doc: b"\n\n" + json.dumps(doc).encode() + b"\n",
    "indented+crlf": lambda doc: json.dumps(doc, indent=2).replace("\n", "\r\n").encode(),
}
#: Python and tinyjuice class names that must never reach a user-facing message.
INTERNAL_NAMES = re.compile(
    r"\b(JsonlResult|JsonLine|Source|NoneType|KeyError|TypeError|ValueError|"
    r"AttributeError|IndexError)\b|a JSON (dict|str|int|float|bool)\b"
)


def _sample(name: str) -> bytes:
    return (SESSIONS / name).read_bytes()


def _signature(t: Transcript) -> tuple[object, ...]:
    return (t.format, [(m.role, m.parts, m.tool_calls) for m in t.messages], t.system_prompt)


def test_documents_cover_every_single_document_sample() -> None:
    formats = {MANIFEST[n]["format"] for n in DOCUMENTS}
    assert {"openai", "anthropic", "hermes", "swe-agent"} <= formats


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("name", DOCUMENTS)
def test_document_loads_in_any_layout(name: str, layout: str, tmp_path: Path) -> None:
    expected = load(SESSIONS / name)
    path = tmp_path / ("reformatted" + Path(name).suffix)
    path.write_bytes(LAYOUTS[layout](json.loads(_sample(name))))
    assert detect(path) == MANIFEST[name]["format"]
    assert _signature(load(path)) == _signature(expected)


@pytest.mark.parametrize("ending", [b"\n", b"\r\n"])
@pytest.mark.parametrize("name", DOCUMENTS)
def test_forced_format_reads_a_one_line_document(name: str, ending: bytes) -> None:
    fmt = MANIFEST[name]["format"]
    data = orjson.dumps(json.loads(_sample(name))) + ending
    assert _signature(load_bytes(data, name, fmt)) == _signature(load(SESSIONS / name, fmt))


def test_forced_openai_on_one_line_anthropic_reads_the_document() -> None:
    # The reviewer's repro: it used to fail with "found a JSON JsonlResult".
    data = orjson.dumps(json.loads(_sample("anthropic-messages.json"))) + b"\n"
    t = load_bytes(data, "jqc.json", "openai")
    assert t.format == "openai"
    assert len(t.messages) == len(load(SESSIONS / "anthropic-messages.json", "openai").messages)


def test_one_trajectory_sharegpt_jsonl_stays_jsonl() -> None:
    line = _sample("sharegpt.jsonl").split(b"\n", 1)[0] + b"\n"
    t = load_bytes(line, "one.jsonl")
    assert t.format == "sharegpt"
    assert t.extra["_top_form"] == "jsonl"
    assert dumps(t, "sharegpt") == line  # written back as the same one line


@pytest.mark.parametrize(
    ("name", "fmt"), [("claude-code.jsonl", "claude-code"), ("codex-rollout.jsonl", "codex")]
)
def test_one_line_session_jsonl_is_read_as_that_session(name: str, fmt: str) -> None:
    lines = [ln for ln in _sample(name).split(b"\n") if ln.strip()]
    # The first line that is a message on its own (Claude Code: the first user turn).
    for line in lines:
        try:
            t = load_bytes(line + b"\n", "one.jsonl")
        except LoadError:
            continue
        assert t.format == fmt
        return
    pytest.fail(f"no line of {name} loads on its own")


def test_hermes_gateway_meta_line_alone_is_a_gateway() -> None:
    meta = _sample("hermes-gateway.jsonl").split(b"\n", 1)[0] + b"\n"
    t = load_bytes(meta, "gw.jsonl")
    assert (t.format, t.extra["_hermes_source"], len(t.messages)) == ("hermes", "gateway", 0)


def test_forced_format_on_the_wrong_kind_of_file_says_so() -> None:
    with pytest.raises(LoadError) as info:
        load(SESSIONS / "codex-rollout.jsonl", "openai")
    msg = str(info.value)
    assert "JSON lines" in msg and "openai" in msg
    assert "expected a JSON document for openai, or another --format" in msg
    with pytest.raises(LoadError, match="SQLite database"):
        load(SESSIONS / "hermes-state.db", "anthropic")


def test_unrecognised_one_line_object_is_described_as_one_object() -> None:
    with pytest.raises(LoadError, match=r"unrecognised transcript \(one JSON object\)"):
        load_bytes(b'{"hello": "world"}\n', "other.json")


def _error_messages() -> list[str]:
    inputs: list[tuple[str, bytes]] = [(n, _sample(n)) for n in SAMPLES if not n.endswith(".db")]
    inputs += [(f"{n}-oneline", orjson.dumps(json.loads(_sample(n))) + b"\n") for n in DOCUMENTS]
    inputs += [
        ("ints.json", b"[1, 2, 3]\n"),
        ("string.json", b'"hello"'),
        ("bad-messages.json", b'{"messages": 5}\n'),
        ("lines.jsonl", b'{"a": 1}\n[1]\n'),
    ]
    messages: list[str] = []
    for name, data in inputs:
        for fmt in (None, *FORMAT_NAMES):
            try:
                load_bytes(data, name, fmt)
            except LoadError as exc:
                messages.append(str(exc))
    for fmt in FORMAT_NAMES:
        try:
            load(SESSIONS / "hermes-state.db", fmt)
        except LoadError as exc:
            messages.append(str(exc))
    return messages


def test_no_error_message_names_an_internal_class() -> None:
    messages = _error_messages()
    assert len(messages) > 40  # the forced formats do fail on most inputs
    leaks = [m for m in messages if INTERNAL_NAMES.search(m)]
    assert leaks == []


def test_reader_crash_is_reported_without_python_names(monkeypatch: pytest.MonkeyPatch) -> None:
    from tinyjuice.formats import openai

    def boom(*_: object) -> Transcript:
        raise TypeError("'NoneType' object is not subscriptable")

    monkeypatch.setattr(openai, "read", boom)
    with pytest.raises(LoadError) as info:
        load(SESSIONS / "openai-chat.json")
    msg = str(info.value)
    assert "not a valid openai transcript: a value has an unexpected type" in msg
    assert not INTERNAL_NAMES.search(msg)


# ------------------------------------------------------------------------------ writing


def _records(data: bytes) -> list[dict[str, object]]:
    """The records of a JSONL blob; fails unless every line is one compact JSON object."""
    assert data.endswith(b"\n") and not data.endswith(b"\n\n")
    lines = data[:-1].split(b"\n")
    out = []
    for line in lines:
        value = orjson.loads(line)
        assert isinstance(value, dict)
        assert orjson.dumps(value) == line  # compact: no indentation inside a record
        out.append(value)
    return out


@pytest.mark.parametrize("fmt", WRITABLE_FORMATS)
@pytest.mark.parametrize("name", SAMPLES)
def test_jsonl_layout_is_one_compact_record_per_line(name: str, fmt: str) -> None:
    t = load(SESSIONS / name)
    data = dumps(t, fmt, jsonl=True)
    records = _records(data)
    if fmt == "hermes":
        assert records[0]["role"] == "session_meta"
        assert len(records) == len(t.messages) + 1
    else:
        assert len(records) == 1
    # Same transcript as the document layout gives.
    back = load_bytes(data, "out.jsonl", fmt)
    doc = load_bytes(dumps(t, fmt, jsonl=False), "out.json", fmt)
    assert [(m.role, m.parts, m.tool_calls) for m in back.messages] == [
        (m.role, m.parts, m.tool_calls) for m in doc.messages
    ]
    assert (back.system_prompt, list(back.tools), back.model) == (
        doc.system_prompt,
        list(doc.tools),
        doc.model,
    )


@pytest.mark.parametrize("fmt", WRITABLE_FORMATS)
def test_jsonl_output_is_detected_as_its_format(fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "out.jsonl"
    save(load(SESSIONS / "anthropic-messages.json"), out, fmt)
    assert detect(out) == fmt


@pytest.mark.parametrize("suffix", [".jsonl", ".ndjson", ".JSONL"])
def test_save_to_a_jsonl_path_writes_json_lines(suffix: str, tmp_path: Path) -> None:
    t = load(SESSIONS / "anthropic-messages.json")
    out = tmp_path / ("x" + suffix)
    save(t, out, "sharegpt")
    assert len(_records(out.read_bytes())) == 1


def test_save_to_a_json_path_keeps_the_document_layout(tmp_path: Path) -> None:
    t = load(SESSIONS / "anthropic-messages.json")
    out = tmp_path / "x.json"
    save(t, out, "sharegpt")
    assert out.read_bytes() == dumps(t, "sharegpt")
    assert out.read_bytes().count(b"\n") > 10  # indented, as before


def test_jsonl_false_turns_a_sharegpt_line_into_a_document() -> None:
    line = _sample("sharegpt.jsonl").split(b"\n", 1)[0] + b"\n"
    t = load_bytes(line, "one.jsonl")
    data = dumps(t, "sharegpt", jsonl=False)
    assert data.count(b"\n") > 10
    assert orjson.loads(data) == orjson.loads(line)


def test_hermes_gateway_written_as_jsonl_round_trips(tmp_path: Path) -> None:
    original = load(SESSIONS / "hermes-gateway.jsonl")
    out = tmp_path / "gw.jsonl"
    save(original, out, "hermes")
    again = load(out)
    assert again.extra["_hermes_source"] == "gateway"
    assert again.messages == original.messages
    assert (again.session_id, again.model, list(again.tools)) == (
        original.session_id,
        original.model,
        list(original.tools),
    )
    assert again.extra["platform"] == original.extra["platform"]


def test_openai_list_form_becomes_an_object_line() -> None:
    t = load_bytes(b'[{"role": "user", "content": "hi"}]', "list.json")
    assert t.extra.get("_top_form") == "list"
    assert _records(dumps(t, "openai", jsonl=True)) == [
        {"messages": [{"role": "user", "content": "hi"}]}
    ]


@pytest.mark.parametrize("sample", ["swe-agent.traj", "codex-rollout.jsonl", "claude-code.jsonl"])
@pytest.mark.parametrize("target", ["openai", "hermes"])
def test_a_conversion_reads_back_as_its_target_format(sample: str, target: str) -> None:
    # Source-only fields (a SWE-agent "thought", a Codex item type) are not copied into
    # OpenAI-shaped messages, so the written file is detected as what it now is.
    t = load(SESSIONS / sample)
    back = load_bytes(dumps(t, target), "x.json")
    assert back.format == target
    assert len(back.messages) >= len(t.messages)


def test_save_gives_a_new_file_the_usual_mode_and_keeps_an_existing_ones(tmp_path: Path) -> None:
    import os

    t = load(SESSIONS / "openai-chat.json")
    umask = os.umask(0o022)
    try:
        new = tmp_path / "new.json"
        save(t, new, "openai")
        assert new.stat().st_mode & 0o777 == 0o644  # not mkstemp's 0600
        private = tmp_path / "private.json"
        private.write_bytes(b"{}")
        private.chmod(0o600)
        save(t, private, "openai")
        assert private.stat().st_mode & 0o777 == 0o600
    finally:
        os.umask(umask)
