"""The batched and prefiltered scans behind compress() find exactly what plain ones find.

The fallback summary's extraction scans many texts in one pass and tries a regex only
where one of its literals occurs; redaction filters strings with patterns that are
necessary conditions of every rule; the digest skips exit-code searches in windows that
cannot hold one. Each is compared here with the straightforward per-text version on
generated texts full of near misses (look-alike letters, separators, words that almost
match).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_redact import CORPUS, NEGATIVES, OPENAI_LEGACY
from test_redact_catalogue import CATALOGUE

from tinyjuice import digest as digest_mod
from tinyjuice import redact as redact_mod
from tinyjuice.boundary import BoundaryIndex
from tinyjuice.digest import digest_line, digest_tool_results, parse_exit_code
from tinyjuice.formats import dumps
from tinyjuice.model import Message, MessageMeta, Role, TextPart, ToolCall, Transcript
from tinyjuice.options import CompactionOptions, CompactionState
from tinyjuice.pipeline import _FAILED_DIGEST, _failed_digest, _failed_digests, compress
from tinyjuice.redact import (
    _AWS_CANDIDATE,
    _CANDIDATE_SCAN,
    _MESSAGE_QUICK,
    find_secrets,
    redact_message,
    redact_messages,
    redact_text,
    texts_without_secrets,
)
from tinyjuice.rules import _ERROR, _ERROR_LOWER, tool_output_text
from tinyjuice.summary import (
    HANDOFF_PREFIX,
    error_head,
    is_summary_message,
)
from tinyjuice.summary import scan as scan_mod
from tinyjuice.summary.fallback import (
    _ASK_CHARS,
    _COMMAND_CHARS,
    _ERROR_CHARS,
    FactsMemo,
    TextRedactor,
    _call_summary,
    _clip_lines,
    _collect,
    _Collector,
    _errors_in,
    _one_line,
    _turn_line,
)
from tinyjuice.summary.scan import (
    _DIGEST_RE,
    _DOT_HINT_RE,
    _DOTFILES,
    _EXTENSIONS,
    _PATH_KEYS,
    _PATH_RE,
    _PATH_SCAN_RE,
    _URL_RE,
    _chained_paths,
    _command_text,
    _error_lines_many,
    _first_paths,
    _hinted_spans,
    _is_shell_tool,
    _paths_in,
    _paths_many,
    _string_leaves,
    _trie_pattern,
    remembered_call,
)
from tinyjuice.tokens import RoughCounter

# ------------------------------------------------------------------------ fragments

_ERROR_BITS = [
    "Traceback (most recent call last):", "ValueError: bad", "ErrorHandler", "MyException",
    "ERROR", "ERRORS", "error:", "error", "failed", "failedness", "FAILED", "No such file",
    "Permission denied", "permission denied", "PERMISSION DENIED", "exit code 0",
    "exit code 3", "exited with status", "process exited with code -1", "-> exit 1", "->",
    "exit", "exit 0", "exit status: 2", "Exit code: 1", "ErrorErrorError", "xError", "_Error",
    "Error_", "Exception.", "ex\u0131t code 5", "EXIT CODE 4", "return code 2", "returncode=0",
    "NotAnError", "Errorless", "Error", "Exception",
]  # fmt: skip
_PATH_BITS = [
    "src/app/main.py", "/usr/local/bin/python3", "~/x/y.ts", "./run.sh", "../up/one.md",
    "C:\\Users\\me\\f.txt", "x:\\y", ".env", ".gitignore.local", "config.yaml", "and/or",
    "2024/05/06", "/tmp", "/compact", "a/b/c", "dir/", "foo.py.", "e.g.", "x.y.z",
    "https://example.com/a/b.py?x=1", "file.PY", "/etc/hosts,", "'q/path.md'", "(p/q.rs)",
    "p\u00e4th/\u00fcber.py", "a@b+c~d-e/f.py", "///", "/", "..", "foo/bar//baz.py", "@scope/pkg",
]  # fmt: skip
_GLUE = [
    " ", "  ", "\n", "\n\n", "\t", ", ", ". ", ":", "=", "\r\n", "\x00", "\u00a0", "\u2028",
    "\u0130", "\u212a", "\u017f", "\u00df", "9", "-", "_", "(", ")", '"', "'", "word", "Word",
]  # fmt: skip


def _texts_from(bits: list[str]) -> st.SearchStrategy[str]:
    piece = st.sampled_from(bits) | st.sampled_from(_GLUE) | st.text(max_size=4)
    return st.lists(piece, max_size=14).map("".join)


_error_text = _texts_from(_ERROR_BITS)
_path_text = _texts_from(_PATH_BITS)
_any_text = _texts_from(_ERROR_BITS + _PATH_BITS)


def _error_items(text: str) -> list[str]:
    out = _Collector()
    _errors_in(text, out, "")
    return list(out.items["errors"])


# --------------------------------------------------------------------- error lines


@settings(max_examples=300, deadline=None)
@given(st.lists(_error_text, max_size=6))
def test_error_lines_equal_the_per_text_scan(texts: list[str]) -> None:
    found = _error_lines_many(texts)
    assert set(found) <= set(range(len(texts)))
    for k, text in enumerate(texts):
        batched = _Collector()
        for line in found.get(k, ()):
            batched.add("errors", _one_line(line, _ERROR_CHARS))
        assert list(batched.items["errors"]) == _error_items(text), text


@pytest.mark.parametrize(
    "text",
    [
        "ErrorErrorErrorError " * 200,  # one long word with many literals
        "->\n   exit 3\nnext",  # a match across a line break
        "exit code\n\n0 then exit code 4",
        "x" * 5000 + "Error",
        "Permission denied\npermission denied\nPermission denied",
        "x->exit 1 -> -> exit 2 ->\t\u00a0\u2028exit 3 ->" + " " * 3000 + "exit 4 ->exit",
        "->exit 7 at the start",
        "Error ERRORError xERRORError EError EException ExceptionError E ERRORS_Error",
    ],
)
def test_error_lines_equal_on_awkward_inputs(text: str) -> None:
    lines = _error_lines_many(["", text, "no errors here"]).get(1, [])
    assert list(dict.fromkeys(_one_line(x, _ERROR_CHARS) for x in lines)) == _error_items(text)


# --------------------------------------------------------------------------- paths


@settings(max_examples=300, deadline=None)
@given(_path_text)
def test_guarded_path_pattern_has_the_same_matches(text: str) -> None:
    assert [m.span() for m in _PATH_SCAN_RE.finditer(text)] == [
        m.span() for m in _PATH_RE.finditer(text)
    ]


_NAMES = sorted({*_EXTENSIONS, *_DOTFILES})
_named_text = _texts_from(_PATH_BITS + _NAMES + [f".{n}" for n in _NAMES] + ["x.", "."])


@settings(max_examples=500, deadline=None)
@given(_named_text)
def test_a_token_holding_a_path_holds_a_candidate(text: str) -> None:
    """What lets :func:`_hinted_spans` read only the tokens holding a candidate."""
    for token in text.split():
        if _PATH_RE.search(token):
            assert "/" in token or "\\" in token or _DOT_HINT_RE.search(token), token


@given(st.text(alphabet="abcpyijsx.-", max_size=6))
def test_trie_pattern_matches_exactly_its_words(text: str) -> None:
    words = ["py", "pyi", "pyx", "js", "json", "c", "cc", "a-b", "b.c"]
    assert (re.fullmatch(_trie_pattern(words), text) is not None) == (text in words)
    assert all(re.fullmatch(_trie_pattern(_NAMES), n) for n in _NAMES)


def _reference_spans(big: str) -> list[tuple[int, int]]:
    """:func:`_hinted_spans` the plain way: one regex for every candidate, and its
    token's ends found a character at a time."""
    hint = re.compile("/|\\\\|" + _DOT_HINT_RE.pattern)
    out = []
    pos = 0
    while (h := hint.search(big, pos)) is not None:
        start = end = h.start()
        while start > pos and not big[start - 1].isspace():
            start -= 1
        while end < len(big) and not big[end].isspace():
            end += 1
        out.append((start, end))
        pos = end
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(_path_text, max_size=6))
def test_hinted_spans_equal_the_plain_walk(texts: list[str]) -> None:
    big = "\n".join(texts)
    assert list(_hinted_spans(big)) == _reference_spans(big)


@settings(max_examples=300, deadline=None)
@given(st.lists(_path_text, max_size=6))
def test_paths_equal_the_per_text_scan(texts: list[str]) -> None:
    texts = texts + texts[:2]  # repeated texts take the de-duplicated path
    expected = {k: list(_paths_in(t)) for k, t in enumerate(texts)}
    assert _paths_many(texts) == {k: v for k, v in expected.items() if v}


@settings(max_examples=300, deadline=None)
@given(
    st.lists(_path_text | st.sampled_from(["src/a.py…", "x …", "\u2028/tmp/q.py\x1e.env"])),
    st.data(),
)
def test_first_paths_keep_the_first_occurrences_of_the_chained_scan(
    texts: list[str], data: st.DataObject
) -> None:
    texts = texts + texts[:3]  # repeated texts and tokens: found once
    named = data.draw(
        st.dictionaries(st.integers(0, max(0, len(texts) - 1)), st.sampled_from(_PATH_BITS))
        if texts
        else st.just({})
    )
    with pytest.MonkeyPatch.context() as patch:
        # A small memory, emptied as it fills (and kept between the two calls).
        patch.setattr(scan_mod, "_STRETCH_PATHS", {})
        patch.setattr(scan_mod, "_STRETCH_MEMO_SIZE", data.draw(st.integers(0, 6)))
        got = _first_paths(texts, named)
        assert _first_paths(texts, named) == got
    assert dict.fromkeys(got) == dict.fromkeys(_chained_paths(texts, named))


# ----------------------------------------------------------- fallback extraction


def _reference_collect(middle: Sequence[Message], last_turns: int) -> _Collector:
    """The extraction message by message, text by text (what _collect must equal)."""
    out = _Collector()
    asks: list[str] = []
    for m in middle:
        text = m.text
        real = m.is_real_user and not m.meta.generated_by and not is_summary_message(m)
        if real and text.strip():
            asks.append(_clip_lines(text, _ASK_CHARS))
        if text:
            for p in _paths_in(text):
                out.add("paths", p)
            for u in _URL_RE.finditer(text):
                out.add("urls", u.group(0).rstrip(".,:;!?'\""))
            if m.role is Role.TOOL:
                _errors_in(tool_output_text(text), out, f"[{m.tool_name or 'tool'}] ")
            elif m.role is not Role.ASSISTANT:
                _errors_in(text, out, "")
        if m.role is Role.TOOL:
            if m.tool_name:
                out.add("tools", m.tool_name)
            if m.meta.is_error and text.strip():
                first = " — ".join(error_head(text))
                out.add("errors", f"[{m.tool_name or 'tool'}] " + _one_line(first, _ERROR_CHARS))
            stripped = text.strip()
            if stripped and (
                m.meta.generated_by == "digest"
                or ("\n" not in stripped and len(stripped) < 400 and _DIGEST_RE.match(stripped))
            ):
                out.add("digests", _one_line(stripped, 400))
        for call in m.tool_calls:
            out.add("tools", call.name)
            args = call.parsed_arguments()
            out.add_call(_call_summary(call, args), call.id)
            if args is None:
                for p in _paths_in(call.arguments):
                    out.add("paths", p)
                continue
            for key, leaf in _string_leaves(args):
                if key in _PATH_KEYS and leaf.strip() and len(leaf) <= 500:
                    out.add("paths", leaf.strip())
                for p in _paths_in(leaf):
                    out.add("paths", p)
                for u in _URL_RE.finditer(leaf):
                    out.add("urls", u.group(0).rstrip(".,:;!?'\""))
            if _is_shell_tool(call.name) and isinstance(args, dict):
                for key in ("command", "cmd"):
                    cmd = _command_text(args.get(key))
                    if cmd:
                        out.add("commands", "`" + _one_line(cmd, _COMMAND_CHARS) + "`")
    for ask in reversed(asks):
        out.add("asks", ask)
    for rendered, (count, call_id) in out.call_counts.items():
        suffix = f" ×{count}, first id {call_id}" if count > 1 else f" id {call_id}"
        out.add("tool_calls", rendered + suffix)
    for m in middle[len(middle) - last_turns :] if last_turns > 0 else ():
        out.add("last_turns", _turn_line(m))
    return out


_tool_names = st.sampled_from(["terminal", "read_file", "grep", "mcp__fs__read", "bash", ""])


@st.composite
def _args_text(draw: st.DrawFn) -> str:
    shape = draw(st.integers(0, 4))
    if shape == 0:
        return draw(_path_text)  # not JSON
    if shape == 1:
        return ""
    keys = st.sampled_from(["path", "command", "cmd", "file_path", "url", "note", "cwd"])
    value = _any_text | st.integers(0, 9) | st.lists(_path_text, max_size=2)
    args = draw(st.dictionaries(keys, value, max_size=3))
    if shape == 4:
        args = {"outer": args, "list": [args]}
    return orjson.dumps(args).decode()


@st.composite
def _middle(draw: st.DrawFn) -> list[Message]:
    calls_pool: list[ToolCall] = []
    out: list[Message] = []
    for i in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 4))
        text = draw(_any_text)
        if kind == 0:
            if draw(st.booleans()):
                text = HANDOFF_PREFIX + "\n" + text
            meta = MessageMeta(is_injected=draw(st.booleans()))
            out.append(Message(Role.USER, (TextPart(text),), meta=meta))
        elif kind in (1, 2):
            calls = []
            for j in range(draw(st.integers(0, 2))):
                if calls_pool and draw(st.booleans()):
                    old = draw(st.sampled_from(calls_pool))  # the same call again
                    calls.append(ToolCall(f"c{i}.{j}", old.name, old.arguments))
                else:
                    calls.append(ToolCall(f"c{i}.{j}", draw(_tool_names), draw(_args_text())))
            calls_pool += calls
            out.append(Message(Role.ASSISTANT, (TextPart(text),), tuple(calls)))
        else:
            if draw(st.booleans()):
                text = "[terminal] ran `make` -> exit 2, 3 lines, 40 bytes"
            meta = MessageMeta(
                is_error=draw(st.booleans()),
                generated_by=draw(st.sampled_from([None, "digest"])),
            )
            name = draw(st.none() | _tool_names)
            parts = (TextPart(text),) if draw(st.booleans()) else (TextPart(text), TextPart("x"))
            out.append(Message(Role.TOOL, parts, tool_call_id="c", tool_name=name, meta=meta))
    return out


def test_a_remembered_call_is_worked_out_once_and_the_memory_stays_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(scan_mod, "_CALL_MEMO_SIZE", 2)
    memo: dict[tuple[str, str], str] = {}
    worked: list[str] = []

    def work(call: ToolCall) -> str:
        worked.append(call.arguments)
        return call.name + call.arguments

    short = [ToolCall(f"c{i}", "read_file", f'{{"path": "f{i}.py"}}') for i in range(3)]
    long = ToolCall("w", "write_file", orjson.dumps({"content": "x" * 600}).decode())
    for call in [short[0], short[0], long, long, short[1], short[0], short[2]]:
        assert remembered_call(memo, call, work) == call.name + call.arguments
    # The repeated short call once; the long one each time (never kept); emptied when
    # full before the third short call came in.
    assert worked == [short[0].arguments, long.arguments, long.arguments, short[1].arguments,
                      short[2].arguments]  # fmt: skip
    assert list(memo) == [("read_file", short[2].arguments)]


@settings(max_examples=200, deadline=None)
@given(_middle(), st.integers(0, 3))
def test_collect_equals_the_message_by_message_extraction(
    middle: list[Message], last_turns: int
) -> None:
    got = _collect(middle, last_turns)
    want = _reference_collect(middle, last_turns)
    assert {k: list(v) for k, v in got.items.items()} == {k: list(v) for k, v in want.items.items()}
    assert got.call_counts == want.call_counts


@settings(max_examples=200, deadline=None)
@given(_middle(), st.integers(0, 3), st.data())
def test_collect_from_remembered_facts_equals_the_reference(
    middle: list[Message], last_turns: int, data: st.DataObject
) -> None:
    """Spans of one transcript (a preview's boundary moves) through one FactsMemo; tool
    results come back as new objects (a de-duplication digest is one on every run),
    equal or with their error flag flipped."""
    from dataclasses import replace

    memo = FactsMemo()
    for _ in range(4):
        lo = data.draw(st.integers(0, len(middle)))
        hi = data.draw(st.integers(lo, len(middle)))
        flip = data.draw(st.booleans())  # the same result, failed or not: not the same items
        span = [
            replace(m, meta=replace(m.meta, is_error=m.meta.is_error != flip))
            if m.role is Role.TOOL
            else m
            for m in middle[lo:hi]
        ]
        got = _collect(span, last_turns, memo)
        want = _reference_collect(span, last_turns)
        assert {k: list(v) for k, v in got.items.items()} == {
            k: list(v) for k, v in want.items.items()
        }
        assert got.call_counts == want.call_counts


# ----------------------------------------------------------------------- redaction

_SECRET_BITS = (
    [c[1] for c in CORPUS]
    + NEGATIVES
    + [c.text.format(c.secret) for c in CATALOGUE]
    + [c.negative for c in CATALOGUE]
    + ["TOKEN", "Key", "auth", '"', "'", "= x"]
)
_secret_text = _texts_from(_SECRET_BITS)


@settings(max_examples=300, deadline=None)
@given(_secret_text)
def test_candidate_filter_never_hides_a_secret(text: str) -> None:
    expected_hits = find_secrets(text)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(redact_mod, "_may_start", lambda _t, _l: True)  # every rule runs
        assert find_secrets(text) == expected_hits
    if expected_hits:
        # The filters flag every text that holds a secret.
        assert redact_mod._may_start(text, redact_mod._lowered(text))
        assert redact_mod._CANDIDATE.search(redact_mod._lowered(text))
        assert _CANDIDATE_SCAN.search(text.lower()) or _AWS_CANDIDATE.search(text)
        # ... and never one the plain needle filter would pass over.
        assert _MESSAGE_QUICK.search(text.lower())


@settings(max_examples=200, deadline=None)
@given(st.lists(_secret_text, min_size=1, max_size=5))
def test_batch_flags_match_the_needle_filter(texts: list[str]) -> None:
    # Each text alone and all of them joined: a match can never run into the next text.
    messages = [Message(Role.ASSISTANT, (TextPart(t),)) for t in texts]
    batch, changed = redact_messages(messages)
    single = [redact_message(m) if _MESSAGE_QUICK.search(m.text.lower()) else m for m in messages]
    assert batch == single
    assert changed == sum(1 for a, b in zip(single, messages, strict=True) if a is not b)


@settings(max_examples=200, deadline=None)
@given(st.lists(_secret_text | _texts_from([*_SECRET_BITS, "\\n", "\\u0061"]), max_size=6))
def test_texts_said_to_hold_no_secret_are_left_as_they_are(texts: list[str]) -> None:
    clean = texts_without_secrets(texts)
    assert clean <= set(texts)
    for t in texts:
        if t in clean:
            assert redact_text(t) is t
    # A primed redactor answers exactly as redact_text does.
    primed = TextRedactor()
    primed.prime(texts)
    assert [primed(t) for t in texts] == [redact_text(t) for t in texts]
    assert all(primed.memo[t] is t for t in clean)


def test_a_url_in_one_text_cannot_hide_a_secret_in_the_next() -> None:
    # "x://u" could run, as "user:password@", into the next string if nothing stopped
    # it there, swallowing the key that string starts with.
    messages = [
        Message(Role.USER, (TextPart("see x://u"),)),
        Message(Role.USER, (TextPart(OPENAI_LEGACY + ":x@y"),)),
    ]
    batch, changed = redact_messages(messages)
    assert changed == 1
    assert batch[1] == redact_message(messages[1])
    assert OPENAI_LEGACY not in batch[1].text


def test_escaped_json_is_redacted_in_full_when_it_holds_a_needle() -> None:
    secret = CORPUS[0][2]
    # A JSON escape hides the key name from a character scan; the message also mentions
    # a token, so the plain filter would redact it in full, and the batch must too.
    args = '{"p\\u0061ssword": "hunter2-hunter2", "note": "a token"}'
    msg = Message(Role.ASSISTANT, (TextPart("ok"),), (ToolCall("c1", "login", args),))
    plain = Message(Role.USER, (TextPart(f"here {secret} there"),))
    batch, changed = redact_messages([msg, plain])
    assert batch == [redact_message(msg), redact_message(plain)]
    assert changed == 2
    assert "hunter2-hunter2" not in batch[0].tool_calls[0].arguments


# -------------------------------------------------------------------------- digest

_EXIT_BITS = [
    "Exit code: 1", "exit code 0", "EXIT STATUS = 3", "return code -2", "returncode: 9",
    "Process exited with code 4", "exited with exit code 5", "ex\u0131t code 6",
    "exit_code=7", "E\u0130T", "\u212a", "\u017f", "x" * 600, "> ", "# ", "[", "exit",
    "exited", "return", "code",
]  # fmt: skip
# Each phrase also at the start of a line, where the pattern can match it; plain ASCII
# texts half of the time (the prefilter only acts on those).
_EXIT_LINES = _EXIT_BITS + ["\n" + b for b in _EXIT_BITS]
_exit_text = _texts_from(_EXIT_LINES) | st.lists(
    st.sampled_from([b for b in _EXIT_LINES if b.isascii()] + [" ", "\n", ":", "7", "="]),
    max_size=10,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(_exit_text)
def test_exit_code_prefilter_is_exact(text: str) -> None:
    expected = parse_exit_code(text)
    original = digest_mod._exit_search_start
    try:
        # Without the prefilter: every window searched from its start.
        digest_mod._exit_search_start = lambda window: 0
        assert parse_exit_code(text) == expected
    finally:
        digest_mod._exit_search_start = original


_FAILED_BITS = ["-> exit 1", "exit 0", "EXIT 12", "error", "ERROR", "Errors", "exit -3", "x"]


@settings(max_examples=300, deadline=None)
@given(
    _texts_from([*_FAILED_BITS, "\u0130", "\u212a"])
    | st.lists(st.sampled_from([*_FAILED_BITS, " ", "_", "9"]), max_size=8).map("".join)
)
def test_failed_digest_prefilter_is_exact(text: str) -> None:
    assert _failed_digest(text) == bool(_FAILED_DIGEST.search(text))


_failed_text = _texts_from(
    [*_FAILED_BITS, "\u0130", "\u212a", "exit", "e", "rror", "\u0131"]
) | st.lists(st.sampled_from([*_FAILED_BITS, " ", "_", "9", "e", "xit 4"]), max_size=8).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_failed_text, max_size=8))
def test_failed_digests_joined_equal_one_by_one(texts: list[str]) -> None:
    # A match at a text's start or end, or one a join could complete, is judged per text.
    assert _failed_digests(texts) == [bool(_FAILED_DIGEST.search(t)) for t in texts]


@settings(max_examples=300, deadline=None)
@given(_error_text)
def test_rules_error_spans_of_lowered_ascii_text_are_the_same(text: str) -> None:
    text = text.encode("ascii", "replace").decode()  # ASCII (the fast path's texts)
    assert [m.span() for m in _ERROR_LOWER.finditer(text.lower())] == [
        m.span() for m in _ERROR.finditer(text)
    ]


_EDITOR_ARGS = [
    '{"command": "view", "path": "src/a.py"}',
    '{"command": "str_replace", "path": "src/a.py", "old_str": "x", "new_str": "y"}',
    '{"command": "create", "path": "b.md"}',
]


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(
                [
                    "str_replace_editor",
                    "mcp__x__str_replace_based_edit_tool",
                    "terminal",
                    "Grep",
                    "ns.read_file",
                    "",
                ]
            ),
            st.sampled_from(_EDITOR_ARGS),
            _exit_text.map(lambda t: t + "y" * 250),
            st.booleans(),
        ),
        max_size=6,
    )
)
def test_digests_equal_digest_line(calls: list[tuple[str, str, str, bool]]) -> None:
    messages: list[Message] = []
    for k, (name, args, output, failed) in enumerate(calls):
        messages.append(Message(Role.ASSISTANT, (), (ToolCall(f"c{k}", name, args),)))
        meta = MessageMeta(is_error=failed)
        messages.append(Message(Role.TOOL, (TextPart(output),), tool_call_id=f"c{k}", meta=meta))
    result = digest_tool_results(messages, protect_from=len(messages), dedup=False)
    digested = {r.index for r in result.records if r.kind == "digest"}
    for i in digested:
        name, args, output, failed = calls[(i - 1) // 2]
        assert result.messages[i].text == digest_line(name or None, args, output, is_error=failed)


# ------------------------------------------------------------------------ pipeline


@pytest.mark.parametrize("with_summary", [False, True])
@pytest.mark.parametrize("lineage", [None, "L1"])
def test_own_index_gives_the_same_result_as_a_passed_one(
    with_summary: bool, lineage: str | None
) -> None:
    msgs = [Message(Role.SYSTEM, (TextPart("sys"),))]
    for k in range(12):
        text = f"ask {k} about src/m{k}.py"
        if with_summary and k == 3:
            text = HANDOFF_PREFIX + "\nearlier work on src/old.py"
        msgs.append(Message(Role.USER, (TextPart(text),)))
        msgs.append(Message(Role.ASSISTANT, (TextPart(f"done {k}: Traceback ValueError"),)))
    t = Transcript(messages=tuple(msgs), format="openai")
    state = CompactionState(lineage_id=lineage, previous_summary="state summary src/s.py")
    opts = CompactionOptions(keep_last=2, lineage_id=lineage)
    counter = RoughCounter()
    own = compress(t, opts, state=state, counter=counter, now=1e6)
    passed = compress(
        t, opts, state=state, counter=counter, now=1e6, index=BoundaryIndex(t.messages)
    )
    assert own.report.to_dict() == passed.report.to_dict()
    assert dumps(own.transcript, "openai") == dumps(passed.transcript, "openai")
    assert own.summary_message == passed.summary_message
