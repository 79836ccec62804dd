"""Deterministic tool-output prepass: one-line digests, duplicate back-references and
provider-safe tool-argument shrinking.

Details: docs/compaction.md (`tinyjuice.digest`).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from enum import StrEnum
from operator import attrgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypeVar

import orjson

from tinyjuice.formats._messages import fast_constructor, new_message, new_meta, text_part
from tinyjuice.model import Message, MessageMeta, Part, Role, TextPart, ToolCall
from tinyjuice.redact import redact_clip
from tinyjuice.text import cut_end, cut_middle

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = [
    "SHRINK_MARKER_MAX",
    "TOOL_KINDS",
    "DigestRecord",
    "DigestResult",
    "ToolKind",
    "digest_line",
    "digest_tool_results",
    "parse_exit_code",
    "shrink_arguments",
    "shrink_json_string_leaves",
    "tool_kind",
]

_T = TypeVar("_T", bound="DataclassInstance")

#: Upper bound on the length of the ``…[+N chars]`` marker.
SHRINK_MARKER_MAX = 24

DEFAULT_MIN_CHARS = 200
DEFAULT_SHRINK_OVER = 500
DEFAULT_SHRINK_TO = 200

#: How much of a command / path / pattern / URL / goal a digest shows.
_CMD_CHARS = 80
_PATH_CHARS = 100
_PATTERN_CHARS = 60
_URL_CHARS = 100
_GOAL_CHARS = 60
_ARG_CHARS = 40
_EVIDENCE_LINES = 3
_EVIDENCE_CHARS = 80


class ToolKind(StrEnum):
    TERMINAL = "terminal"
    READ_FILE = "read_file"
    SEARCH = "search"
    WEB = "web"
    DELEGATE = "delegate"
    PROCESS = "process"
    EDIT = "edit"
    GENERIC = "generic"


def _table(kind: ToolKind, names: str) -> dict[str, ToolKind]:
    return dict.fromkeys(names.split(), kind)


#: Lower-cased tool names of Hermes, Claude Code, Codex, SWE-agent and common MCP servers.
TOOL_KINDS: Mapping[str, ToolKind] = MappingProxyType(
    {
        **_table(
            ToolKind.TERMINAL,
            "terminal bash shell local_shell exec_command container.exec run_command "
            "execute_command run_shell_command shell_command run_terminal_cmd execute_bash",
        ),
        **_table(
            ToolKind.READ_FILE,
            "read_file read cat view view_file open_file readfile notebookread read_many_files",
        ),
        **_table(
            ToolKind.SEARCH,
            "search_files grep glob search find_files file_search codebase_search grep_search "
            "ripgrep rg find ls list_dir list_directory list_files",
        ),
        **_table(
            ToolKind.WEB,
            "web_extract web_fetch webfetch fetch fetch_url read_url web_search websearch "
            "browse browser_navigate http_get",
        ),
        **_table(
            ToolKind.DELEGATE,
            "delegate_task delegate task agent subagent dispatch_agent spawn_agent run_subagent",
        ),
        **_table(
            ToolKind.PROCESS,
            "process bashoutput killshell killbash write_stdin process_status check_process "
            "kill_process list_processes",
        ),
        **_table(
            ToolKind.EDIT,
            "write_file write edit multiedit edit_file apply_patch patch create_file "
            "str_replace notebookedit replace_in_file search_replace",
        ),
    }
)

#: Editors whose ``command`` argument decides between viewing and editing.
_EDITORS = frozenset({"str_replace_editor", "str_replace_based_edit_tool", "text_editor"})


def tool_kind(tool_name: str | None, arguments: Any = None) -> ToolKind:
    """The kind of a tool, by name (case-insensitive; ``mcp__srv__name`` and
    ``ns.name`` fall back to ``name``)."""
    if not tool_name:
        return ToolKind.GENERIC
    name = tool_name.lower()
    if name in _EDITORS or name.rsplit("__", 1)[-1] in _EDITORS:
        cmd = arguments.get("command") if isinstance(arguments, dict) else None
        return ToolKind.READ_FILE if cmd == "view" else ToolKind.EDIT
    kind = TOOL_KINDS.get(name)
    if kind is None:
        short = name.rsplit("__", 1)[-1].rsplit(".", 1)[-1]
        kind = TOOL_KINDS.get(short, ToolKind.GENERIC)
    return kind


# ----------------------------------------------------------------------- shrinking


def _marker(removed: int) -> str:
    return f"…[+{removed} chars]"


_PATHLIKE = re.compile(r"[^\s]*[/\\][^\s]*")


def _shrink_str(s: str, cap: int) -> str:
    n = len(s)
    if n <= cap + SHRINK_MARKER_MAX:
        return s
    return redact_clip(s, lambda r: _cut_str(r, cap, n))


def _cut_str(s: str, cap: int, original: int) -> str:
    """``s`` cut to ``cap`` characters plus a marker naming how many the original lost."""
    n = len(s)
    if n <= cap:
        return s
    removed = original - cap
    if _PATHLIKE.fullmatch(s) is not None:
        tail = cap // 3
        head = cap - tail
        return s[:head] + _marker(removed) + (s[n - tail :] if tail else "")
    return s[:cap] + _marker(removed)


def shrink_json_string_leaves(value: Any, max_string_chars: int) -> Any:
    """``value`` with long string leaves cut (see the module docstring for the rule).

    Returns the same object when nothing needed cutting.
    """
    if max_string_chars < 0:
        raise ValueError(f"max_string_chars must be >= 0, got {max_string_chars}")
    return _shrink(value, max_string_chars)


def _shrink(value: Any, cap: int) -> Any:
    if isinstance(value, str):
        return _shrink_str(value, cap)
    if isinstance(value, dict):
        out: dict[str, Any] | None = None
        for k, v in value.items():
            nv = _shrink(v, cap)
            if nv is not v and out is None:
                out = dict(value)
            if out is not None:
                out[k] = nv
        return value if out is None else out
    if isinstance(value, list):
        lst: list[Any] | None = None
        for i, v in enumerate(value):
            nv = _shrink(v, cap)
            if nv is not v and lst is None:
                lst = list(value)
            if lst is not None:
                lst[i] = nv
        return value if lst is None else lst
    return value


def shrink_arguments(
    arguments: str, max_string_chars: int = DEFAULT_SHRINK_TO, over: int = DEFAULT_SHRINK_OVER
) -> str:
    """Tool-call arguments with long string leaves cut, still valid JSON.

    Arguments of at most ``over`` characters, arguments that are not JSON, and JSON that
    needs no cut are returned unchanged (the same string, original formatting kept).
    The output is compact JSON with non-ASCII characters written as-is.
    """
    if len(arguments) <= over:
        return arguments
    try:
        parsed = orjson.loads(arguments)
        shrunk = shrink_json_string_leaves(parsed, max_string_chars)
        if shrunk is parsed:
            return arguments
        return orjson.dumps(shrunk).decode("utf-8")
    except (orjson.JSONDecodeError, orjson.JSONEncodeError, RecursionError):
        return arguments


# --------------------------------------------------------------------- digest lines

_EXIT_RE = re.compile(
    r"^[\s>*#\[]*(?:exit code|exit status|exit_code|return code|returncode|"
    r"(?:process|command) exited with (?:exit )?code|exited with (?:exit )?code)"
    r"\s*[:=]?\s*(-?\d+)",
    re.I | re.M,
)
_EXIT_KEYS = ("exit_code", "exitCode", "returncode", "return_code", "exit_status", "exitStatus")
_BODY_KEYS = ("output", "stdout", "content", "result", "text", "data", "body")


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.fullmatch(r"-?\d{1,6}", value.strip()):
        return int(value)
    return None


def _structured(output: str) -> dict[str, Any] | None:
    head = output[:64].lstrip()
    if not head.startswith("{"):
        return None
    try:
        doc = orjson.loads(output)
    except orjson.JSONDecodeError:
        return None
    return doc if isinstance(doc, dict) else None


def _exit_from_doc(doc: Mapping[str, Any]) -> int | None:
    for key in _EXIT_KEYS:
        if key in doc:
            code = _int(doc[key])
            if code is not None:
                return code
    meta = doc.get("metadata")
    if isinstance(meta, dict):
        return _exit_from_doc(meta)
    return None


def parse_exit_code(output: str) -> int | None:
    """The exit code a tool output reports, or None when it reports none.

    Reads JSON outputs (``exit_code``/``returncode``..., also under ``metadata``) and
    text headers or footers (``Exit code: 1``, ``Exit code 1``, ``Process exited with
    code 1``) in the first 512 or last 256 characters.
    """
    doc = _structured(output)
    if doc is not None:
        code = _exit_from_doc(doc)
        if code is not None:
            return code
    return _exit_from_text(output)


#: Every :data:`_EXIT_RE` match holds one of "exit code", "exit status", "exit_code",
#: "exited with", "return code" or "returncode" (lower-cased). In ASCII text nothing else
#: can match them case-insensitively, so a window without one is skipped unsearched, and
#: one with one is searched from the start of the line where "exit" or "return" first
#: occurs: a match runs from a line start to its words over blanks, ``>``, ``*``, ``#``
#: and ``[`` only, so one starting on an earlier line runs over blank lines into this
#: one, and the same match (the same code) starts at this line's start.


def _exit_search_start(window: str) -> int:
    """Where a search of ``window`` for :data:`_EXIT_RE` may start; -1: it cannot match."""
    if not window.isascii():
        return 0
    low = window.lower()
    exit_at = low.find("exit")
    if exit_at >= 0 and (
        "exit code" in low or "exit status" in low or "exit_code" in low or "exited with" in low
    ):
        return_at = low.find("return", 0, exit_at)
    elif "return code" in low or "returncode" in low:
        return_at = low.find("return")
    else:
        return -1
    first = return_at if return_at >= 0 else exit_at
    return low.rfind("\n", 0, first) + 1


def _exit_from_text(output: str) -> int | None:
    at = _exit_search_start(output[:512])
    m = _EXIT_RE.search(output, at, 512) if at >= 0 else None
    if m is None and len(output) > 512:
        tail = output[-256:]
        at = _exit_search_start(tail)
        m = _EXIT_RE.search(tail, at) if at >= 0 else None
    return int(m.group(1)) if m else None


class _Output(NamedTuple):
    """What a digest reads of one output (a tuple: one is made per digested result)."""

    body: str
    doc: dict[str, Any] | None
    exit_code: int | None
    is_error: bool


def _inspect(output: str, is_error: bool) -> _Output:
    doc = _structured(output)
    body = output
    exit_code: int | None = None
    if doc is not None:
        texts = [doc[k] for k in _BODY_KEYS if isinstance(doc.get(k), str)]
        stderr = doc.get("stderr")
        if isinstance(stderr, str) and stderr:
            texts.append(stderr)
        if texts:
            body = "\n".join(t for t in texts if t)
        exit_code = _exit_from_doc(doc)
        err = doc.get("error")
        if (isinstance(err, str) and err.strip()) or isinstance(err, dict):
            is_error = True
        if doc.get("success") is False or doc.get("is_error") is True:
            is_error = True
    if exit_code is None:
        exit_code = _exit_from_text(output)
        if exit_code is not None:
            # Codex: "Exit code: 0\nWall time: ...\nOutput:\n<body>" — count the body only.
            cut = output.find("\nOutput:\n", 0, 512)
            if cut >= 0:
                body = output[cut + len("\nOutput:\n") :]
    return _Output(body, doc, exit_code, is_error)


def _count_lines(text: str) -> int:
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def _byte_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _thousands(n: int) -> str:
    """``f"{n:,}"``; below a thousand no comma is written, and the plain format skips the
    format spec's parser (two or three numbers are written per digest)."""
    return f"{n}" if -1000 < n < 1000 else f"{n:,}"


def _plural(n: int, word: str) -> str:
    count = _thousands(n)
    if n == 1:
        return f"{count} {word}"
    return f"{count} {word}es" if word.endswith(("ch", "sh", "s", "x")) else f"{count} {word}s"


def _size(body: str) -> str:
    return f"{_plural(_count_lines(body), 'line')}, {_plural(_byte_len(body), 'byte')}"


def _one_line(text: str) -> str:
    """:func:`tinyjuice.text.flatten` of the first 4,096 characters only: a digest line
    comes from outputs of megabytes and shows a few dozen characters of them."""
    if len(text) > 4096:
        text = text[:4096]
    return " ".join(text.split())


#: Characters of a long value redacted before it is clipped for a digest line.
_CLIP_READ = 16_384


def _clip_end(text: str, limit: int) -> str:
    flat = _one_line(text)
    if len(flat) <= limit:
        return flat
    # Clipped after redacting (no key cut in half), redacted again; on one line.
    return redact_clip(text[:_CLIP_READ], lambda r: cut_end(_one_line(r), limit))


def _clip_middle(text: str, limit: int) -> str:
    flat = _one_line(text)
    if len(flat) <= limit:
        return flat
    return redact_clip(text[:_CLIP_READ], lambda r: cut_middle(_one_line(r), limit))


#: Argument values that count as absent (compared by ``==``, like a literal tuple).
_ABSENT: tuple[Any, ...] = (None, "", [], {})


def _first(args: Any, *keys: str) -> Any:
    if not isinstance(args, dict):
        return None
    get = args.get
    for key in keys:
        value = get(key)
        # A truthy JSON value equals none of _ABSENT: only falsy ones are compared.
        if value is not None and (value or value not in _ABSENT):
            return value
    return None


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if (
            len(value) >= 3
            and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh", "dash")
            and value[1] in ("-c", "-lc", "-ic", "-l")
        ):
            return str(value[-1])
        return shlex.join(value)
    return None


def _status(out: _Output, *, show_exit: bool) -> list[str]:
    parts: list[str] = []
    if out.is_error and out.exit_code in (None, 0):
        parts.append("error")  # a non-zero exit code already says it
    if show_exit:
        parts.append(f"exit {out.exit_code}" if out.exit_code is not None else "exit ?")
    elif out.exit_code is not None:
        parts.append(f"exit {out.exit_code}")
    return parts


def _tail(out: _Output, *, show_exit: bool, extra: Sequence[str] = ()) -> str:
    status = _status(out, show_exit=show_exit)
    if not (status or extra):
        return _size(out.body)  # most outputs: nothing before the size
    return ", ".join([*status, *extra, _size(out.body)])


def _quote(text: str) -> str:
    return "'" + text + "'"


def _terminal(name: str, args: Any, out: _Output) -> str:
    raw = _first(args, "command", "cmd", "commands", "script")
    if raw is None and isinstance(args, dict) and isinstance(args.get("action"), dict):
        raw = _first(args["action"], "command", "cmd")
    if raw is None and isinstance(args, str):
        raw = args
    cmd = _command_text(raw)
    what = f"ran `{_clip_end(cmd, _CMD_CHARS)}`" if cmd else "ran a command"
    workdir = _first(args, "workdir", "cwd", "working_directory")
    if isinstance(workdir, str):
        what += f" in {_clip_middle(workdir, 60)}"
    return f"[{name}] {what} -> {_tail(out, show_exit=True)}"


_PATH_KEYS = ("path", "file_path", "filePath", "file", "filename", "target_file", "notebook_path")
#: Every key _read_file reads a line range from.
_RANGE_KEYS = frozenset(
    {"view_range", "range", "lines", "start_line", "offset", "line", "from_line"}
    | {"end_line", "to_line", "limit", "max_lines"}
)


def _read_file(name: str, args: Any, out: _Output) -> str:
    path = _first(args, *_PATH_KEYS)
    if path is None and isinstance(args, str):
        path = args
    where = _clip_middle(str(path), _PATH_CHARS) if path is not None else "a file"
    start = end = None
    # Most reads give no range (from line 1): their keys are not looked up one by one.
    if isinstance(args, dict) and not args.keys().isdisjoint(_RANGE_KEYS):
        view = _first(args, "view_range", "range", "lines")
        if isinstance(view, list) and len(view) == 2:
            start, end = _int(view[0]), _int(view[1])
        else:
            start = _int(_first(args, "start_line", "offset", "line", "from_line"))
            end = _int(_first(args, "end_line", "to_line"))
            limit = _int(_first(args, "limit", "max_lines", "lines"))
            if end is None and limit is not None and limit > 0:
                end = (start or 1) + limit - 1
    start = start if start is not None and start > 0 else 1
    span = (
        f"lines {_thousands(start)}-{_thousands(end)}"
        if end is not None and end >= start
        else f"from line {_thousands(start)}"
    )
    total = _int(out.doc.get("total_lines")) if out.doc is not None else None
    if total is not None:
        span += f" (of {_plural(total, 'line')})"
    return f"[{name}] read {where} {span} -> {_tail(out, show_exit=False)}"


_FOUND_RE = re.compile(
    r"^\s*(?:found\s+)?(\d[\d,]*)\s+(match(?:es)?|files?|results?|occurrences?|lines?)\b", re.I
)
_NONE_RE = re.compile(r"^\s*no (?:matches|files|results)(?: found)?\b", re.I)
_COUNT_KEYS = (
    "total_count", "count", "total", "total_matches", "num_matches", "match_count", "num_results",
    "numFiles", "numMatches",
)  # fmt: skip
_LIST_KEYS = ("matches", "results", "files", "items", "hits", "filenames")


def _evidence_item(item: Any) -> str | None:
    if isinstance(item, str):
        return item
    if isinstance(item, dict):
        where = _first(item, "path", "file", "filename", "url")
        line = _first(item, "line_number", "line", "lineno")
        text = _first(item, "content", "text", "match", "snippet", "preview")
        bits = [str(b) for b in (where, line) if b is not None and not isinstance(b, dict | list)]
        head = ":".join(bits)
        if isinstance(text, str):
            return f"{head}: {text}" if head else text
        return head or None
    return None


def _lines_head(text: str, k: int, skip: re.Pattern[str]) -> list[str]:
    out: list[str] = []
    pos = 0
    n = len(text)
    while pos < n and len(out) < k:
        nl = text.find("\n", pos)
        end = n if nl < 0 else nl
        line = text[pos : min(end, pos + 400)].strip()
        if line and not skip.match(line):
            out.append(line)
        pos = end + 1
    return out


def _search(name: str, args: Any, out: _Output) -> str:
    pattern = _first(args, "pattern", "query", "regex", "q", "search", "glob", "name")
    path = _first(args, "path", "dir", "directory", "cwd", "root", "include")
    target = _first(args, "target", "output_mode")
    lname = name.lower()
    if target in ("files", "files_with_matches") or lname in ("glob", "find_files", "find"):
        label = "file search"
    elif target == "content" or lname in ("grep", "rg", "ripgrep", "grep_search"):
        label = "content search"
    else:
        label = "search"
    what = label
    if pattern is not None:
        what += f" for {_quote(_clip_end(str(pattern), _PATTERN_CHARS))}"
    if isinstance(path, str):
        what += f" in {_clip_middle(path, 60)}"

    count: str | None = None
    evidence: list[str] = []
    doc = out.doc
    if doc is not None:
        for key in _COUNT_KEYS:
            n = _int(doc.get(key))
            if n is not None:
                count = _plural(n, "match")
                break
        for key in _LIST_KEYS:
            items = doc.get(key)
            if isinstance(items, list):
                if count is None:
                    count = _plural(len(items), "match")
                for item in items[:_EVIDENCE_LINES]:
                    ev = _evidence_item(item)
                    if ev:
                        evidence.append(ev)
                break
    if count is None:
        head = out.body[:200]
        m = _FOUND_RE.match(head)
        if m:
            noun = m.group(2).lower().rstrip("s").replace("matche", "match")
            count = _plural(int(m.group(1).replace(",", "")), noun)
        elif _NONE_RE.match(head):
            count = "0 matches"
        else:
            # The lines that are not blank, counted at C speed (no Python step per line).
            count = _plural(sum(map(bool, map(str.strip, out.body.splitlines()))), "result line")
    if not evidence and doc is None:
        evidence = _lines_head(out.body, _EVIDENCE_LINES, _FOUND_RE)
        if _NONE_RE.match(out.body[:200]):
            evidence = []
    status = _status(out, show_exit=False)
    line = f"[{name}] {what} -> {', '.join([*status, count, _plural(_byte_len(out.body), 'byte')])}"
    if evidence:
        line += "; top: " + " | ".join(_clip_end(e, _EVIDENCE_CHARS) for e in evidence)
    return line


def _web(name: str, args: Any, out: _Output) -> str:
    urls = _first(args, "urls", "url", "uri", "href", "link")
    if isinstance(urls, str):
        urls = [urls]
    if isinstance(urls, list) and urls and isinstance(urls[0], str):
        more = f" (+{len(urls) - 1} more)" if len(urls) > 1 else ""
        what = f"fetched {_clip_middle(urls[0], _URL_CHARS)}{more}"
    else:
        query = _first(args, "query", "q", "search_term", "prompt")
        what = (
            f"searched {_quote(_clip_end(str(query), _PATTERN_CHARS))}"
            if query
            else "fetched a page"
        )
    return f"[{name}] {what} -> {_tail(out, show_exit=False)}"


def _delegate(name: str, args: Any, out: _Output) -> str:
    goal = _first(args, "description", "goal", "task", "prompt", "instructions", "message")
    if goal is None and isinstance(args, str):
        goal = args
    what = f"delegated {_quote(_clip_end(str(goal), _GOAL_CHARS))}" if goal else "delegated a task"
    agent = _first(args, "subagent_type", "agent", "agent_type", "role")
    if isinstance(agent, str):
        what += f" to {_clip_end(agent, 40)}"
    extra: list[str] = []
    status = _first(out.doc, "status", "state") if out.doc is not None else None
    if isinstance(status, str):
        extra.append(f"status {_clip_end(status, 20)}")
    return f"[{name}] {what} -> {_tail(out, show_exit=False, extra=extra)}"


_ID_KEYS = (
    "session_id", "process_id", "proc_id", "pid", "shell_id", "bash_id", "task_id", "job_id", "id",
)  # fmt: skip


def _process(name: str, args: Any, out: _Output) -> str:
    action = _first(args, "action", "operation", "op", "mode")
    what = _clip_end(str(action), 30) if action is not None else "call"
    for key in _ID_KEYS:
        value = _first(args, key)
        if value is not None and not isinstance(value, dict | list):
            what += f" {key}={_clip_end(str(value), 40)}"
            break
    extra: list[str] = []
    status = _first(out.doc, "status", "state") if out.doc is not None else None
    if isinstance(status, str):
        extra.append(f"status {_clip_end(status, 20)}")
    return f"[{name}] {what} -> {_tail(out, show_exit=False, extra=extra)}"


_PATCH_FILE_RE = re.compile(r"^\*\*\* (?:Add|Update|Delete) File: (.+)$", re.M)


def _edit(name: str, args: Any, out: _Output) -> str:
    path = _first(args, *_PATH_KEYS)
    patch = _first(args, "input", "patch", "diff")
    files: list[str] = []
    if path is None and isinstance(patch, str):
        files = _PATCH_FILE_RE.findall(patch[:20_000])
    elif path is None and isinstance(args, str):
        files = _PATCH_FILE_RE.findall(args[:20_000])
    if path is not None:
        where = _clip_middle(str(path), _PATH_CHARS)
    elif files:
        more = f" (+{len(files) - 1} more)" if len(files) > 1 else ""
        where = _clip_middle(files[0].strip(), _PATH_CHARS) + more
    else:
        where = "a file"
    command = _first(args, "command")
    verb = _clip_end(str(command), 20) if isinstance(command, str) else "edited"
    return f"[{name}] {verb} {where} -> {_tail(out, show_exit=False)}"


_PREFERRED_ARG = re.compile(r"path|file|url|uri|id$|name|query|pattern|command|key", re.I)


def _generic(name: str, args: Any, out: _Output) -> str:
    shown: list[str] = []
    if isinstance(args, dict):
        scalars = [
            (k, v)
            for k, v in args.items()
            if isinstance(v, str | int | float | bool) and v != "" and isinstance(k, str)
        ]
        scalars.sort(key=lambda kv: 0 if _PREFERRED_ARG.search(kv[0]) else 1)  # stable
        for k, v in scalars[:3]:
            value = (
                _quote(_clip_end(v, _ARG_CHARS)) if isinstance(v, str) else orjson.dumps(v).decode()
            )
            shown.append(f"{_clip_end(k, 30)}={value}")
    elif isinstance(args, str) and args.strip():
        shown.append(_quote(_clip_end(args, _ARG_CHARS)))
    what = (" " + ", ".join(shown)) if shown else ""
    return f"[{name}]{what} -> {_tail(out, show_exit=False)}"


_RENDER = {
    ToolKind.TERMINAL: _terminal,
    ToolKind.READ_FILE: _read_file,
    ToolKind.SEARCH: _search,
    ToolKind.WEB: _web,
    ToolKind.DELEGATE: _delegate,
    ToolKind.PROCESS: _process,
    ToolKind.EDIT: _edit,
    ToolKind.GENERIC: _generic,
}


def _args_value(arguments: Any) -> Any:
    if isinstance(arguments, str):
        if not arguments.strip():
            return None
        try:
            return orjson.loads(arguments)
        except orjson.JSONDecodeError:
            return arguments
    return arguments


def digest_line(
    tool_name: str | None, arguments: Any | None, output: str, *, is_error: bool = False
) -> str:
    """A one-line digest of one tool result.

    ``arguments`` is the call's parsed JSON, its raw argument string, or None when the
    call is unknown. Examples::

        [terminal] ran `pytest -q` -> exit 1, 120 lines, 5,230 bytes
        [read_file] read src/app.py lines 1-120 -> 120 lines, 5,230 bytes
        [Grep] content search for 'TODO' in src -> 14 matches, 900 bytes; top: a.py:3: ...
    """
    name = _clip_end(tool_name, 60) if tool_name else "tool"
    args = _args_value(arguments)
    kind = tool_kind(tool_name, args)
    return _RENDER[kind](name, args, _inspect(output, is_error))


def _depends_on_arguments(tool_name: str) -> bool:
    """Whether :func:`tool_kind` of this name depends on the arguments (an editor)."""
    name = tool_name.lower()
    return name in _EDITORS or name.rsplit("__", 1)[-1] in _EDITORS


class _Names:
    """Per-name label and kind, computed once per tool name within one digest pass."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, tuple[str, ToolKind | None]] = {}

    def get(self, tool_name: str | None) -> tuple[str, ToolKind | None]:
        """``(label, kind)``; kind is None when it depends on the arguments."""
        if not tool_name:
            return "tool", ToolKind.GENERIC
        seen = self._seen.get(tool_name)
        if seen is None:
            kind = None if _depends_on_arguments(tool_name) else tool_kind(tool_name)
            seen = self._seen[tool_name] = (_clip_end(tool_name, 60), kind)
        return seen


# ------------------------------------------------------------------ digest results


@dataclass(frozen=True, slots=True)
class DigestRecord:
    """One change the prepass made (for the compaction report)."""

    index: int
    call_id: str | None
    tool_name: str | None
    kind: Literal["digest", "duplicate", "args_shrunk"]
    chars_before: int
    chars_after: int
    #: For ``duplicate``: the index of the newest copy it points to.
    ref_index: int | None = None

    @property
    def chars_saved(self) -> int:
        return self.chars_before - self.chars_after


#: :class:`DigestRecord`'s constructor without the frozen ``__init__`` (positional
#: arguments in field order): one record is made per digest, tens of thousands a run.
_new_record = fast_constructor(DigestRecord)


@dataclass(frozen=True, slots=True)
class DigestResult:
    messages: tuple[Message, ...]
    records: tuple[DigestRecord, ...]

    @property
    def chars_saved(self) -> int:
        return sum(r.chars_saved for r in self.records)

    @property
    def changed_indices(self) -> tuple[int, ...]:
        return tuple(sorted({r.index for r in self.records}))


def _plan(cls: type) -> tuple[attrgetter[Any], dict[str, int]] | None:
    """How to rebuild ``cls`` positionally: a getter of every field, in constructor
    order, and each field's position (None: its slots and constructor fields differ)."""
    if cls not in _POSITIONAL:
        slots = tuple(getattr(cls, "__slots__", ()))
        init = tuple(f.name for f in fields(cls) if f.init)
        _POSITIONAL[cls] = (
            (attrgetter(*slots), {n: i for i, n in enumerate(slots)})
            if len(slots) > 1 and slots == init
            else None
        )
    return _POSITIONAL[cls]


def _rebuild(obj: _T, **changes: Any) -> _T:
    """``dataclasses.replace`` for the model's frozen slotted dataclasses, about twice as
    fast: fields are read from ``__slots__`` (so none can be dropped) and passed to the
    constructor positionally (so ``__init__`` still runs). Falls back to ``replace``
    when a class's slots and constructor fields differ."""
    plan = _plan(type(obj))
    if plan is None:
        return replace(obj, **changes)
    getter, index = plan
    values = list(getter(obj))
    for name, value in changes.items():
        values[index[name]] = value
    return type(obj)(*values)


_POSITIONAL: dict[type, tuple[attrgetter[Any], dict[str, int]] | None] = {}


def _with_text(msg: Message, text: str) -> Message:
    first = msg.parts[0] if len(msg.parts) == 1 else None
    if type(first) is TextPart and type(msg) is Message and type(msg.meta) is MessageMeta:
        return _with_only_text(msg, first, text)
    meta = _rebuild(msg.meta, generated_by="digest")
    if type(first) is TextPart:
        return _rebuild(msg, parts=(_rebuild(first, text=text),), meta=meta)
    parts: list[Part] = []
    placed = False
    for part in msg.parts:
        if isinstance(part, TextPart):
            if not placed:
                parts.append(_rebuild(part, text=text))
                placed = True
        else:
            parts.append(part)
    if not placed:
        parts.insert(0, TextPart(text))
    return _rebuild(msg, parts=tuple(parts), meta=meta)


def _with_only_text(msg: Message, first: TextPart, text: str) -> Message:
    """:func:`_with_text` of a message whose one part is ``first`` (nearly every tool
    result), each object built in one positional call of the readers' constructors
    (plain attribute stores, no frozen ``__init__``): a fraction of the plain way's
    time, which adds up over tens of thousands of digests. The arguments follow each
    class's field order; the test comparing the two ways gives every field a value of
    its own (tests/core/test_digest_fast_paths), so a field added to the model or moved
    fails it."""
    e = msg.meta
    meta = new_meta(
        e.is_summary,
        e.is_injected,
        e.injected_kind,
        e.source_id,
        e.original_index,
        e.orphan,
        e.is_error,
        e.sidechain,
        "digest",  # generated_by
    )
    return new_message(
        msg.role,
        (text_part(text, first.extra, first.kind),),
        msg.tool_calls,
        msg.tool_call_id,
        msg.tool_name,
        msg.reasoning,
        meta,
        msg.extra,
        msg.hints,
    )


def _shrink_calls(
    msg: Message, index: int, over: int, to: int, records: list[DigestRecord]
) -> Message:
    calls: list[ToolCall] = []
    changed = False
    for call in msg.tool_calls:
        if len(call.arguments) > over:
            args = shrink_arguments(call.arguments, to, over)
            if args is not call.arguments:
                records.append(
                    DigestRecord(
                        index, call.id, call.name, "args_shrunk", len(call.arguments), len(args)
                    )
                )
                call = _rebuild(call, arguments=args)
                changed = True
        calls.append(call)
    return _rebuild(msg, tool_calls=tuple(calls)) if changed else msg


def digest_tool_results(
    messages: Sequence[Message],
    *,
    protect_from: int,
    min_chars: int = DEFAULT_MIN_CHARS,
    dedup: bool = True,
    shrink_args_over: int | None = DEFAULT_SHRINK_OVER,
    shrink_args_to: int = DEFAULT_SHRINK_TO,
    memo: DigestMemo | None = None,
    outcomes: OutcomeMemo | None = None,
) -> DigestResult:
    """Digest old tool results and shrink old tool-call arguments.

    Messages at index ``>= protect_from`` (the tail) stay verbatim. Before it:

    * a tool result of at least ``min_chars`` characters whose exact text also appears
      in a later result becomes ``[tool] same output as message #N``, N the newest copy;
    * any other tool result of at least ``min_chars`` characters becomes a
      :func:`digest_line` (only when the digest is shorter);
    * tool-call arguments longer than ``shrink_args_over`` characters have their string
      leaves cut to ``shrink_args_to`` (``shrink_args_over=None`` turns this off).

    Calls are paired with results by id (the nearest earlier call with that id); a
    result whose call is missing still gets a digest, by its own tool name. Changed
    messages are new objects; every other message is passed through as is. Digests
    keep role, ``tool_call_id``, ``tool_name`` and every other field, and set
    ``meta.generated_by = "digest"``. Input is expected to be redacted already.

    ``memo`` (one per transcript, :data:`DigestMemo`) remembers each result's digest
    message by the result and call objects it was made from (a pure function of them);
    duplicate back-references depend on the rest of the list and are always recomputed.
    ``outcomes`` (one per transcript) remembers each result's outcome with the index,
    call and newest copy it was decided by.
    """
    n = len(messages)
    protect_from = max(0, min(protect_from, n))
    candidates, newest, shrink_at = _scan_results(
        messages, protect_from, min_chars, dedup, shrink_args_over
    )
    if not candidates and not shrink_at:
        return DigestResult(tuple(messages), ())
    out, records = _digest_candidates(messages, candidates, newest, dedup, memo, outcomes)
    if shrink_at:
        assert shrink_args_over is not None
        for i in shrink_at:
            out[i] = _shrink_calls(out[i], i, shrink_args_over, shrink_args_to, records)
        records.sort(key=lambda r: r.index)
    return DigestResult(tuple(out), tuple(records))


#: Digests remembered across calls on one transcript: ``id(result) → (result, its call,
#: digest text, digest message or None when not shorter)`` (see digest_tool_results);
#: under ``-id(result)``, its last duplicate pointer ``(result, None, text, message)``.
DigestMemo = dict[int, tuple[Message, ToolCall | None, str, Message | None]]

#: Each candidate's outcome on the last run: ``id(result) → (result, its call, its index,
#: its newest copy's index, that copy's call id (None: itself), the message written
#: (or the result itself), its record or None when left as it was)``. The outcome is a
#: function of exactly these, so a run that finds them all the same reuses it.
OutcomeMemo = dict[
    int,
    tuple[Message, ToolCall | None, int, int, str | None, Message, "DigestRecord | None"],
]

#: A tool result to digest: its index, its text and its call (None: missing).
_Candidate = tuple[int, str, ToolCall | None]


def _scan_results(
    messages: Sequence[Message],
    protect_from: int,
    min_chars: int,
    dedup: bool,
    shrink_args_over: int | None,
) -> tuple[list[_Candidate], dict[str, int], list[int]]:
    """``(results to digest, newest index of each large text, calls to shrink)``."""
    calls: dict[str, ToolCall] = {}
    newest: dict[str, int] = {}
    candidates: list[tuple[int, str, ToolCall | None]] = []
    shrink_at: list[int] = []
    tool_role = Role.TOOL
    call: ToolCall | None  # a message's calls below; a result's call (or None) after
    for i, msg in enumerate(messages):
        tool_calls = msg.tool_calls
        if tool_calls:
            longest = 0
            for call in tool_calls:
                calls[call.id] = call
                if len(call.arguments) > longest:
                    longest = len(call.arguments)
            if shrink_args_over is not None and i < protect_from and longest > shrink_args_over:
                shrink_at.append(i)
        if msg.role is not tool_role:
            continue
        parts = msg.parts
        if len(parts) == 1 and type(parts[0]) is TextPart:
            text = parts[0].text
        elif parts:
            text = msg.text
        else:
            continue
        if len(text) < min_chars:
            continue
        if dedup:
            newest[text] = i
        if i < protect_from and msg.meta.generated_by != "digest":
            call = calls.get(msg.tool_call_id) if msg.tool_call_id is not None else None
            candidates.append((i, text, call))
    return candidates, newest, shrink_at


def _digest_candidates(
    messages: Sequence[Message],
    candidates: list[_Candidate],
    newest: dict[str, int],
    dedup: bool,
    memo: DigestMemo | None = None,
    outcomes: OutcomeMemo | None = None,
) -> tuple[list[Message], list[DigestRecord]]:
    """The messages with each candidate digested (or pointed at its newest copy) when
    that is shorter, and a record of each change; ``outcomes`` remembers both per
    candidate (see :data:`OutcomeMemo`)."""
    out = list(messages)
    records: list[DigestRecord] = []
    names = _Names()
    for i, text, call in candidates:
        msg = messages[i]
        ref = newest.get(text, i) if dedup else i
        ref_call = messages[ref].tool_call_id if ref != i else None
        if outcomes is not None:
            seen = outcomes.get(id(msg))
            if (
                seen is not None
                and seen[0] is msg
                and seen[1] is call
                and seen[2] == i
                and seen[3] == ref
                and seen[4] == ref_call
            ):
                if seen[6] is not None:
                    out[i] = seen[5]
                    records.append(seen[6])
                continue
        name = call.name if call is not None else msg.tool_name
        label, kind = names.get(name)
        if ref != i:
            new_text = f"[{label}] same output as message #{ref}" + (
                f" (call {ref_call})" if ref_call else ""
            )
            change: Literal["digest", "duplicate"] = "duplicate"
            digested = None
            if memo is not None:
                # Remembered under -id (ids are positive): the same pointer written on the
                # last run is the same object, so what is keyed by identity downstream
                # (token counts, rules, redaction) does not grow on every run.
                dup = memo.get(-id(msg))
                if dup is not None and dup[0] is msg and dup[2] == new_text:
                    digested = dup[3]
                elif len(new_text) < len(text):
                    digested = _with_text(msg, new_text)
                    memo[-id(msg)] = (msg, None, new_text, digested)
        else:
            hit = memo.get(id(msg)) if memo is not None else None
            if hit is not None and hit[0] is msg and hit[1] is call:
                new_text, digested = hit[2], hit[3]
            else:
                # digest_line(name, arguments, text), with the name's label and kind reused.
                args = _args_value(call.arguments) if call is not None else None
                if kind is None:
                    kind = tool_kind(name, args)
                new_text = _RENDER[kind](label, args, _inspect(text, msg.meta.is_error))
                digested = _with_text(msg, new_text) if len(new_text) < len(text) else None
                if memo is not None:
                    memo[id(msg)] = (msg, call, new_text, digested)
            change = "digest"
        if len(new_text) >= len(text):
            if outcomes is not None:
                outcomes[id(msg)] = (msg, call, i, ref, ref_call, msg, None)
            continue
        out[i] = digested if digested is not None else _with_text(msg, new_text)
        record = _new_record(
            i,
            msg.tool_call_id,
            name,
            change,
            len(text),
            len(new_text),
            ref if change == "duplicate" else None,
        )
        records.append(record)
        if outcomes is not None:
            outcomes[id(msg)] = (msg, call, i, ref, ref_call, out[i], record)
    return out, records
