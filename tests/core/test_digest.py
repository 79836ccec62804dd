"""Tool-output prepass: digests per tool kind, duplicates, tail protection, argument
shrinking (with a property test), records, identity and speed."""

from __future__ import annotations

import time
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.digest import (
    SHRINK_MARKER_MAX,
    ToolKind,
    digest_line,
    digest_tool_results,
    parse_exit_code,
    shrink_arguments,
    shrink_json_string_leaves,
    tool_kind,
)
from tinyjuice.model import (
    MediaPart,
    Message,
    MessageMeta,
    Role,
    TextPart,
    ToolCall,
)

SENTINEL = "BODY-SENTINEL-7f3a"


def _call(call_id: str, name: str, args: Any) -> Message:
    raw = args if isinstance(args, str) else orjson.dumps(args).decode()
    return Message(Role.ASSISTANT, tool_calls=(ToolCall(call_id, name, raw),))


def _result(call_id: str | None, text: str, name: str | None = None, **kw: Any) -> Message:
    return Message(Role.TOOL, parts=(TextPart(text),), tool_call_id=call_id, tool_name=name, **kw)


def _user(text: str) -> Message:
    return Message(Role.USER, parts=(TextPart(text),))


def _body(lines: int, tag: str = "line") -> str:
    return "".join(f"{tag} {i}: some output text here\n" for i in range(lines))


# ------------------------------------------------------------------ tool kinds


@pytest.mark.parametrize(
    ("name", "args", "kind"),
    [
        # Hermes
        ("terminal", None, ToolKind.TERMINAL),
        ("read_file", None, ToolKind.READ_FILE),
        ("search_files", None, ToolKind.SEARCH),
        ("web_extract", None, ToolKind.WEB),
        ("delegate_task", None, ToolKind.DELEGATE),
        ("process", None, ToolKind.PROCESS),
        ("write_file", None, ToolKind.EDIT),
        # Claude Code
        ("Bash", None, ToolKind.TERMINAL),
        ("Read", None, ToolKind.READ_FILE),
        ("Grep", None, ToolKind.SEARCH),
        ("Glob", None, ToolKind.SEARCH),
        ("WebFetch", None, ToolKind.WEB),
        ("Task", None, ToolKind.DELEGATE),
        ("BashOutput", None, ToolKind.PROCESS),
        ("Edit", None, ToolKind.EDIT),
        # Codex
        ("shell", None, ToolKind.TERMINAL),
        ("local_shell", None, ToolKind.TERMINAL),
        ("exec_command", None, ToolKind.TERMINAL),
        ("write_stdin", None, ToolKind.PROCESS),
        ("apply_patch", None, ToolKind.EDIT),
        # SWE-agent
        ("bash", None, ToolKind.TERMINAL),
        ("str_replace_editor", {"command": "view", "path": "/r/a.py"}, ToolKind.READ_FILE),
        ("str_replace_editor", {"command": "str_replace", "path": "/r/a.py"}, ToolKind.EDIT),
        # MCP-prefixed and unknown
        ("mcp__filesystem__read_file", None, ToolKind.READ_FILE),
        ("mcp__postgres__query", None, ToolKind.GENERIC),
        ("frobnicate", None, ToolKind.GENERIC),
        (None, None, ToolKind.GENERIC),
    ],
)
def test_tool_kind_table(name: str | None, args: Any, kind: ToolKind) -> None:
    assert tool_kind(name, args) is kind


# ------------------------------------------------------------------- exit codes


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ('{"output": "boom", "exit_code": 1, "error": null}', 1),
        ('{"output": "ok", "metadata": {"exit_code": 0, "duration_seconds": 1.2}}', 0),
        ('{"stdout": "", "stderr": "x", "returncode": 2}', 2),
        ("Exit code: 1\nWall time: 0.4 seconds\nOutput:\nFAILED", 1),
        ("Exit code 127\n/bin/sh: foo: command not found", 127),
        ("Chunk ID: a1\nWall time: 2.0 seconds\nProcess exited with code 3\nOutput:\nx", 3),
        (_body(200) + "Process exited with code 4\n", 4),
        ("all good, nothing reported\n" * 5, None),
        ('{"output": "x", "exit_code": true}', None),
        # A mention in the middle of a long body is not a report: never guess.
        (_body(100) + "the script will exit code 0 on success\n" + _body(100), None),
    ],
)
def test_parse_exit_code(output: str, code: int | None) -> None:
    assert parse_exit_code(output) == code


# ------------------------------------------------------------ digests per kind


def test_terminal_digests_hermes_codex_claude_swe() -> None:
    hermes_out = orjson.dumps(
        {"output": _body(120) + SENTINEL, "exit_code": 1, "error": None}
    ).decode()
    line = digest_line("terminal", {"command": "pytest -q tests/"}, hermes_out)
    assert line.startswith("[terminal] ran `pytest -q tests/` -> exit 1, 121 lines, ")
    assert "bytes" in line

    codex_out = "Exit code: 0\nWall time: 12.3 seconds\nOutput:\n" + _body(40)
    line = digest_line(
        "shell", {"command": ["bash", "-lc", "cargo build"], "workdir": "/repo"}, codex_out
    )
    assert (
        line == f"[shell] ran `cargo build` in /repo -> exit 0, 40 lines, {len(_body(40)):,} bytes"
    )

    line = digest_line(
        "exec_command",
        '{"cmd": "npm test"}',
        "Chunk ID: 9\nWall time: 2 seconds\nProcess exited with code 1\nOutput:\n" + _body(10),
    )
    assert line.startswith("[exec_command] ran `npm test` -> exit 1, 10 lines")

    claude = "Exit code 2\nmake: *** [all] Error 2\n" + _body(30)
    line = digest_line(
        "Bash", {"command": "make all", "description": "build"}, claude, is_error=True
    )
    assert line.startswith("[Bash] ran `make all` -> exit 2, 32 lines")

    swe = "Traceback (most recent call last):\n" + _body(20) + "ValueError: bad\n"
    line = digest_line("bash", {"command": "python reproduce.py"}, swe)
    assert "-> exit ?, 22 lines" in line  # unknown exit code is never reported as 0
    line = digest_line("bash", {"command": "python reproduce.py"}, swe, is_error=True)
    assert "-> error, exit ?, 22 lines" in line


def test_terminal_command_is_one_clipped_line() -> None:
    cmd = "cat <<'EOF' > big.txt\n" + "x" * 500 + "\nEOF"
    line = digest_line("terminal", {"command": cmd}, _body(5))
    assert "\n" not in line
    assert "…" in line and len(line) < 200
    raw_args = digest_line("bash", "ls -la /tmp", _body(5))  # non-JSON arguments
    assert raw_args.startswith("[bash] ran `ls -la /tmp` -> exit ?")


def test_read_file_digests() -> None:
    hermes = orjson.dumps({"content": _body(80) + SENTINEL, "total_lines": 420}).decode()
    line = digest_line("read_file", {"path": "src/app.py", "offset": 1, "limit": 80}, hermes)
    assert line.startswith("[read_file] read src/app.py lines 1-80 (of 420 lines) -> 81 lines")

    claude = "".join(f"{i:>6}\tdef f{i}(): pass\n" for i in range(1, 61))
    line = digest_line("Read", {"file_path": "/repo/src/app.py"}, claude)
    assert line == f"[Read] read /repo/src/app.py from line 1 -> 60 lines, {len(claude):,} bytes"

    swe = "Here's the result of running `cat -n` on /repo/x.py:\n" + _body(40)
    line = digest_line(
        "str_replace_editor", {"command": "view", "path": "/repo/x.py", "view_range": [10, 49]}, swe
    )
    assert line.startswith("[str_replace_editor] read /repo/x.py lines 10-49 -> 41 lines")

    deep = "/very/long/" + "nested/" * 30 + "module_file.py"
    line = digest_line("read_file", {"path": deep}, _body(3))
    assert "module_file.py" in line and "/very/long/" in line  # both ends of a long path


def test_search_digests_carry_count_and_clipped_evidence() -> None:
    hermes = orjson.dumps(
        {
            "total_count": 14,
            "matches": [
                {"path": "core/a.py", "line": 10, "content": "def compress(messages):"},
                {"path": "core/b.py", "line": 22, "content": "    return compress(x)" + "y" * 200},
                {"path": "core/c.py", "line": 5, "content": "# compress later"},
                {"path": "core/d.py", "line": 7, "content": SENTINEL},
            ],
        }
    ).decode()
    line = digest_line(
        "search_files", {"pattern": "compress", "target": "content", "path": "core"}, hermes
    )
    assert line.startswith("[search_files] content search for 'compress' in core -> 14 matches")
    assert "top: core/a.py:10: def compress(messages):" in line
    assert SENTINEL not in line  # only the top three
    assert "y" * 100 not in line  # evidence is clipped

    grep = "Found 3 files\nsrc/a.py\nsrc/b.py\nsrc/c.py\n"
    line = digest_line("Grep", {"pattern": "TODO", "output_mode": "files_with_matches"}, grep)
    assert line.startswith("[Grep] file search for 'TODO' -> 3 files, ")
    assert line.endswith("top: src/a.py | src/b.py | src/c.py")

    content = "".join(f"src/m{i}.py:{i}: x = compute({i})\n" for i in range(25)) + SENTINEL
    line = digest_line("Grep", {"pattern": "compute\\(", "path": "src"}, content)
    assert "content search for 'compute\\(' in src -> 26 result lines" in line
    assert SENTINEL not in line

    glob = "\n".join(f"core/tinyjuice/m{i}.py" for i in range(30))
    line = digest_line("Glob", {"pattern": "**/*.py"}, glob)
    assert line.startswith("[Glob] file search for '**/*.py' -> 30 result lines")

    none = digest_line("Grep", {"pattern": "nothing"}, "No matches found")
    assert "-> 0 matches" in none and "top:" not in none


def test_web_delegate_process_edit_generic_digests() -> None:
    page = "<html>" + "text " * 600 + SENTINEL + "</html>"
    line = digest_line(
        "web_extract",
        {"urls": ["https://docs.python.org/3/library/re.html", "https://x.y/z"]},
        page,
    )
    assert line == (
        f"[web_extract] fetched https://docs.python.org/3/library/re.html (+1 more) "
        f"-> 1 line, {len(page):,} bytes"
    )
    line = digest_line("WebFetch", {"url": "https://example.com/a", "prompt": "summarize"}, page)
    assert line.startswith("[WebFetch] fetched https://example.com/a -> ")
    line = digest_line("web_search", {"query": "python re fullmatch"}, page)
    assert line.startswith("[web_search] searched 'python re fullmatch' -> ")

    delegate = orjson.dumps({"status": "completed", "summary": SENTINEL * 30}).decode()
    line = digest_line(
        "delegate_task",
        {"goal": "Investigate the flaky network test in tests/test_net.py and fix it quickly"},
        delegate,
    )
    assert line.startswith("[delegate_task] delegated 'Investigate the flaky network test in")
    assert "…'" in line and "status completed" in line
    line = digest_line(
        "Task",
        {"description": "Find callers", "prompt": "long prompt " * 50, "subagent_type": "Explore"},
        "Found them: " + SENTINEL * 20,
    )
    assert line.startswith("[Task] delegated 'Find callers' to Explore -> ")

    proc = orjson.dumps({"status": "exited", "exit_code": 0, "output": _body(12)}).decode()
    line = digest_line("process", {"action": "poll", "session_id": "proc_9f2c"}, proc)
    assert line.startswith("[process] poll session_id=proc_9f2c -> exit 0, status exited, 12 lines")
    line = digest_line(
        "BashOutput", {"bash_id": "shell_3"}, "<status>running</status>\n" + _body(9)
    )
    assert line.startswith("[BashOutput] call bash_id=shell_3 -> 10 lines")
    line = digest_line("write_stdin", {"session_id": 7, "chars": "y\n"}, _body(4))
    assert line.startswith("[write_stdin] call session_id=7 -> 4 lines")

    patch = "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x\n+y\n*** Add File: src/b.py\n"
    line = digest_line("apply_patch", {"input": patch}, "Success. Updated files:\n" + _body(5))
    assert line.startswith("[apply_patch] edited src/a.py (+1 more) -> 6 lines")
    line = digest_line(
        "str_replace_editor", {"command": "str_replace", "path": "/r/x.py"}, _body(24)
    )
    assert line.startswith("[str_replace_editor] str_replace /r/x.py -> 24 lines")

    line = digest_line(
        "mcp__postgres__query",
        {"options": {"a": 1}, "sql": "SELECT * FROM users WHERE id = 5", "limit": 50},
        _body(40) + SENTINEL,
    )
    assert line == (
        f"[mcp__postgres__query] sql='SELECT * FROM users WHERE id = 5', limit=50 "
        f"-> 41 lines, {len(_body(40) + SENTINEL):,} bytes"
    )
    assert digest_line(None, None, _body(3)).startswith("[tool] -> 3 lines")


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("terminal", {"command": "pytest"}),
        ("read_file", {"path": "a.py"}),
        ("WebFetch", {"url": "https://e.com"}),
        ("delegate_task", {"goal": "g"}),
        ("process", {"action": "log", "session_id": "p1"}),
        ("Edit", {"file_path": "a.py"}),
        ("whatever", {"k": "v"}),
    ],
)
def test_digest_never_contains_the_output_body(name: str, args: dict[str, Any]) -> None:
    out = _body(30) + SENTINEL + "\n" + _body(30)
    line = digest_line(name, args, out)
    assert SENTINEL not in line
    assert "some output text" not in line
    assert "\n" not in line


def test_unicode_output_is_counted_in_bytes() -> None:
    out = "héllo wörld ☕\n" * 10
    line = digest_line("terminal", {"command": "echo"}, out)
    assert f"{len(out.encode()):,} bytes" in line and "10 lines" in line


# -------------------------------------------------------------- argument shrink


def test_json_argument_shrink_preserves_parseability() -> None:
    args = {
        "path": "src/app.py",
        "edits": [{"old": "a" * 900, "new": 'b"\\\n' * 300, "line": 10, "replace_all": False}],
        "note": None,
        "ratio": 0.5,
    }
    raw = orjson.dumps(args).decode()
    out = shrink_arguments(raw)
    assert out != raw
    parsed = orjson.loads(out)
    assert list(parsed) == list(args)
    edit = parsed["edits"][0]
    assert edit["line"] == 10 and edit["replace_all"] is False
    assert parsed["note"] is None and parsed["ratio"] == 0.5 and parsed["path"] == "src/app.py"
    assert edit["old"] == "a" * 200 + "…[+700 chars]"
    new = 'b"\\\n' * 300
    assert edit["new"] == new[:200] + f"…[+{len(new) - 200} chars]"
    assert shrink_arguments(out, over=0) == out  # shrinking again changes nothing


def test_non_json_argument_shrink_is_noop() -> None:
    raw = "cd /repo && " + "echo " + "x" * 1000
    assert shrink_arguments(raw) is raw
    truncated = '{"path": "a.py", "content": "' + "y" * 1000  # already broken JSON
    assert shrink_arguments(truncated) is truncated
    # Valid JSON with nothing to cut keeps its original formatting.
    spaced = orjson.dumps({"items": ["short"] * 100}, option=orjson.OPT_INDENT_2).decode()
    assert len(spaced) > 500
    assert shrink_arguments(spaced) is spaced
    small = '{"content": "' + "z" * 400 + '"}'  # under the 500-char trigger
    assert shrink_arguments(small) is small


def test_large_write_file_argument_stays_valid_json() -> None:
    code = "".join(
        f'def f{i}(x):\n    return "q\\"uote" + \'{i}\' + "\\t"  # ü\n' for i in range(2000)
    )
    raw = orjson.dumps({"path": "src/generated.py", "content": code}).decode()
    assert len(raw) > 50_000
    out = shrink_arguments(raw, 200, 500)
    parsed = orjson.loads(out)
    assert parsed["path"] == "src/generated.py"
    assert parsed["content"].startswith(code[:200])
    assert len(parsed["content"]) <= 200 + SHRINK_MARKER_MAX
    assert parsed["content"].endswith(f"…[+{len(code) - 200} chars]")
    assert len(out) < 400


def test_unicode_preserved_without_escaping() -> None:
    text = "日本語のテキスト — émoji 🎉 " * 40
    raw = orjson.dumps({"path": "docs/読んで.md", "content": text}).decode()
    out = shrink_arguments(raw)
    assert "\\u" not in out
    assert "日本語のテキスト — émoji 🎉" in out and "docs/読んで.md" in out
    assert orjson.loads(out)["content"] == text[:200] + f"…[+{len(text) - 200} chars]"


def test_long_paths_and_urls_are_cut_in_the_middle() -> None:
    path = "/workspace/" + "deep/" * 100 + "target_file.py"
    url = "https://example.com/" + "a" * 400 + "/page.html?x=1"
    out = shrink_json_string_leaves({"path": path, "url": url, "id": "call_" + "9" * 210}, 60)
    assert out["path"].startswith("/workspace/") and out["path"].endswith("target_file.py")
    assert out["url"].startswith("https://example.com/") and out["url"].endswith("?x=1")
    assert "…[+" in out["path"] and len(out["path"]) <= 60 + SHRINK_MARKER_MAX
    # Identifiers that fit within cap + marker allowance are kept whole.
    kept = {"id": "x" * (60 + SHRINK_MARKER_MAX)}
    assert shrink_json_string_leaves(kept, 60) is kept


_JSON_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=400)
_JSON_LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | _JSON_TEXT
)
_JSON_VALUES = st.recursive(
    _JSON_LEAVES,
    lambda children: (
        st.lists(children, max_size=5)
        | st.dictionaries(
            st.text(st.characters(blacklist_categories=("Cs",)), max_size=12), children, max_size=5
        )
    ),
    max_leaves=25,
)


def _same_shape(before: Any, after: Any, cap: int) -> None:
    if isinstance(before, dict):
        assert isinstance(after, dict)
        assert list(after) == list(before)
        for k in before:
            _same_shape(before[k], after[k], cap)
    elif isinstance(before, list):
        assert isinstance(after, list) and len(after) == len(before)
        for a, b in zip(before, after, strict=True):
            _same_shape(a, b, cap)
    elif isinstance(before, str):
        assert isinstance(after, str)
        assert len(after) <= cap + SHRINK_MARKER_MAX
        if len(before) <= cap + SHRINK_MARKER_MAX:
            assert after == before
        else:
            assert "…[+" in after
    else:
        assert after == before and type(after) is type(before)


@settings(max_examples=120, deadline=None)
@given(_JSON_VALUES, st.integers(min_value=0, max_value=300))
def test_shrink_property_valid_json_same_structure_bounded_strings(value: Any, cap: int) -> None:
    shrunk = shrink_json_string_leaves(value, cap)
    round_trip = orjson.loads(orjson.dumps(shrunk))
    assert round_trip == shrunk
    _same_shape(value, shrunk, cap)
    assert shrink_json_string_leaves(shrunk, cap) == shrunk  # idempotent
    # The string form: always valid JSON, same structure.
    raw = orjson.dumps(value).decode()
    out = shrink_arguments(raw, cap, over=0)
    _same_shape(orjson.loads(raw), orjson.loads(out), cap)


# ---------------------------------------------------------- digest_tool_results


def _session() -> list[Message]:
    """A small realistic session; indices are referred to by the tests."""
    read_out = "".join(f"{i:>6}\tline {i} of app.py\n" for i in range(1, 101))
    return [
        Message(Role.SYSTEM, parts=(TextPart("You are a coding agent."),)),  # 0
        _user("Fix the failing test"),  # 1
        _call("c1", "read_file", {"path": "src/app.py"}),  # 2
        _result("c1", read_out, "read_file"),  # 3
        _call("c2", "terminal", {"command": "pytest -q"}),  # 4
        _result(  # 5
            "c2", orjson.dumps({"output": _body(60, "FAILED"), "exit_code": 1}).decode(), "terminal"
        ),
        _call("c3", "read_file", {"path": "src/app.py"}),  # 6
        _result("c3", read_out, "read_file"),  # 7
        Message(Role.ASSISTANT, parts=(TextPart("I see the bug."),)),  # 8
        _call("c4", "read_file", {"path": "src/app.py"}),  # 9
        _result("c4", read_out, "read_file"),  # 10
        _call("c5", "terminal", {"command": "pytest -q"}),  # 11
        _result(
            "c5", orjson.dumps({"output": _body(5), "exit_code": 0}).decode(), "terminal"
        ),  # 12
        Message(Role.ASSISTANT, parts=(TextPart("Fixed."),)),  # 13
    ]


def test_repeated_read_file_keeps_only_newest_full_copy() -> None:
    msgs = _session()
    res = digest_tool_results(msgs, protect_from=9)
    out = res.messages
    assert out[3].text == "[read_file] same output as message #10 (call c4)"
    assert out[7].text == "[read_file] same output as message #10 (call c4)"
    assert out[10] is msgs[10]  # the newest copy stays whole
    full = [m for m in out if m.role is Role.TOOL and m.text == msgs[10].text]
    assert len(full) == 1
    # A changed file is not a duplicate: it gets a digest instead.
    changed = list(msgs)
    changed[7] = _result("c3", msgs[7].text + "extra line\n", "read_file")
    res2 = digest_tool_results(changed, protect_from=9)
    assert res2.messages[7].text.startswith("[read_file] read src/app.py from line 1 -> 101 lines")
    # With dedup off, every old copy gets its own digest.
    res3 = digest_tool_results(msgs, protect_from=9, dedup=False)
    assert res3.messages[3].text.startswith("[read_file] read src/app.py")


def test_duplicates_point_to_the_newest_copy_even_when_it_is_old() -> None:
    msgs = _session()
    res = digest_tool_results(msgs, protect_from=len(msgs))
    assert res.messages[3].text == "[read_file] same output as message #10 (call c4)"
    assert res.messages[10].text.startswith("[read_file] read src/app.py")
    dup = [r for r in res.records if r.kind == "duplicate"]
    assert [(r.index, r.ref_index) for r in dup] == [(3, 10), (7, 10)]


def test_old_terminal_output_becomes_command_exit_line_count_digest() -> None:
    msgs = _session()
    res = digest_tool_results(msgs, protect_from=9)
    digest = res.messages[5]
    body = _body(60, "FAILED")
    assert digest.text == f"[terminal] ran `pytest -q` -> exit 1, 60 lines, {len(body):,} bytes"
    assert "FAILED 0" not in digest.text


def test_recent_tail_output_remains_exact() -> None:
    msgs = _session()
    res = digest_tool_results(msgs, protect_from=9)
    for i in range(9, len(msgs)):
        assert res.messages[i] is msgs[i]
    # Messages the prepass did not change are the very same objects.
    for i in (0, 1, 2, 4, 6, 8):
        assert res.messages[i] is msgs[i]
    # protect_from=0 protects everything; out-of-range values are clamped.
    assert digest_tool_results(msgs, protect_from=0).records == ()
    assert digest_tool_results(msgs, protect_from=-5).messages == tuple(msgs)
    # Index 12 (a 5-line result) is under min_chars and stays as it is.
    assert [r.index for r in digest_tool_results(msgs, protect_from=10**9).records] == [3, 5, 7, 10]


def test_each_digest_recorded_in_report() -> None:
    msgs = _session()
    long_args = {"path": "src/new.py", "content": "print('hi')\n" * 100}
    msgs.insert(12, _call("c6", "write_file", long_args))  # index 12
    msgs.insert(13, _result("c6", "wrote 1,200 bytes", "write_file"))  # 13: too short
    res = digest_tool_results(msgs, protect_from=14)
    by_index = {r.index: r for r in res.records}
    assert sorted(by_index) == [3, 5, 7, 10, 12]
    assert [r.index for r in res.records] == sorted(r.index for r in res.records)
    for i in (3, 5, 7, 10):
        rec = by_index[i]
        assert rec.call_id == msgs[i].tool_call_id
        assert rec.tool_name == msgs[i].tool_name
        assert rec.chars_before == len(msgs[i].text)
        assert rec.chars_after == len(res.messages[i].text)
        assert rec.chars_saved > 0
    assert by_index[5].kind == "digest" and by_index[3].kind == "duplicate"
    shrunk = by_index[12]
    assert (
        shrunk.kind == "args_shrunk" and shrunk.call_id == "c6" and shrunk.tool_name == "write_file"
    )
    new_args = res.messages[12].tool_calls[0].arguments
    assert shrunk.chars_after == len(new_args) < shrunk.chars_before
    assert orjson.loads(new_args)["path"] == "src/new.py"
    assert res.changed_indices == (3, 5, 7, 10, 12)
    assert res.chars_saved == sum(r.chars_before - r.chars_after for r in res.records)
    # Set to None, argument shrinking is off.
    off = digest_tool_results(msgs, protect_from=14, shrink_args_over=None)
    assert 12 not in {r.index for r in off.records}


def test_digest_message_keeps_fields_and_marks_generated() -> None:
    meta = MessageMeta(source_id="row-5", original_index=5, is_error=True)
    img = MediaPart("image/png", 1234, data="aGVsbG8=")
    original = Message(
        Role.TOOL,
        parts=(TextPart("Exit code 1\n" + _body(40), extra={"cache": 1}), img, TextPart("tail")),
        tool_call_id="c9",
        tool_name="Bash",
        meta=meta,
        extra={"uuid": "u-1"},
        hints={"content_form": "parts"},
    )
    msgs = [_call("c9", "Bash", {"command": "make"}), original, _user("next")]
    res = digest_tool_results(msgs, protect_from=2)
    d = res.messages[1]
    assert d.role is Role.TOOL and d.tool_call_id == "c9" and d.tool_name == "Bash"
    assert d.meta.generated_by == "digest"
    assert d.meta.source_id == "row-5" and d.meta.original_index == 5 and d.meta.is_error
    assert d.extra == {"uuid": "u-1"} and d.hints == {"content_form": "parts"}
    assert len(d.parts) == 2 and d.parts[1] is img  # media is left to the media reducer
    first = d.parts[0]
    assert isinstance(first, TextPart) and first.extra == {"cache": 1}
    assert first.text.startswith("[Bash] ran `make` -> exit 1, ")
    # Running the prepass again changes nothing.
    again = digest_tool_results(res.messages, protect_from=2)
    assert again.records == () and again.messages == res.messages


def test_result_without_call_still_gets_generic_digest() -> None:
    msgs = [
        _result("ghost", _body(50, "a"), "terminal"),  # call missing, name known
        _result("ghost2", _body(50, "b")),  # call and name missing
        _result(None, _body(50, "c") + "x"),  # no id at all
        _user("go on"),
    ]
    res = digest_tool_results(msgs, protect_from=3)
    assert res.messages[0].text.startswith("[terminal] ran a command -> exit ?, 50 lines")
    assert res.messages[1].text.startswith("[tool] -> 50 lines")
    assert res.messages[2].text.startswith("[tool] -> 51 lines")
    assert [r.tool_name for r in res.records] == ["terminal", None, None]


def test_parallel_calls_pair_by_id_and_reused_ids_pair_to_nearest_call() -> None:
    parallel = Message(
        Role.ASSISTANT,
        tool_calls=(
            ToolCall("p1", "terminal", '{"command": "make lint"}'),
            ToolCall("p2", "read_file", '{"path": "setup.cfg"}'),
        ),
    )
    msgs = [
        parallel,
        _result("p2", _body(30, "cfg")),  # answered out of order
        _result("p1", _body(30, "lint")),
        _call("p1", "terminal", {"command": "make test"}),  # a reused id
        _result("p1", _body(30, "test")),
        _user("ok"),
    ]
    res = digest_tool_results(msgs, protect_from=5)
    assert res.messages[1].text.startswith("[read_file] read setup.cfg")
    assert res.messages[2].text.startswith("[terminal] ran `make lint`")
    assert res.messages[4].text.startswith("[terminal] ran `make test`")


def test_short_results_and_non_tool_messages_are_untouched() -> None:
    msgs = [
        _call("c1", "terminal", {"command": "ls"}),
        _result("c1", "a.py\nb.py\n", "terminal"),  # < 200 chars
        Message(Role.ASSISTANT, parts=(TextPart("x" * 5000),)),  # long, but not a tool result
        _user("y" * 5000),
        _result("c1", "z" * 199, "terminal"),
    ]
    res = digest_tool_results(msgs, protect_from=5)
    assert res.records == ()
    assert all(a is b for a, b in zip(res.messages, msgs, strict=True))
    # min_chars is respected exactly (>=).
    res2 = digest_tool_results(msgs, protect_from=5, min_chars=10)
    assert {r.index for r in res2.records} == {4}


@pytest.mark.perf
def test_digest_is_fast_and_linear_on_100k_messages() -> None:
    msgs: list[Message] = []
    for i in range(25_000):
        cid = f"call_{i}"
        msgs.append(_user(f"step {i}"))
        msgs.append(_call(cid, "terminal", {"command": f"pytest -k t{i}"}))
        out = (
            orjson.dumps({"output": f"line {i}\n" * 30, "exit_code": i % 3}).decode()
            if i % 4
            else "identical read output\n" * 12
        )
        msgs.append(_result(cid, out, "terminal"))
        msgs.append(Message(Role.ASSISTANT, parts=(TextPart("done"),)))
    start = time.process_time()
    res = digest_tool_results(msgs, protect_from=len(msgs) - 40)
    elapsed = time.process_time() - start
    assert len(res.messages) == 100_000
    assert sum(1 for r in res.records if r.kind == "duplicate") > 6_000
    assert sum(1 for a, b in zip(res.messages, msgs, strict=True) if a is not b) == len(res.records)
    # ~0.6 s CPU on a slow 2-core CI box for 25k digests; the bound catches quadratic work.
    assert elapsed < 3.0
