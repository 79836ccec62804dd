"""Scanners over tool text: paths, shell commands, error lines (one pass, batched).

Shared by the fallback summary, :mod:`tinyjuice.facts` and :mod:`tinyjuice.review`.
The batched forms (:func:`_error_lines_many`, :func:`_paths_many`) must equal the
per-text ones (tests/core/test_scan_equivalence.py).
"""

from __future__ import annotations

import itertools
import re
import shlex
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

if TYPE_CHECKING:
    from tinyjuice.model import ToolCall

_T = TypeVar("_T")

_URL_RE = re.compile(r"\bhttps?://[^\s<>\"'`)\]}]+", re.I)


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_EXTENSIONS = _words(
    """
    py pyi pyx ipynb js jsx mjs cjs ts tsx vue svelte json jsonl ndjson yaml yml toml ini
    cfg conf env md mdx rst txt csv tsv html htm css scss sass less xml svg sh bash zsh
    fish ps1 bat cmd c h cc cpp cxx hpp hh cs go rs java kt kts scala swift m mm rb php pl
    lua r sql db sqlite sqlite3 lock log proto gradle tf tfvars hcl dockerfile mk cmake
    zig ex exs erl hs ml dart jl nix patch diff png jpg jpeg gif webp pdf zip gz tgz tar
    whl so dll dylib exe wasm tcss lockb sum mod
    """
)
_EXT_ALT = "|".join(sorted(set(_EXTENSIONS), key=lambda e: (-len(e), e)))
_DOTFILES = _words(
    """
    env gitignore gitattributes dockerignore cursorrules windsurfrules editorconfig npmrc
    nvmrc bashrc zshrc profile pre-commit-config
    """
)
_PATH_CHARS = r"[\w@+.~-]"
_PATH_RE = re.compile(
    r"(?<![\w./\\:-])(?:"
    r"[A-Za-z]:\\[^\s\"'`<>|*?,;()\[\]{}]+"  # windows absolute
    r"|(?:~|\.\.?)?/" + _PATH_CHARS + r"+(?:/" + _PATH_CHARS + r"*)*"  # unix abs, ~/, ./
    r"|" + _PATH_CHARS + r"+(?:/" + _PATH_CHARS + r"+)+/?"  # relative with a slash
    r"|[\w@+-][\w@+.-]*\.(?:" + _EXT_ALT + r")\b"  # bare file name with a known extension
    r"|\.(?:" + "|".join(re.escape(d) for d in _DOTFILES) + r")(?:\.[\w-]+)?\b"  # dotfiles
    r")"
)
_EXT_END_RE = re.compile(r"\.[A-Za-z0-9]{1,10}$")
_NUMERIC_RE = re.compile(r"[\d/.:\-]+")
_UNIX_ROOTS = frozenset(
    _words(
        """
        tmp etc usr var home opt bin sbin dev proc srv mnt root lib Users Applications
        Library Volumes private workspace work app data
        """
    )
)
_PATH_KEYS = frozenset({"path", "workdir", "file_path", "output_path", "filename", "cwd"})
_SHELL_WORDS = ("terminal", "shell", "bash", "exec", "command", "powershell", "cmd")
_KEY_ARG_NAMES = (
    "path",
    "file_path",
    "filename",
    "command",
    "cmd",
    "pattern",
    "query",
    "url",
    "workdir",
    "cwd",
    "output_path",
    "action",
    "goal",
    "description",
    "id",
)
_ERROR_RE = re.compile(
    r"Traceback|\b\w*(?:Error|Exception)\b|\bERROR\b|\berror:|\bfailed\b|\bFAILED\b"
    r"|No such file|[Pp]ermission denied|PERMISSION DENIED"
    r"|\bexit(?:ed)?(?: with)?(?: code| status)[\s:=]*(?P<code>-?\d+)"
    r"|->\s*exit\s+(?P<code2>-?\d+)"
)
_DIGEST_RE = re.compile(r"^\[[\w.:/-]{1,60}\] \S")


#: Device files that show up in shell commands and diffs; nothing to remember.
_PSEUDO_FILES = frozenset(
    ("/dev/null", "/dev/zero", "/dev/stdin", "/dev/stdout", "/dev/stderr", "/dev/tty")
)


def _accept_path(raw: str) -> str | None:
    p = raw.rstrip(".,:;!?'\"-")
    if len(p) < 2 or _NUMERIC_RE.fullmatch(p) or p in _PSEUDO_FILES:
        return None
    if p[1:3] == ":\\":
        return p
    if p.startswith(("~/", "./", "../")):
        return p if len(p) > 2 and not p.endswith(("~/", "./")) else None
    has_ext = bool(_EXT_END_RE.search(p.rsplit("/", 1)[-1])) and not p.endswith(".")
    if p.startswith("/"):
        segments = [s for s in p.split("/") if s]
        if not segments:
            return None
        if len(segments) == 1 and not has_ext and segments[0] not in _UNIX_ROOTS:
            return None  # "/compact", "/help": slash commands, not paths
        return p
    if "/" in p:
        return p if has_ext or p.endswith("/") or p.count("/") >= 2 else None
    return p  # a bare name with a known extension, or a dotfile


#: What a clipped text ends with (``_clip_lines`` here and ``_clip_end`` in digests).
_CLIPPED = "…"


def _paths_in(text: str) -> Iterator[str]:
    if "/" not in text and "\\" not in text and "." not in text:
        return
    scrubbed = _URL_RE.sub(" ", text) if "://" in text else text
    for m in _PATH_RE.finditer(scrubbed):
        if scrubbed.startswith(_CLIPPED, m.end()):
            continue  # cut short by a clip ("src/app/lo…"): not a path that exists
        p = _accept_path(m.group(0))
        if p is not None:
            yield p


def _string_leaves(value: Any) -> Iterator[tuple[str | None, str]]:
    """``(key, string)`` for every string leaf of a JSON value (key of the enclosing dict)."""
    stack: list[tuple[str | None, Any]] = [(None, value)]
    while stack:
        key, v = stack.pop()
        if isinstance(v, str):
            yield key, v
        elif isinstance(v, dict):
            stack.extend(reversed([(str(k), x) for k, x in v.items()]))
        elif isinstance(v, list):
            stack.extend(reversed([(key, x) for x in v]))


#: Calls a :func:`remembered_call` memory holds before it is emptied, and the longest
#: arguments it keeps (a long call, a file written or a patch, is rarely repeated).
_CALL_MEMO_SIZE = 4096
_CALL_MEMO_ARGS = 512


def remembered_call(
    memo: dict[tuple[str, str], _T], call: ToolCall, work: Callable[[ToolCall], _T]
) -> _T:
    """``work(call)`` (a pure function of the call's name and arguments), remembered in
    ``memo`` across summaries: a dataset's trajectories repeat many calls verbatim (the
    same file read, the same test run). Bounded: only short arguments are kept, and
    ``memo`` is emptied when full."""
    key = (call.name, call.arguments)
    done = memo.get(key)
    if done is None:
        done = work(call)
        if len(call.arguments) <= _CALL_MEMO_ARGS:
            if len(memo) >= _CALL_MEMO_SIZE:
                memo.clear()
            memo[key] = done
    return done


def _is_shell_tool(name: str) -> bool:
    low = name.lower()
    return any(w in low for w in _SHELL_WORDS)


def _command_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value.strip() or None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        if (
            len(value) >= 3
            and value[0].rsplit("/", 1)[-1] in ("bash", "sh", "zsh")
            and value[1] in ("-c", "-lc")
        ):
            return value[-1].strip() or None
        return shlex.join(value)
    return None


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def error_lines(text: str) -> Iterator[str]:
    """The whole lines of ``text`` holding an error (stripped, in order, each once).

    An error is a traceback, an ``…Error``/``…Exception`` word, ``ERROR``, ``error:``,
    ``failed``/``FAILED``, "No such file", "Permission denied" or a non-zero exit code
    (``exit code 0`` is not an error). The one rule the fallback summary, the review and
    :mod:`tinyjuice.facts` share; :func:`_error_lines_many` is its batched form.
    """
    last_start = -1
    for m in _ERROR_RE.finditer(text):
        code = m.group("code") or m.group("code2")
        if code is not None and code.lstrip("-") == "0":
            continue
        start = text.rfind("\n", 0, m.start()) + 1
        if start == last_start:
            continue
        last_start = start
        end = text.find("\n", m.end())
        line = text[start : len(text) if end < 0 else end].strip()
        if line:
            yield line


_EXIT_ONLY_RE = re.compile(r"^exit(?:ed)?(?: with)? (?:code|status)[\s:=]*-?\d+$", re.I)
_WORDY_RE = re.compile(r"[A-Za-z]{3,}")


def error_head(text: str) -> list[str]:
    """The line(s) naming a failed tool result: its first non-blank line, and the next
    one too when the first only gives the exit code and the next has words ("Exit code
    127" then the shell's "python: command not found"; not a test-progress line)."""
    lines = []
    for line in text.splitlines():
        if line.strip():
            lines.append(line.strip())
            if len(lines) == 2:
                break
    if (
        len(lines) == 2
        and _EXIT_ONLY_RE.match(lines[0])
        and _WORDY_RE.search(lines[1])
        and not lines[1].startswith("Traceback (most recent call last)")
    ):
        return lines
    return lines[:1]


#: Where :data:`_ERROR_RE` can match: each of its alternatives starts with one of these
#: literals, except ``[Pp]ermission denied`` (its literal starts one character later),
#: those found by :data:`_ERROR_E_RE`, and the two that hold ``exit``
#: (:func:`_error_starts` finds ``->\s*exit`` from its ``exit``: code is full of arrows,
#: ``exit`` is rare).
_ERROR_NEEDLES: tuple[str, ...] = (
    "Traceback",
    "error:",
    "failed",
    "FAILED",
    "No such file",
    "PERMISSION DENIED",
)
#: ``ERROR`` (where its alternative starts), and the literals of ``\b\w*(?:Error|
#: Exception)\b`` (it starts where the word holding one starts). One search: the engine
#: skips to each ``E`` at C speed, several times faster than a ``str.find`` per literal
#: (none of the three holds a second ``E``: no occurrence hides inside another).
_ERROR_E_RE = re.compile("E(?:RROR|rror|xception)")
#: Joins texts for one error scan: no match or line can cross it (``\x00`` is neither a
#: word character nor whitespace, and each side is a line break).
_ERROR_JOIN = "\n\x00\n"


def _error_starts(big: str) -> list[int]:
    """Sorted positions of ``big`` where :data:`_ERROR_RE` may match (a superset)."""
    found: set[int] = set()
    add = found.add
    find = big.find
    for needle in _ERROR_NEEDLES:
        i = find(needle)
        while i >= 0:
            add(i)
            i = find(needle, i + 1)
    i = find("ermission denied")
    while i >= 0:
        if i > 0:
            add(i - 1)
        i = find("ermission denied", i + 1)
    i = find("exit")
    while i >= 0:
        add(i)
        j = i  # an arrow may stand before the blanks before it
        while j > 0 and big[j - 1].isspace():
            j -= 1
        if j >= 2 and big[j - 2 : j] == "->":
            add(j - 2)
        i = find("exit", i + 1)
    # The start of the word around each word end; a scan back stops at the previous
    # one (same word: same start), so a long word is walked once.
    last_at = last_start = -1
    for m in _ERROR_E_RE.finditer(big):
        i = m.start()
        if big[i + 1] == "R":  # ERROR
            add(i)
            continue
        j = i
        while j > 0 and j != last_at and (big[j - 1].isalnum() or big[j - 1] == "_"):
            j -= 1
        start = last_start if j == last_at else j
        add(start)
        last_at, last_start = i, start
    return sorted(found)


def _error_lines_many(texts: Sequence[str]) -> dict[int, list[str]]:
    """``{k: lines}``: the stripped lines :func:`_errors_in` would take from ``texts[k]``,
    in order, for every text that has some.

    One scan of all texts joined: :data:`_ERROR_RE` is tried only where one of its
    literals occurs, which yields exactly the matches of ``finditer`` (a match can only
    start at such a place, and the places are tried in order, each from the end of the
    previous match) at a fraction of the cost of running it over every character.
    """
    out: dict[int, list[str]] = {}
    if not texts:
        return out
    starts: list[int] = []
    pos = 0
    for t in texts:
        starts.append(pos)
        pos += len(t) + len(_ERROR_JOIN)
    big = _ERROR_JOIN.join(texts)
    size = len(big)
    match = _ERROR_RE.match
    rfind = big.rfind
    find = big.find
    cur = 0
    last_start = -1
    for p in _error_starts(big):
        if p < cur:
            continue
        m = match(big, p)
        if m is None:
            continue
        cur = m.end()
        code = m.group("code") or m.group("code2")
        if code is not None and code.lstrip("-") == "0":
            continue
        start = rfind("\n", 0, p) + 1
        if start == last_start:
            continue
        last_start = start
        end = find("\n", cur)
        line = big[start : size if end < 0 else end].strip()
        if line:
            k = bisect_right(starts, p) - 1
            found = out.get(k)
            if found is None:
                out[k] = [line]
            else:
                found.append(line)
    return out


def _trie_pattern(words: Iterable[str]) -> str:
    """A regex matching exactly ``words``, shaped as a trie (``py|pyi|pyx`` becomes
    ``py(?:i|x)?``): the engine reads a few letters where it would try every word."""
    trie: dict[str, Any] = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}  # a word ends here

    def pattern(node: dict[str, Any]) -> str:
        alts = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        if not alts:
            return ""
        if len(alts) == 1 and "" not in node:
            return alts[0]
        return "(?:" + "|".join(alts) + ")" + ("?" if "" in node else "")

    return pattern(trie)


#: A token can hold a path only if it has a *candidate*: ``/``, ``\\``, or a match of
#: this, a dot, a known extension or dotfile, and a word's end. A bare name's extension
#: and a dotfile's name end so in every match of :data:`_PATH_RE` (a dotfile's suffix
#: starts with a dot); words such as ``self.name`` are not read. Its literal dot lets
#: the engine skip to candidates in C.
_DOT_HINT_RE = re.compile(r"\.(?:" + _trie_pattern({*_EXTENSIONS, *_DOTFILES}) + r")\b")
#: :data:`_PATH_RE` behind a guard every one of its matches passes (the first character
#: outside ``[\w@+~-]`` is one of ``/ . \\ :``), which fails plain words in one pass
#: instead of several backtracking ones. Same matches, fewer steps.
_PATH_SCAN_RE = re.compile(
    _PATH_RE.pattern.replace(r"(?<![\w./\\:-])(?:", r"(?<![\w./\\:-])(?=[\w@+~-]*+[/.\\:])(?:", 1)
)


def _paths_many(texts: Sequence[str]) -> dict[int, list[str]]:
    """``{k: list(_paths_in(texts[k]))}`` for the texts that hold a path, in one pass.

    Each distinct text is scanned once, in one pass over all of them (:func:`_scan_paths`).
    Texts with a URL take the per-text path (URLs are blanked first).
    """
    out: dict[int, list[str]] = {}
    first: dict[str, int] = {}
    repeats: list[tuple[int, int]] = []
    batch: list[int] = []
    for k, t in enumerate(texts):
        if "/" not in t and "\\" not in t and "." not in t:
            continue
        seen = first.setdefault(t, k)
        if seen != k:
            repeats.append((k, seen))
        elif "://" in t:
            with_url = list(_paths_in(t))
            if with_url:
                out[k] = with_url
        else:
            batch.append(k)
    if batch:
        _scan_paths(texts, batch, out)
    for k, seen in repeats:
        found = out.get(seen)
        if found is not None:
            out[k] = found
    return out


#: The rest of a whitespace-delimited token.
_TOKEN_REST_RE = re.compile(r"\S*")


def _scan_paths(texts: Sequence[str], batch: list[int], out: dict[int, list[str]]) -> None:
    """Paths of ``texts[k]`` for every ``k`` in ``batch`` into ``out`` (see :func:`_paths_many`).

    The texts are joined by line breaks. A path match never crosses whitespace and holds
    a candidate (:func:`_hinted_spans`), so only the tokens holding candidates are
    scanned, each from its start to its end: after whitespace and before whitespace,
    where the pattern behaves as at the ends of a text.
    """
    starts: list[int] = []
    pos = 0
    for k in batch:
        starts.append(pos)
        pos += len(texts[k]) + 1
    big = "\n".join([texts[k] for k in batch])
    accepted: dict[str, str] = {}
    # Each distinct stretch is scanned once (a token repeats far more than a text).
    segments: dict[str, list[str]] = {}
    for start, end in _hinted_spans(big):
        segment = big[start:end]
        paths = segments.get(segment)
        if paths is None:
            paths = segments[segment] = _found_paths(segment, accepted)
        if paths:
            k = batch[bisect_right(starts, start) - 1]
            found = out.get(k)
            if found is None:
                out[k] = paths[:]
            else:
                found += paths


def _hinted_spans(big: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the whitespace-delimited tokens of ``big`` that hold a
    candidate (see :data:`_DOT_HINT_RE`), in order: where a path match may lie. The
    tokens without a candidate are never read.

    The next candidate is the nearest of the next ``/``, ``\\`` and dot candidate, each
    found by its own search in C (one pass each over ``big``: a search is only redone
    once a token has gone past its answer); its token's start is where the run of
    non-blank characters before it ends, read backwards in ``big`` reversed.
    """
    find = big.find
    dot = _DOT_HINT_RE.search
    token_rest = _TOKEN_REST_RE.match
    size = len(big)
    backwards = big[::-1]
    pos = 0
    slash = back = dotted = -1  # each search's answer (size: none left), not made yet
    while True:
        if slash < pos:
            slash = find("/", pos) % (size + 1)  # -1 (none) becomes size
        if back < pos:
            back = find("\\", pos) % (size + 1)
        if dotted < pos:
            m = dot(big, pos)
            dotted = size if m is None else m.start()
        q = min(slash, back, dotted)
        if q >= size:
            return
        # (\S* always matches; the token before q never runs past pos, a blank or 0.)
        start = size - token_rest(backwards, size - q).end()  # type: ignore[union-attr]
        end = token_rest(big, q).end()  # type: ignore[union-attr]
        yield start, end
        pos = end


def _found_paths(text: str, accepted: dict[str, str]) -> list[str]:
    """The paths :data:`_PATH_SCAN_RE` finds in ``text`` (URLs already blanked) that
    :func:`_accept_path` takes and no clip cut short; ``accepted`` remembers its answers
    by match ("" for none)."""
    out: list[str] = []
    for m in _PATH_SCAN_RE.finditer(text):
        if text.startswith(_CLIPPED, m.end()):
            continue  # cut short by a clip (see _paths_in)
        raw = m.group(0)
        p = accepted.get(raw)
        if p is None:
            p = accepted[raw] = _accept_path(raw) or ""
        if p:
            out.append(p)
    return out


def _first_paths(texts: Sequence[str], named: Mapping[int, str]) -> list[str]:
    """The paths of ``texts`` in order, ``named[k]`` (a path a tool call named) first of
    text ``k``'s, as far as first occurrences go: ``dict.fromkeys`` of the result is
    ``dict.fromkeys`` of :func:`_chained_paths`, all a merged extraction keeps.

    A path match never spans whitespace and is found the same in a stretch of
    :func:`_hinted_spans` read alone (each side of one is whitespace, where the pattern
    behaves as at the ends of a text; URLs are blanked the same way). So only each
    distinct stretch is read, the first time it occurs, and its paths are remembered
    across calls (:data:`_STRETCH_PATHS`).
    """
    memo = _STRETCH_PATHS
    out: list[str] = []
    seen: set[str] = set()
    accepted: dict[str, str] = {}
    for a, b in itertools.pairwise(sorted({*named, 0, len(texts)})):
        if a in named:
            out.append(named[a])
        big = "\n".join(texts[a:b])
        stretches = dict.fromkeys(big[start:end] for start, end in _hinted_spans(big))
        new = [s for s in stretches if s not in seen]
        seen.update(new)
        if len(memo) + len(new) > _STRETCH_MEMO_SIZE:
            memo.clear()
        for s in new:
            paths = memo.get(s)
            if paths is None:
                paths = memo[s] = tuple(
                    _found_paths(_URL_RE.sub(" ", s) if "://" in s else s, accepted)
                )
            out += paths
    return out


#: Each stretch's paths (:func:`_found_paths`, URLs blanked), remembered by
#: :func:`_first_paths` across calls: a dataset's trajectories, and one preview's
#: spans, share most of their tokens (a path, a command, a module name).
_STRETCH_PATHS: dict[str, tuple[str, ...]] = {}
#: Stretches :data:`_STRETCH_PATHS` holds before it is emptied (bounded memory).
_STRETCH_MEMO_SIZE = 1 << 16


def _chained_paths(texts: Sequence[str], named: Mapping[int, str]) -> list[str]:
    """Every text's paths in order, ``named[k]`` first of text ``k``'s (the readable
    definition :func:`_first_paths` equals as far as first occurrences go)."""
    out: list[str] = []
    for k, text in enumerate(texts):
        if k in named:
            out.append(named[k])
        out += _paths_in(text)
    return out


def _undiff_paths(paths: dict[str, None]) -> dict[str, None]:
    """``paths`` with diff prefixes dropped: when both ``a/P`` and ``b/P`` were seen (a
    ``git diff`` header), both stand for ``P``. First-seen order, no duplicates."""
    diffed = {p[2:] for p in paths if p.startswith("a/") and "b/" + p[2:] in paths}
    if not diffed:
        return paths
    out: dict[str, None] = {}
    for p in paths:
        if p.startswith(("a/", "b/")) and p[2:] in diffed:
            p = p[2:]
        out.setdefault(p, None)
    return out
