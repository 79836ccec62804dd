"""Facts that matter in a span of messages, weighted by what the agent did with them.

Details: docs/compaction.md (`tinyjuice.facts`).
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from tinyjuice.model import Message, Role, ToolCall
from tinyjuice.rules import tool_output_text
from tinyjuice.summary import (
    error_head,
    error_lines,
    is_summary_message,
    strip_summary_wrappers,
)
from tinyjuice.summary.scan import (
    _PATH_KEYS,
    _command_text,
    _is_shell_tool,
    _paths_in,
    _string_leaves,
    remembered_call,
)

__all__ = [
    "ACTIONS",
    "Artifact",
    "Fact",
    "Facts",
    "artifact_trail_lines",
    "error_head",
    "error_lines",
    "extract_facts",
    "file_actions",
    "norm_error",
    "norm_path",
    "norm_text",
    "split_sentences",
    "tool_error_lines",
]

#: What can be done to a file, in the order a trail lists them.
ACTIONS: tuple[str, ...] = ("read", "created", "edited", "deleted", "ran")


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact of the span: its text and the message index where it first appeared."""

    text: str
    index: int


@dataclass(frozen=True, slots=True)
class Artifact:
    """A file a tool call touched: the actions (in :data:`ACTIONS` order) and where
    each first happened (``index`` is the first of them)."""

    path: str
    actions: tuple[str, ...]
    index: int
    indexes: tuple[int, ...] = ()

    def line(self) -> str:
        return f"{self.path} — {', '.join(self.actions)}"


@dataclass(frozen=True, slots=True)
class Facts:
    artifacts: tuple[Artifact, ...]
    commands: tuple[Fact, ...]
    tool_errors: tuple[Fact, ...]
    #: ``(error, the command or file it came from or None)`` per tool error, same order.
    error_sources: tuple[str | None, ...]
    background: tuple[Fact, ...]
    constraints: tuple[Fact, ...]
    decisions: tuple[Fact, ...]
    next_step: Fact | None
    latest_ask: Fact | None


# ----------------------------------------------------------------------- normalising

_QUOTES_RE = re.compile(r"[`'\"“”‘’]")
_NUM_COMMA_RE = re.compile(r"(?<=\d),(?=\d{3}\b)")


def norm_text(text: str) -> str:
    """Lower case, quotes and backticks removed, ``1,284`` → ``1284``, spaces collapsed."""
    out = _QUOTES_RE.sub("", text.lower())
    out = _NUM_COMMA_RE.sub("", out)
    return " ".join(out.split())


def norm_path(path: str) -> str:
    """A path as compared: lower case, ``./`` and trailing ``/`` dropped, ``\\`` → ``/``."""
    p = path.strip().strip("`'\"").replace("\\", "/").lower()
    while p.startswith("./"):
        p = p[2:]
    return p.rstrip("/") or p


#: A shell's own prefix on an error line (``/bin/bash: line 1: ``, ``zsh: ``).
_SHELL_PREFIX_RE = re.compile(r"^(?:/[\w/.-]*/)?(?:ba|z|da|k)?sh:\s*(?:line \d+:\s*)?")
#: Pytest's ``E`` column and a tool label such as ``[terminal]``.
_LINE_MARK_RE = re.compile(r"^(?:e\s+|\[[\w.:/-]{1,60}\]\s+)")


_TAG_RE = re.compile(r"</?[A-Za-z_][\w-]*>")


def norm_error(line: str) -> str:
    """An error line as compared: :func:`norm_text` without the shell's prefix or
    pytest's ``E`` marker."""
    out = norm_text(_TAG_RE.sub(" ", line))
    out = _LINE_MARK_RE.sub("", out)
    return _SHELL_PREFIX_RE.sub("", out).strip()


_SENTENCE_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|\n+")


def split_sentences(text: str) -> Iterator[str]:
    for s in _SENTENCE_RE.split(text):
        s = " ".join(s.split()).lstrip("-*• ").strip()
        if s:
            yield s


# ------------------------------------------------------------------------- artifacts

_READ_TOOLS = frozenset(("read", "read_file", "view", "view_file", "open_file", "readfile"))
_WRITE_TOOLS = frozenset(("write", "write_file", "create_file", "writefile", "create"))
_EDIT_TOOLS = frozenset(
    ("edit", "multiedit", "edit_file", "str_replace", "replace_in_file", "notebookedit", "patch")
)
_DELETE_TOOLS = frozenset(("delete_file", "remove_file", "delete", "rm"))
_EDITOR_COMMANDS = {
    "view": "read",
    "create": "created",
    "str_replace": "edited",
    "insert": "edited",
    "undo_edit": "edited",
}
_PATCH_RE = re.compile(r"^\*\*\* (Add|Update|Delete) File:\s*(.+?)\s*$", re.M)
_PATCH_MOVE_RE = re.compile(r"^\*\*\* Move to:\s*(.+?)\s*$", re.M)
_PATCH_ACTIONS = {"Add": "created", "Update": "edited", "Delete": "deleted"}

#: Shell programs and what they do to their file arguments.
_SHELL_READ = frozenset(("cat", "head", "tail", "less", "more", "bat", "nl", "wc", "diff"))
_SHELL_RUN = frozenset(
    ("python", "python3", "node", "bash", "sh", "zsh", "ruby", "perl", "deno", "bun", "tsx")
)
_SEGMENT_SPLIT_RE = re.compile(r"\s*(?:&&|\|\||;|\|(?!\|)|\n)\s*")
_QUOTED_RE = re.compile(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"")


def _segments(command: str) -> list[str]:
    """The simple commands of a shell line (split at ``&&``, ``||``, ``;``, ``|`` and
    line breaks), never inside quotes: ``rg 'a|b' f`` is one command."""
    if "'" not in command and '"' not in command:
        return [seg for seg in _SEGMENT_SPLIT_RE.split(command) if seg.strip()]
    quoted: list[str] = []

    def hide(m: re.Match[str]) -> str:
        quoted.append(m.group(0))
        return f"\x00{len(quoted) - 1}\x00"

    masked = _QUOTED_RE.sub(hide, command)
    out = []
    for seg in _SEGMENT_SPLIT_RE.split(masked):
        if seg.strip():
            out.append(re.sub(r"\x00(\d+)\x00", lambda m: quoted[int(m.group(1))], seg))
    return out


_REDIRECT_RE = re.compile(r"(?<![0-9&<>])(>>?)\s*([^\s;&|<>]+)")


def _shell_words(segment: str) -> list[str]:
    if not any(q in segment for q in "'\"\\"):
        return segment.split()  # nothing to unquote: the common case, without shlex
    try:
        return shlex.split(segment, comments=False)
    except ValueError:
        return segment.split()


def _path_args(words: Iterable[str]) -> list[str]:
    out: list[str] = []
    for w in words:
        if w.startswith("-") or "=" in w:
            continue
        out.extend(_paths_in(w))
    return out


def _shell_actions(command: str) -> Iterator[tuple[str, str]]:
    """``(path, action)`` for the files a shell command touches."""
    for m in _REDIRECT_RE.finditer(command):
        target = m.group(2).strip("'\"")
        if target.startswith("/dev/") or target.startswith("&"):
            continue
        for p in _paths_in(target):
            yield p, "created" if m.group(1) == ">" else "edited"
    clean = _REDIRECT_RE.sub(" ", command)
    for segment in _segments(clean):
        words = _shell_words(segment)
        while words and ("=" in words[0] or words[0] in ("sudo", "env", "time", "cd")):
            if words[0] == "cd":
                words = []
                break
            words = words[1:]
        if not words:
            continue
        prog = words[0].rsplit("/", 1)[-1]
        args = words[1:]
        yield from _program_actions(prog, args)


def _program_actions(prog: str, args: list[str]) -> Iterator[tuple[str, str]]:
    if prog in _SHELL_READ:
        for p in _path_args(args):
            yield p, "read"
    elif prog in ("sed", "perl") and any(a.startswith(("-i", "-pi")) for a in args):
        operands = [a for a in args if not a.startswith("-")]
        scripted = any(a in ("-e", "-f") for a in args)
        for p in _path_args(operands if scripted else operands[1:]):
            yield p, "edited"
    elif prog == "sed":  # without -i: it prints (sed -n '1,70p' FILE)
        operands = [a for a in args if not a.startswith("-")]
        for p in _path_args(operands[1:]):
            yield p, "read"
    elif prog == "tee":
        for p in _path_args(args):
            yield p, "edited" if "-a" in args else "created"
    elif prog in ("rm", "unlink", "rmdir"):
        for p in _path_args(args):
            yield p, "deleted"
    elif prog in ("touch", "mkdir"):
        for p in _path_args(args):
            yield p, "created"
    elif prog in ("cp", "mv") and len(_path_args(args)) >= 2:
        paths = _path_args(args)
        for p in paths[:-1]:
            yield p, "deleted" if prog == "mv" else "read"
        yield paths[-1], "created"
    elif prog in _SHELL_RUN or prog.startswith("python3."):
        for a in args:
            if a.startswith("-"):
                if a in ("-c", "-e", "-m"):
                    return
                continue
            for p in _paths_in(a):
                yield p, "ran"
            return
    elif prog.startswith("./") or prog.endswith((".sh", ".py")):
        yield prog, "ran"


def _tool_actions(name: str, args: Any) -> Iterator[tuple[str, str]]:
    """``(path, action)`` for one tool call's file effects."""
    low = name.lower().rsplit("__", 1)[-1]
    if isinstance(args, dict):
        named = [
            v.strip()
            for k, v in args.items()
            if k in _PATH_KEYS and k not in ("cwd", "workdir") and isinstance(v, str) and v.strip()
        ]
        if low in ("str_replace_based_edit_tool", "str_replace_editor", "text_editor"):
            action = _EDITOR_COMMANDS.get(str(args.get("command", "")))
            if action:
                for p in named:
                    yield p, action
            return
        for kind, tools in (
            ("read", _READ_TOOLS),
            ("created", _WRITE_TOOLS),
            ("edited", _EDIT_TOOLS),
            ("deleted", _DELETE_TOOLS),
        ):
            if low in tools:
                for p in named:
                    yield p, kind
                return
    patch = _patch_text(low, args)
    if patch:
        yield from _patch_actions(patch)
        return
    if _is_shell_tool(name) and isinstance(args, dict):
        for key in ("command", "cmd"):
            raw = args.get(key)
            if isinstance(raw, list) and raw and raw[0] == "apply_patch":
                yield from _patch_actions(" ".join(str(r) for r in raw[1:]))
                continue
            cmd = _command_text(raw)
            if cmd:
                if "*** Begin Patch" in cmd:
                    yield from _patch_actions(cmd)
                else:
                    yield from _shell_actions(cmd)


def _patch_text(low: str, args: Any) -> str | None:
    if isinstance(args, str) and "*** Begin Patch" in args:
        return args
    if "patch" in low and isinstance(args, dict):
        for v in args.values():
            if isinstance(v, str) and "*** " in v:
                return v
    return None


def _patch_actions(patch: str) -> Iterator[tuple[str, str]]:
    for m in _PATCH_RE.finditer(patch):
        yield m.group(2), _PATCH_ACTIONS[m.group(1)]
    for m in _PATCH_MOVE_RE.finditer(patch):
        yield m.group(1), "created"


_CALLS = attrgetter("tool_calls")
#: A tool call's file effects, ``(name, arguments) → ((norm_path, spelling, action), …)``.
EffectsMemo = dict[tuple[str, str], tuple[tuple[str, str, str], ...]]
#: Each call's effects, remembered across spans and transcripts (:func:`remembered_call`).
_SHARED_EFFECTS: EffectsMemo = {}


def file_actions(
    middle: Sequence[Message], *, start_index: int = 0, memo: EffectsMemo | None = None
) -> tuple[Artifact, ...]:
    """Every file the span's tool calls touched, first touched first (see the module
    docs for the rules). Paths are de-duplicated by :func:`norm_path`; the first spelling
    is kept. ``memo`` (one per transcript) remembers each call's effects across calls."""
    seen: dict[str, dict[str, int]] = {}
    spelling: dict[str, str] = {}
    # A call repeated verbatim (same tool, same arguments) touches the same files.
    done: EffectsMemo = {} if memo is None else memo
    # Only the messages with tool calls (found in C).
    for offset in itertools.compress(range(len(middle)), map(_CALLS, middle)):
        for call in middle[offset].tool_calls:
            effects = done.get((call.name, call.arguments))
            if effects is None:
                effects = done[(call.name, call.arguments)] = remembered_call(
                    _SHARED_EFFECTS, call, _call_effects
                )
            for key, path, action in effects:
                acts = seen.get(key)
                if acts is None:
                    acts = seen[key] = {}
                    spelling[key] = path  # the first spelling (the keys are added together)
                if action not in acts:
                    acts[action] = start_index + offset
    _merge_relative(seen, spelling)
    out = []
    for key, acts in seen.items():
        ordered = tuple(a for a in ACTIONS if a in acts)
        indexes = tuple(acts[a] for a in ordered)
        out.append(Artifact(spelling[key], ordered, min(indexes), indexes))
    return tuple(sorted(out, key=lambda a: a.index))


def _call_effects(call: ToolCall) -> tuple[tuple[str, str, str], ...]:
    """``(norm_path, spelling, action)`` for each file effect of one call."""
    args = call.parsed_arguments()
    if args is None and "*** Begin Patch" in call.arguments:
        args = call.arguments
    out = []
    for path, action in _tool_actions(call.name, args):
        key = norm_path(path)
        if key and key not in ("/dev/null", "-"):
            out.append((key, path.strip(), action))
    return tuple(out)


def _merge_relative(seen: dict[str, dict[str, int]], spelling: dict[str, str]) -> None:
    """A relative path and an absolute one ending with it (the same file seen from the
    working directory) become one artifact, under the relative spelling."""
    absolute = [k for k in seen if k.startswith("/")]
    for rel in [k for k in seen if not k.startswith(("/", "~"))]:
        for key in absolute:
            if key in seen and key.endswith("/" + rel):
                for action, index in seen.pop(key).items():
                    acts = seen[rel]
                    acts[action] = min(index, acts.get(action, index))
                del spelling[key]


def artifact_trail_lines(artifacts: Sequence[Artifact]) -> list[str]:
    """One ``path — read, edited`` line per artifact (the fallback's trail)."""
    return [a.line() for a in artifacts]


# ------------------------------------------------------------------ background names

_LISTING_TOOLS = frozenset(
    (
        "ls",
        "glob",
        "grep",
        "list_files",
        "list_dir",
        "list_directory",
        "search_files",
        "find_files",
        "file_search",
        "codebase_search",
        "search",
        "find",
        "tree",
    )
)
_LISTING_PROGRAMS = frozenset(("ls", "find", "tree", "grep", "rg", "ag", "fd", "du", "locate"))
#: Git subcommands whose output is content (diffs, listings, history), not results.
_GIT_CONTENT = frozenset(("diff", "show", "log", "status", "ls-files", "blame", "grep"))
_SYSTEM_BIN_RE = re.compile(r"^/(?:usr/(?:local/)?)?s?bin/[\w.+-]+$")


def _is_listing_call(name: str, args: Any) -> bool:
    """A call whose result is a listing, search hits or a file's content: names in it
    are background, and "Error" inside it is text, not a failure."""
    low = name.lower().rsplit("__", 1)[-1]
    if low in _LISTING_TOOLS or low in _READ_TOOLS or low in _EDIT_TOOLS or low in _WRITE_TOOLS:
        return True  # an edit's result echoes the file's lines
    if low in ("str_replace_based_edit_tool", "str_replace_editor", "text_editor"):
        return isinstance(args, dict) and args.get("command") == "view"
    if not (_is_shell_tool(name) and isinstance(args, dict)):
        return False
    cmd = _command_text(args.get("command") or args.get("cmd"))
    if not cmd:
        return False
    segments = _segments(cmd)
    progs = []
    for seg in segments:
        words = _shell_words(seg)
        if words and words[0] != "cd":
            progs.append(words[0].rsplit("/", 1)[-1])
    if progs and progs[0] == "git":
        words = _shell_words(segments[0])
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        return sub in _GIT_CONTENT
    reads = _SHELL_READ | {"sort", "uniq"}
    if progs and progs[0] == "sed" and not any(w.startswith("-i") for w in _shell_words(cmd)):
        progs = ["cat", *progs[1:]]  # sed -n '1,70p' FILE prints the file
    return bool(progs) and all(p in _LISTING_PROGRAMS or p in reads for p in progs)


def is_system_binary(path: str) -> bool:
    """``/bin/bash``, ``/usr/bin/python3``: an interpreter, not a file of the work."""
    return _SYSTEM_BIN_RE.match(path) is not None


def listing_results(middle: Sequence[Message]) -> set[int]:
    """Offsets (in ``middle``) of tool results that answer a listing, search or read call."""
    listing_ids: set[str] = set()
    for m in middle:
        for call in m.tool_calls:
            if _is_listing_call(call.name, call.parsed_arguments()):
                listing_ids.add(call.id)
    return {
        k
        for k, m in enumerate(middle)
        if m.role is Role.TOOL and m.tool_call_id is not None and m.tool_call_id in listing_ids
    }


# ----------------------------------------------------------------- prose: the user's

_CONSTRAINT_RE = re.compile(
    r"\b(?:always|never|don'?t|do not|must(?: not)?|mustn'?t|make sure|only use|no longer|"
    r"avoid|keep (?:the|all|every|it|them)|shouldn'?t|should never|under no circumstances|"
    r"prefer)\b",
    re.I,
)
_DECISION_RE = re.compile(
    r"\b(?:decided|decide to|decision|instead of|switch(?:ed|ing)? to|let'?s use|"
    r"going with|we'?ll use|i'?ll use|chose|choosing|opted|the fix is|the cause (?:is|was)|"
    r"root cause|because|so that)\b",
    re.I,
)
_NEXT_RE = re.compile(
    r"^(?:i'?ll|i will|i'?m going to|let me|now let me|next,? i|next:|then i'?ll|now i'?ll|"
    r"let'?s|now,? i'?ll|going to)\b",
    re.I,
)


def _real_user(m: Message) -> bool:
    return (
        m.role is Role.USER
        and m.is_real_user
        and not m.meta.generated_by
        and not is_summary_message(m)
    )


def _constraints(middle: Sequence[Message], start: int) -> list[Fact]:
    out: dict[str, Fact] = {}
    for offset, m in enumerate(middle):
        if not _real_user(m):
            continue
        for s in split_sentences(m.text):
            if _CONSTRAINT_RE.search(s) and len(s) <= 400:
                out.setdefault(norm_text(s), Fact(s, start + offset))
    return list(out.values())


def _decisions(middle: Sequence[Message], start: int) -> list[Fact]:
    out: dict[str, Fact] = {}
    for offset, m in enumerate(middle):
        if m.role is not Role.ASSISTANT or is_summary_message(m):
            continue
        for s in split_sentences(m.text):
            if _DECISION_RE.search(s) and 20 <= len(s) <= 400:
                out.setdefault(norm_text(s), Fact(s, start + offset))
    return list(out.values())


def _next_step(middle: Sequence[Message], start: int) -> Fact | None:
    """The step the assistant's last words announced; None when its last text announced
    nothing (or a real ask came after it): work moved on since any earlier plan."""
    for offset in range(len(middle) - 1, -1, -1):
        m = middle[offset]
        if _real_user(m) and m.text.strip():
            return None
        if m.role is not Role.ASSISTANT or is_summary_message(m) or not m.text.strip():
            continue
        for s in reversed(list(split_sentences(m.text))):
            if _NEXT_RE.match(s) and len(s) >= 12:
                return Fact(s, start + offset)
        return None
    return None


# ---------------------------------------------------------------------- extraction


def _error_source(middle: Sequence[Message], offset: int, calls: dict[str, ToolCall]) -> str | None:
    m = middle[offset]
    call = calls.get(m.tool_call_id or "")
    if call is None:
        return m.tool_name
    args = call.parsed_arguments()
    if isinstance(args, dict):
        cmd = _command_text(args.get("command") or args.get("cmd"))
        if cmd:
            return " ".join(cmd.split())
        for k in ("file_path", "path", "filename"):
            v = args.get(k)
            if isinstance(v, str) and v.strip():
                return v.strip()
    return call.name


def tool_error_lines(text: str, is_error: bool, *, head_first: bool = False) -> list[str]:
    """The error lines of a tool result's text and, when it is flagged as an error, its
    head line(s) before them.

    A head line that is also an error line keeps its place among them, unless
    ``head_first``: then the head lines come first and in order, repeated among the
    error lines (the review lists them so; the order differs only then).
    """
    lines = list(error_lines(text)) if text else []
    if is_error and text.strip():
        if head_first:
            return [*error_head(text), *lines]
        for first in reversed(error_head(text)):
            if first not in lines:
                lines.insert(0, first)
    return lines


def _tool_errors(middle: Sequence[Message], start: int) -> tuple[list[Fact], list[str | None]]:
    calls = {c.id: c for m in middle for c in m.tool_calls}
    content = listing_results(middle)
    seen: dict[str, Fact] = {}
    sources: dict[str, str | None] = {}
    for offset, m in enumerate(middle):
        observed = m.role is Role.TOOL or m.meta.injected_kind == "observation"
        if not observed or (offset in content and not m.meta.is_error):
            continue
        for line in tool_error_lines(tool_output_text(m.text), m.meta.is_error):
            flat = " ".join(line.split())
            key = norm_error(flat)
            if key and key not in seen:
                seen[key] = Fact(flat, start + offset)
                sources[key] = _error_source(middle, offset, calls)
    return list(seen.values()), list(sources.values())


def _commands(middle: Sequence[Message], start: int) -> list[Fact]:
    out: dict[str, Fact] = {}
    for offset, m in enumerate(middle):
        for call in m.tool_calls:
            if not _is_shell_tool(call.name):
                continue
            args = call.parsed_arguments()
            if not isinstance(args, dict):
                continue
            for key in ("command", "cmd"):
                cmd = _command_text(args.get(key))
                if cmd:
                    flat = " ".join(cmd.split())
                    out.setdefault(norm_text(flat), Fact(flat, start + offset))
    return list(out.values())


def _background(
    middle: Sequence[Message], start: int, artifacts: Sequence[Artifact]
) -> tuple[list[Fact], set[str]]:
    """Paths seen only in listing/search results or naming a system binary, and the
    normalised set of every path seen anywhere else (the foreground)."""
    listing = listing_results(middle)
    foreground = {norm_path(a.path) for a in artifacts}
    candidates: dict[str, Fact] = {}
    for offset, m in enumerate(middle):
        text = strip_summary_wrappers(m.text) if is_summary_message(m) else m.text
        paths = list(_paths_in(text)) if text else []
        for call in m.tool_calls:
            args = call.parsed_arguments()
            for key, leaf in _string_leaves(args) if args is not None else ():
                if key in _PATH_KEYS and leaf.strip():
                    foreground.add(norm_path(leaf))
                foreground.update(norm_path(p) for p in _paths_in(leaf))
        for p in paths:
            key = norm_path(p)
            if offset in listing or (m.role is Role.TOOL and is_system_binary(p)):
                candidates.setdefault(key, Fact(p, start + offset))
            elif not is_system_binary(p) or m.role is not Role.TOOL:
                foreground.add(key)
    background = [f for k, f in candidates.items() if k not in foreground]
    return background, foreground


def extract_facts(middle: Sequence[Message], *, start_index: int = 0) -> Facts:
    """The facts of ``middle`` (see the module docs). Texts are not redacted here."""
    artifacts = file_actions(middle, start_index=start_index)
    errors, sources = _tool_errors(middle, start_index)
    background, _ = _background(middle, start_index, artifacts)
    latest = None
    for offset in range(len(middle) - 1, -1, -1):
        m = middle[offset]
        if _real_user(m) and m.text.strip():
            latest = Fact(m.text.strip(), start_index + offset)
            break
    return Facts(
        artifacts=artifacts,
        commands=tuple(_commands(middle, start_index)),
        tool_errors=tuple(errors),
        error_sources=tuple(sources),
        background=tuple(background),
        constraints=tuple(_constraints(middle, start_index)),
        decisions=tuple(_decisions(middle, start_index)),
        next_step=_next_step(middle, start_index),
        latest_ask=latest,
    )
