"""ShareGPT trajectories: detection, tag parsing, pairing, exact write-back, batches, bad input."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from tinyjuice.formats import LoadError, LoadOptions, dumps, load, load_bytes, save
from tinyjuice.formats import anthropic as anthropic_fmt
from tinyjuice.formats import openai as openai_fmt
from tinyjuice.formats import sharegpt as fmt
from tinyjuice.formats._io import Source, parse_jsonl
from tinyjuice.model import Message, Role, TextPart, ThinkingPart, ToolCall, Transcript
from tinyjuice.tokens import TOOLS_IN_TEXT_HINT, RoughCounter, count_transcript, tools_in_text

TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
    for n in ("read_file", "search", "edit_file", "terminal")
]


def _call(name: str, **arguments: Any) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def _resp(content: Any, **keys: Any) -> str:
    return "<tool_response>\n" + json.dumps({**keys, "content": content}) + "\n</tool_response>"


def trajectory() -> dict[str, Any]:
    """A Hermes-style coding trajectory with parallel calls, an error and a compaction summary."""
    return {
        "conversations": [
            {
                "from": "system",
                "value": "You are a function calling AI model.\n<tools>\n"
                + json.dumps(TOOLS)
                + "\n</tools>",
            },
            {"from": "human", "value": "The CLI crashes on empty config files. Fix it."},
            {
                "from": "gpt",
                "value": "<think>\nRead the loader and find where config is parsed.\n</think>\n"
                "Looking at the loader first.\n"
                + _call("read_file", path="tjui/config.py")
                + "\n"
                + _call("search", pattern="load_config(", path="tjui"),
            },
            {
                "from": "tool",
                "value": _resp(
                    "def load_config(p):\n    return toml.loads(p.read_text())['tjui']",
                    tool_call_id="call_r1",
                    name="read_file",
                )
                + "\n"
                + _resp({"matches": ["tjui/cli.py:41"]}, name="search"),
            },
            {
                "from": "gpt",
                "value": "<think>\n\n</think>\n"
                + _call(
                    "edit_file",
                    path="tjui/config.py",
                    old="['tjui']",
                    new=".get('tjui', {})",
                ),
            },
            {"from": "tool", "value": _resp("edited 1 hunk", name="edit_file")},
            {
                "from": "human",
                "value": "[CONTEXT SUMMARY]: Fixed load_config for empty files; tests not run yet.",
            },
            {"from": "gpt", "value": _call("terminal", command="pytest -q tests/test_config.py")},
            {"from": "tool", "value": "<tool_response>\n3 passed in 0.41s\n</tool_response>"},
            {"from": "gpt", "value": "Empty config files now load with defaults; 3 tests pass."},
        ],
        "tools": json.dumps(TOOLS),
        "model": "hermes-4-70b",
        "id": "traj-0007",
        "completed": True,
    }


def _load(doc: Any) -> Transcript:
    return load_bytes(orjson.dumps(doc), "traj.json", "sharegpt")


def _source(doc: Any) -> Source:
    return Source(path=Path("x.json"), data=orjson.dumps(doc), doc=doc, kind="json")


def _jsonl(*docs: Any) -> bytes:
    return b"".join(orjson.dumps(d) + b"\n" for d in docs)


# --------------------------------------------------------------------------- detection


@pytest.mark.parametrize("form", ["object", "list", "jsonl"])
def test_detect_sharegpt_without_format(tmp_path: Path, form: str) -> None:  # needs all modules
    doc = trajectory()
    data = {
        "object": orjson.dumps(doc, option=orjson.OPT_INDENT_2),
        "list": orjson.dumps([doc, doc]),
        "jsonl": _jsonl(doc, doc),
    }[form]
    path = tmp_path / f"traj.{form}"
    path.write_bytes(data)
    t = load(path)
    assert t.format == "sharegpt"
    assert len(t.messages) == 11


def test_sniff_claims_only_trajectories() -> None:
    doc = trajectory()
    assert fmt.sniff(_source(doc)) >= 80
    assert fmt.sniff(_source([doc])) >= 80
    data = _jsonl(doc, doc)
    jsonl = Source(Path("x.jsonl"), data, parse_jsonl("x.jsonl", data, lenient=False), "jsonl")
    assert fmt.sniff(jsonl) >= 80
    # Nobody else claims a trajectory.
    assert openai_fmt.sniff(_source(doc)) == 0 and anthropic_fmt.sniff(_source(doc)) == 0
    assert openai_fmt.sniff(_source([doc])) == 0
    # And it claims nothing else.
    openai_list = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    hermes = {"session_id": "s", "model": "m", "messages": openai_list}
    for other in (openai_list, {"messages": openai_list}, hermes, [], {"conversations": "x"}):
        assert fmt.sniff(_source(other)) == 0, other


# ------------------------------------------------------------------------------ reading


def test_counts_and_fields() -> None:
    t = _load(trajectory())
    assert t.format == "sharegpt"
    assert t.model == "hermes-4-70b"
    assert t.session_id == "traj-0007"
    assert [tool["function"]["name"] for tool in t.tools] == [
        "read_file",
        "search",
        "edit_file",
        "terminal",
    ]
    assert t.role_counts() == {"system": 1, "user": 2, "assistant": 4, "tool": 4}
    assert t.tool_call_count == 4
    assert t.warnings == ()


def test_tool_calls_thinking_and_text_are_parsed() -> None:
    t = _load(trajectory())
    first = t.messages[2]
    assert first.thinking == (ThinkingPart("Read the loader and find where config is parsed."),)
    assert first.text == "Looking at the loader first."
    assert [(c.name, c.parsed_arguments()) for c in first.tool_calls] == [
        ("read_file", {"path": "tjui/config.py"}),
        ("search", {"pattern": "load_config(", "path": "tjui"}),
    ]
    assert first.tool_calls[0].arguments == '{"path":"tjui/config.py"}'
    # An empty <think> block is an empty thinking part, not text.
    edit = t.messages[5]
    assert edit.thinking == (ThinkingPart(""),) and edit.text == ""


def test_call_ids_come_from_responses_or_are_synthesised() -> None:
    t = _load(trajectory())
    first = t.messages[2]
    # The response named its call id: the call takes it. The other is synthesised.
    assert [c.id for c in first.tool_calls] == ["call_r1", "call_2_1"]
    assert first.hints["synthetic_call_ids"] == ("call_2_1",)
    assert t.messages[5].tool_calls[0].id == "call_4_0"
    assert t.messages[8].tool_calls[0].id == "call_7_0"
    results = [m for m in t.messages if m.role is Role.TOOL]
    assert [(r.tool_call_id, r.tool_name) for r in results] == [
        ("call_r1", "read_file"),
        ("call_2_1", "search"),
        ("call_4_0", "edit_file"),
        ("call_7_0", "terminal"),
    ]
    assert results[0].text.startswith("def load_config")
    assert json.loads(results[1].text) == {"matches": ["tjui/cli.py:41"]}
    assert results[3].text == "3 passed in 0.41s"
    assert not any(r.meta.orphan for r in results)
    # Ids are stable: loading twice gives the same ones.
    assert _load(trajectory()).messages == t.messages


def test_responses_pair_by_name_when_out_of_order() -> None:
    doc = trajectory()
    doc["conversations"][3]["value"] = (
        _resp("2 matches", name="search") + "\n" + _resp("file text", name="read_file")
    )
    t = _load(doc)
    calls = {c.id: c.name for c in t.messages[2].tool_calls}
    for result in t.messages[3:5]:
        assert calls[result.tool_call_id] == result.tool_name
    assert t.messages[3].text == "2 matches"


def test_summary_turn_is_flagged() -> None:
    t = _load(trajectory())
    summaries = [m for m in t.messages if m.meta.is_summary]
    assert len(summaries) == 1 and summaries[0].role is Role.USER
    assert summaries[0].text.startswith("[CONTEXT SUMMARY]:")
    assert [m.is_real_user for m in t.messages if m.role is Role.USER] == [True, False]


# ----------------------------------------------------------------------------- writing


@pytest.mark.parametrize("form", ["object", "list", "jsonl"])
def test_round_trip_gives_back_the_same_json_value(form: str) -> None:
    doc = trajectory()
    original = {
        "object": orjson.dumps(doc, option=orjson.OPT_INDENT_2),
        "list": orjson.dumps([doc]),
        "jsonl": _jsonl(doc),
    }[form]
    t = load_bytes(original, "traj", "sharegpt")
    out = dumps(t, "sharegpt")
    assert orjson.loads(out) == orjson.loads(original)
    if form == "jsonl":
        assert out.count(b"\n") == 1


def test_load_save_load_keeps_the_model(tmp_path: Path) -> None:
    path = tmp_path / "traj.json"
    path.write_bytes(orjson.dumps(trajectory()))
    t = load(path, "sharegpt")
    out = tmp_path / "out.json"
    save(t, out, "sharegpt")
    again = load(out, "sharegpt")
    assert again.messages == t.messages
    assert again.tools == t.tools and again.model == t.model


def test_unchanged_values_are_written_byte_for_byte() -> None:
    # Irregular spacing and key order that a canonical renderer would not reproduce.
    odd = (
        "<think>I will list files</think>\n\n  Listing.  \n"
        '<tool_call>{"arguments": {"command": "ls -la"},  "name": "terminal"}</tool_call>\n'
    )
    doc = {
        "conversations": [
            {"from": "human", "value": "ls please"},
            {"from": "gpt", "value": odd},
            {"from": "tool", "value": "total 8\ndrwxr-xr-x  src"},
        ]
    }
    t = _load(doc)
    assert t.messages[1].tool_calls[0].parsed_arguments() == {"command": "ls -la"}
    assert t.messages[2].tool_call_id == t.messages[1].tool_calls[0].id
    out = orjson.loads(dumps(t, "sharegpt"))
    assert out["conversations"][1]["value"] == odd
    assert out["conversations"][2]["value"] == "total 8\ndrwxr-xr-x  src"


def test_changed_turns_are_re_rendered_and_load_back() -> None:
    t = _load(trajectory())
    messages = list(t.messages)
    messages[3] = replace(messages[3], parts=(TextPart("[read_file tjui/config.py: 2 lines]"),))
    messages[2] = replace(
        messages[2],
        parts=(messages[2].parts[0], TextPart("Checking the loader.")),
    )
    changed = replace(t, messages=tuple(messages))
    out = orjson.loads(dumps(changed, "sharegpt"))
    convs = out["conversations"]
    original = trajectory()["conversations"]
    assert convs[2]["value"] != original[2]["value"]
    assert "Checking the loader." in convs[2]["value"]
    assert "[read_file tjui/config.py: 2 lines]" in convs[3]["value"]
    # Untouched turns are the original strings.
    for k in (0, 1, 4, 5, 6, 7, 8, 9):
        assert convs[k] == original[k]
    again = load_bytes(orjson.dumps(out), "x.json", "sharegpt")
    for a, b in zip(changed.messages, again.messages, strict=True):
        assert (a.role, a.parts, a.tool_calls, a.tool_call_id, a.tool_name) == (
            b.role,
            b.parts,
            b.tool_calls,
            b.tool_call_id,
            b.tool_name,
        )


def test_openai_transcript_writes_hermes_layout() -> None:
    t = Transcript(
        messages=(
            Message(Role.USER, (TextPart("Run the tests"),)),
            Message(
                Role.ASSISTANT,
                (TextPart("Running both suites."),),
                tool_calls=(
                    ToolCall("call_a", "terminal", '{"command":"pytest tests/core"}'),
                    ToolCall("call_b", "terminal", '{"command":"pytest tests/ui"}'),
                ),
                reasoning="Two suites, run them in parallel.",
            ),
            Message(
                Role.TOOL, (TextPart("12 passed"),), tool_call_id="call_a", tool_name="terminal"
            ),
            Message(
                Role.TOOL, (TextPart("4 passed"),), tool_call_id="call_b", tool_name="terminal"
            ),
        ),
        format="openai",
        system_prompt="You are a coding agent.",
        tools=tuple(TOOLS),
    )
    out = orjson.loads(dumps(t, "sharegpt"))
    assert [c["from"] for c in out["conversations"]] == ["system", "human", "gpt", "tool"]
    assert json.loads(out["tools"]) == TOOLS
    back = load_bytes(orjson.dumps(out), "x.json", "sharegpt")
    gpt = back.messages[2]
    assert gpt.thinking[0].text == "Two suites, run them in parallel."
    assert [(c.id, c.arguments) for c in gpt.tool_calls] == [
        ("call_a", '{"command":"pytest tests/core"}'),
        ("call_b", '{"command":"pytest tests/ui"}'),
    ]
    assert [(m.tool_call_id, m.text) for m in back.messages[3:]] == [
        ("call_a", "12 passed"),
        ("call_b", "4 passed"),
    ]


# ----------------------------------------------------------------------------- batches


def _batch() -> list[dict[str, Any]]:
    docs = []
    for k in range(3):
        d = trajectory()
        d["id"] = f"traj-{k}"
        docs.append(d)
    return docs


def test_read_loads_the_first_and_read_all_loads_every_one() -> None:
    docs = _batch()
    for data, kind in ((_jsonl(*docs), "jsonl"), (orjson.dumps(docs), "json")):
        t = load_bytes(data, "batch", "sharegpt")
        assert t.session_id == "traj-0"
        assert any("holds 3 trajectories" in w for w in t.warnings)
        if kind == "jsonl":
            source = Source(Path("b"), data, parse_jsonl("b", data, lenient=False), "jsonl")
        else:
            source = Source(Path("b"), data, orjson.loads(data), "json")
        everything = fmt.read_all(source, LoadOptions())
        assert [x.session_id for x in everything] == ["traj-0", "traj-1", "traj-2"]
        assert all(x.tool_call_count == 4 for x in everything)


@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_session_picks_a_trajectory_by_id_or_number(layout: str) -> None:
    docs = _batch()
    data = _jsonl(*docs) if layout == "jsonl" else orjson.dumps(docs)

    def pick(session: str) -> Transcript:
        return fmt.read(
            Source(
                Path("b"),
                data,
                parse_jsonl("b", data, lenient=False) if layout == "jsonl" else orjson.loads(data),
                layout,
            ),
            LoadOptions(session=session),
        )

    assert pick("traj-2").session_id == "traj-2"
    assert pick("2").session_id == "traj-1"
    assert pick("#3").session_id == "traj-2"
    assert any("loaded trajectory 2" in w for w in pick("2").warnings)
    for missing in ("4", "0", "traj-9", "#x"):
        with pytest.raises(LoadError, match=r"no trajectory .* among the 3 .* number from 1 to 3"):
            pick(missing)
    # Without --session the first is loaded, and the warning says how to pick another.
    first = load_bytes(data, "batch", "sharegpt")
    assert first.session_id == "traj-0"
    assert any("--session N" in w for w in first.warnings)


@pytest.mark.parametrize("layout", ["jsonl", "json"])
def test_integer_ids_match_their_digits_before_numbers(layout: str, tmp_path: Path) -> None:
    docs = _batch()
    for d, ident in zip(docs, (1001, 1, "x"), strict=True):
        d["id"] = ident
    path = tmp_path / ("b.jsonl" if layout == "jsonl" else "b.json")
    path.write_bytes(_jsonl(*docs) if layout == "jsonl" else orjson.dumps(docs))
    # --session 1001 names the trajectory whose "id" is the integer 1001.
    assert load(path, "sharegpt", session="1001").extra["id"] == 1001
    assert load(path, "sharegpt", session="1001").session_id == "1001"
    # An exact id match wins over the 1-based number: "1" is the one whose id is 1.
    assert load(path, "sharegpt", session="1").extra["id"] == 1
    assert load(path, "sharegpt", session="#1").extra["id"] == 1001
    assert load(path, "sharegpt", session="3").extra["id"] == "x"
    with pytest.raises(LoadError, match="no trajectory '1002'"):
        load(path, "sharegpt", session="1002")
    # A bool is not an integer id.
    docs[2]["id"] = True
    path.write_bytes(_jsonl(*docs) if layout == "jsonl" else orjson.dumps(docs))
    with pytest.raises(LoadError, match="no trajectory 'True'"):
        load(path, "sharegpt", session="True")


def test_system_turn_holding_the_tools_is_hinted() -> None:
    t = _load(trajectory())
    assert t.messages[0].hints.get(TOOLS_IN_TEXT_HINT) is True
    assert tools_in_text(t)
    assert not any(m.hints.get(TOOLS_IN_TEXT_HINT) for m in t.messages[1:])
    # A list-form tools field, and a block with other spacing, are the same schemas.
    doc = trajectory()
    doc["tools"] = TOOLS
    doc["conversations"][0]["value"] = (
        "Agent.\n<tools>\n" + json.dumps(TOOLS, indent=2) + "\n</tools>"
    )
    assert tools_in_text(_load(doc))
    # Unchanged on write-back.
    assert orjson.loads(dumps(_load(trajectory()), "sharegpt")) == trajectory()


@pytest.mark.parametrize(
    "system",
    [
        "You are a function calling AI model.",  # no block
        "Call tools inside <tools></tools> tags.",  # a mention in prose, not a block
        "Agent.\n<tools>\n[]\n</tools>",  # other schemas than the tools field
        "Agent.\n<tools>\nnot json\n</tools>",
        "Agent.\n<tools>\n" + json.dumps(TOOLS),  # never closed
    ],
)
def test_system_turn_without_the_same_tools_is_not_hinted(system: str) -> None:
    doc = trajectory()
    doc["conversations"][0]["value"] = system
    t = _load(doc)
    assert not tools_in_text(t)
    assert count_transcript(t, RoughCounter()).tools > 0


def test_embedded_tools_are_counted_once() -> None:
    # tjui inspect sessions/sharegpt.jsonl: the tool schemas were counted in the system
    # turn and again as tool definitions (~27% too much).
    counter = RoughCounter()
    t = _load(trajectory())
    tokens = count_transcript(t, counter)
    assert tokens.tools == 0
    assert tokens.total == tokens.messages_total
    apart = _load({**trajectory(), "conversations": trajectory()["conversations"][1:]})
    assert count_transcript(apart, counter).tools > 0  # declared only: counted on their own


def test_iter_trajectories_streams_jsonl_line_by_line(tmp_path: Path) -> None:
    docs = _batch()
    path = tmp_path / "batch.jsonl"
    path.write_bytes(_jsonl(docs[0], docs[1]) + b'{"conversations": [\n' + _jsonl(docs[2]))
    it = fmt.iter_trajectories(path)
    # The first two come out before the broken third line is ever parsed.
    assert next(it).session_id == "traj-0"
    assert next(it).session_id == "traj-1"
    with pytest.raises(LoadError) as info:
        next(it)
    assert info.value.line == 3
    lenient = [t.session_id for t in fmt.iter_trajectories(path, lenient=True)]
    assert lenient == ["traj-0", "traj-1", "traj-2"]


def test_lenient_load_skips_and_reports_bad_lines(tmp_path: Path) -> None:
    docs = _batch()
    path = tmp_path / "batch.jsonl"
    path.write_bytes(_jsonl(docs[0]) + b'{"conversations": [\n' + _jsonl(docs[1]))
    with pytest.raises(LoadError) as info:
        load(path, "sharegpt")
    assert info.value.line == 2
    t = load(path, "sharegpt", lenient=True)
    assert t.session_id == "traj-0"
    assert any("skipped 1 malformed line(s): 2" in w for w in t.warnings)
    assert any("holds 2 trajectories" in w for w in t.warnings)


def test_iter_trajectories_reads_a_json_list(tmp_path: Path) -> None:
    path = tmp_path / "batch.json"
    path.write_bytes(orjson.dumps(_batch(), option=orjson.OPT_INDENT_2))
    assert [t.session_id for t in fmt.iter_trajectories(path)] == ["traj-0", "traj-1", "traj-2"]
    with pytest.raises(LoadError):
        list(fmt.iter_trajectories(tmp_path / "missing.jsonl"))


# --------------------------------------------------------------------------- bad input


def test_wrong_types_name_the_json_path() -> None:
    doc = trajectory()
    doc["conversations"] = {"from": "human"}
    with pytest.raises(LoadError) as info:
        _load(doc)
    assert info.value.json_path == "$.conversations"
    assert "a list of turns" in str(info.value)

    docs = _batch()
    docs[1]["conversations"][2]["value"] = None
    # Loading the first trajectory does not touch the broken second one; read_all does.
    assert load_bytes(orjson.dumps(docs), "batch.json", "sharegpt").session_id == "traj-0"
    with pytest.raises(LoadError) as info:
        fmt.read_all(Source(Path("batch.json"), b"", docs, "json"), LoadOptions())
    assert info.value.json_path == "$[1].conversations[2].value"
    assert info.value.expected == "a string"

    data = _jsonl(trajectory(), trajectory())
    bad = trajectory()
    bad["conversations"][4]["from"] = "robot"
    data += _jsonl(bad)
    source = Source(Path("b.jsonl"), data, parse_jsonl("b.jsonl", data, lenient=False), "jsonl")
    with pytest.raises(LoadError) as info:
        fmt.read_all(source, LoadOptions())
    err = info.value
    assert (err.line, err.json_path) == (3, "$.conversations[4].from")
    assert "'human'" in (err.expected or "") and "line 3" in str(err)


def test_a_missing_key_is_not_called_null() -> None:
    with pytest.raises(LoadError) as info:
        _load({"foo": 1})
    assert info.value.problem == "'conversations' is missing"
    assert info.value.json_path == "$.conversations"
    with pytest.raises(LoadError) as info:
        _load({"conversations": None})
    assert info.value.problem == "'conversations' is a JSON null"
    doc = trajectory()
    del doc["conversations"][1]["value"]
    with pytest.raises(LoadError) as info:
        _load(doc)
    assert (info.value.problem, info.value.json_path) == (
        "value is missing",
        "$.conversations[1].value",
    )


def test_invalid_json_tool_call_is_kept_verbatim() -> None:
    doc = trajectory()
    broken = '<tool_call>\n{"name": "terminal", "arguments": {"command": "pytest -q"\n</tool_call>'
    doc["conversations"][7]["value"] = broken
    t = _load(doc)
    call = t.messages[8].tool_calls[0]
    assert call.name == "terminal"
    assert call.arguments == '{"command": "pytest -q"'
    assert not call.arguments_valid
    assert t.messages[9].tool_call_id == call.id
    assert any("invalid JSON arguments" in w for w in t.warnings)
    assert orjson.loads(dumps(t, "sharegpt")) == doc


def test_response_without_a_call_is_loaded_and_flagged() -> None:
    doc = trajectory()
    doc["conversations"].insert(
        2, {"from": "tool", "value": "<tool_response>\nstale output\n</tool_response>"}
    )
    t = _load(doc)
    orphan = t.messages[2]
    assert orphan.role is Role.TOOL and orphan.meta.orphan and orphan.text == "stale output"
    assert sum(m.meta.orphan for m in t.messages) == 1
    assert any("without a matching tool call" in w for w in t.warnings)
    assert orjson.loads(dumps(t, "sharegpt")) == doc
