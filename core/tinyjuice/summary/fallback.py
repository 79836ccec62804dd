"""The deterministic, model-free :func:`fallback_summary` and its budget allocation."""

from __future__ import annotations

import itertools
import operator
import re
import string
from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator, Mapping, Sequence, Sized
from dataclasses import dataclass, field
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, cast

from tinyjuice.budget import SummaryKind
from tinyjuice.markers import strip_summary_wrappers
from tinyjuice.model import Message, Role, TextPart, ToolCall
from tinyjuice.redact import redact_clip, redact_text, texts_without_secrets
from tinyjuice.rules import tool_output_text
from tinyjuice.summary.contract import StructuredSummary
from tinyjuice.summary.scan import (
    _DIGEST_RE,
    _KEY_ARG_NAMES,
    _PATH_KEYS,
    _URL_RE,
    _command_text,
    _error_lines_many,
    _first_paths,
    _is_shell_tool,
    _paths_many,
    _scalar_text,
    _string_leaves,
    _undiff_paths,
    error_head,
    error_lines,
    remembered_call,
)
from tinyjuice.summary.wrapper import is_summary_message
from tinyjuice.text import cut_end, flatten, one_line
from tinyjuice.tokens import TiktokenCounter, TokenCounter, default_counter
from tinyjuice.tokens import has_piece_floor as _floors

if TYPE_CHECKING:
    from tinyjuice.facts import EffectsMemo
    from tinyjuice.survival import RulesMemo

#: Budget priority (first = kept first) and the label of each category.
_CATEGORIES: tuple[tuple[str, str], ...] = (
    ("artifacts", "artifact trail entries"),
    ("rules", "rules"),
    ("asks", "user asks"),
    ("paths", "paths"),
    ("commands", "commands"),
    ("errors", "errors"),
    ("urls", "URLs"),
    ("tools", "tool names"),
    ("tool_calls", "tool calls"),
    ("digests", "tool results"),
    ("last_turns", "last turns"),
)

_ASK_CHARS = 2000
_COMMAND_CHARS = 300
_ERROR_CHARS = 300
_TURN_CHARS = 200
_ARG_CHARS = 80


class TextRedactor:
    """:func:`tinyjuice.redact.redact_text` remembering every answer (a pure function).

    A fallback summary redacts the same items again and again (each render of the
    appendix while it is fitted to the budget, and every preview of one transcript); pass
    one ``TextRedactor`` to reuse the scans (``memo`` may be shared between them). It
    also carries the summary's other per-text and per-message memories (``paths``,
    ``rules``, ``facts``), so a new span only pays for the messages it has not seen.
    """

    __slots__ = ("bullets", "costs", "facts", "memo", "rules", "trail")

    def __init__(self, memo: dict[str, str] | None = None) -> None:
        self.memo: dict[str, str] = {} if memo is None else memo
        #: The rules of each message (tinyjuice.survival.find_rules), likewise.
        self.rules: RulesMemo = {}
        #: The items of each message (the extraction is per message), likewise.
        self.facts = FactsMemo()
        #: The appendix bullet of each item (``_bullet`` of its redaction), likewise.
        self.bullets: dict[str, str] = {}
        #: Each item's bullet cost in tokens (+1 for its line break), per counter.
        self.costs: dict[TokenCounter, dict[str, int]] = {}
        #: Each tool call's file effects (the artifact trail), likewise.
        self.trail: EffectsMemo = {}

    def prime(self, texts: Iterable[str]) -> None:
        """Remember, with one joined scan, the texts that hold nothing to redact
        (:func:`tinyjuice.redact.texts_without_secrets`): the calls that follow on them
        are answered from memory."""
        memo = self.memo
        for text in texts_without_secrets(t for t in texts if t not in memo):
            memo[text] = text

    def __call__(self, text: str) -> str:
        done = self.memo.get(text)
        if done is None:
            done = self.memo[text] = redact_text(text)
        return done


class _RedactedItems(Mapping[str, tuple[str, ...]]):
    """Items per category, redacted when first read.

    What the budget left out can run to tens of thousands of items on a long session;
    most callers only need the counts, so each category is redacted on first access
    (and kept), which reads exactly like a mapping redacted up front.
    """

    __slots__ = ("_done", "_raw", "_redact")

    def __init__(
        self, raw: Mapping[str, Sequence[str]], redact: Callable[[str], str] | None = None
    ) -> None:
        self._raw = {key: tuple(v) for key, v in raw.items() if v}
        self._done: dict[str, tuple[str, ...]] = {}
        self._redact = redact

    def __getitem__(self, key: str) -> tuple[str, ...]:
        done = self._done.get(key)
        if done is None:
            redact = self._redact or TextRedactor()
            done = self._done[key] = tuple(redact(i) for i in self._raw[key])
        return done

    def __iter__(self) -> Iterator[str]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)

    def __repr__(self) -> str:
        return repr(dict(self))


@dataclass(frozen=True, slots=True)
class FallbackSummary:
    """A summary built locally without a model (low confidence).

    ``text`` is the unwrapped body (:func:`render_summary_message` wraps it);
    ``included`` / ``omitted`` count items per category (asks, paths, commands, errors,
    urls, tools, tool_calls, digests, last_turns); ``omitted`` are the ones left out to fit
    the budget, and ``omitted_items`` names them (redacted), so a review can show exactly
    what the budget cost.
    """

    text: str
    summary: StructuredSummary
    included: Mapping[str, int]
    omitted: Mapping[str, int]
    tokens: int
    source_messages: int
    confidence: Literal["low"] = "low"
    omitted_items: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: Every item left out, as markdown (redacted); "" when nothing was. Stored in the
    #: archive by a commit under ``appendix_id`` (its sha256, whose first digits the
    #: summary's note names).
    appendix: str = ""
    appendix_id: str | None = None

    @property
    def kind(self) -> SummaryKind:
        return SummaryKind.FALLBACK


#: Characters of a long item redacted before it is clipped (the clip shows far fewer).
_CLIP_READ = 16_384


def _one_line(text: str, limit: int, clean: Container[str] = ()) -> str:
    """:func:`tinyjuice.text.one_line`, redacted: a cut never leaves part of a key.
    ``clean``: reads (see :func:`_clean_reads`) known to hold nothing to redact."""
    if len(text) <= limit:
        return flatten(text)  # nothing to cut (flattening never lengthens a text)
    # A long text is flattened whole only when its head's words do not already run over
    # the limit (the words of a prefix are never more than the whole text's).
    head = text[: 2 * limit + 64]
    flat = flatten(head)
    # When they do, the head is also the read's: its line, if the read is clean.
    line = cut_end(flat, limit) if len(flat) > limit else None
    if line is None:
        if len(head) < len(text):
            flat = flatten(text)
        if len(flat) <= limit:
            return flat
    # Clipped after redacting (nothing to do for a clean read), and redacted again.
    read = text[: max(_CLIP_READ, 4 * limit)]
    if read in clean:
        return redact_text(_head_line(read, limit) if line is None else line)
    return redact_clip(read, lambda r: _head_line(r, limit))


def _head_line(text: str, limit: int) -> str:
    """``one_line(text, limit)``, from the flattened head alone when that already runs
    over the limit: it is the start of the whole text flattened (a word cut at the end
    of the head is the start of the text's word)."""
    head = text[: 2 * limit + 64]
    if len(head) < len(text):
        flat = flatten(head)
        if len(flat) > limit:
            return cut_end(flat, limit)
    return one_line(text, limit)


def _clean_reads(texts: Iterable[str], limit: int) -> set[str]:
    """What :func:`_one_line` reads of each of ``texts`` it may clip at ``limit``, where
    that holds nothing to redact: one joined scan
    (:func:`tinyjuice.redact.texts_without_secrets`) for all of them, not a full
    redaction each."""
    reads = [t[: max(_CLIP_READ, 4 * limit)] for t in texts if len(t) > limit]
    return texts_without_secrets(reads) if reads else set()


def _clip_lines(text: str, limit: int) -> str:
    """Multi-line (a user's ask keeps its lines), redacted, the cut counted in characters."""
    text = text.strip()
    if len(text) <= limit:
        return text
    more = len(text) - limit
    return redact_clip(text, lambda r: f"{r[:limit]} …[{more:,} more chars]")


def _call_summary(call: ToolCall, args: Any) -> str:
    if isinstance(args, dict):
        picked = [k for k in _KEY_ARG_NAMES if k in args and not isinstance(args[k], dict | list)]
        if not picked:
            picked = [k for k, v in args.items() if not isinstance(v, dict | list)][:2]
        shown = ", ".join(f"{k}={_one_line(_scalar_text(args[k]), _ARG_CHARS)}" for k in picked[:3])
    elif args is None and call.arguments:
        shown = _one_line(call.arguments, _ARG_CHARS)
    else:
        shown = "" if args is None else _one_line(_scalar_text(args), _ARG_CHARS)
    return f"{call.name}({shown})"


class _Collector:
    """First-seen-ordered, de-duplicated items per category."""

    def __init__(self) -> None:
        self.items: dict[str, dict[str, None]] = {key: {} for key, _ in _CATEGORIES}
        self.call_counts: dict[str, list[Any]] = {}

    def add(self, category: str, item: str) -> None:
        if item:
            self.items[category].setdefault(item, None)

    def add_call(self, rendered: str, call_id: str) -> None:
        entry = self.call_counts.get(rendered)
        if entry is None:
            self.call_counts[rendered] = [1, call_id]
        else:
            entry[0] += 1


def _errors_in(text: str, out: _Collector, label: str) -> None:
    for line in error_lines(text):
        out.add("errors", label + _one_line(line, _ERROR_CHARS))


#: The categories of a message's items, in the order :class:`_Segment` keeps them.
_FIELDS: tuple[str, ...] = (
    "tools",
    "urls",
    "digests",
    "commands",
    "paths",
    "errors",
    #: The real user ask (clipped), if the message is one.
    "asks",
    #: ``(rendered call, call id)`` per tool call.
    "calls",
)
#: Categories merged as they are (paths are merged then un-diffed).
_MERGED: tuple[str, ...] = ("tools", "urls", "digests", "commands", "errors")


class _Segment(NamedTuple):
    """The items of messages extracted together, flat per category (:data:`_FIELDS`):
    message ``j`` adds ``columns[c][starts[c][j] : starts[c][j + 1]]``, in its order.

    The fallback's extraction is per message: the items of a span are its messages'
    items, first seen first, without duplicates. So each message's are remembered
    (:class:`FactsMemo`) and a new span (a boundary move) only merges them; flat
    columns make a run of remembered messages one slice per category, not a record
    per message.
    """

    columns: tuple[list[Any], ...]
    starts: tuple[Sequence[int], ...]

    def items(self, j: int) -> dict[str, list[Any]]:
        """Message ``j``'s items per category."""
        return {
            key: self.columns[c][self.starts[c][j] : self.starts[c][j + 1]]
            for c, key in enumerate(_FIELDS)
        }


#: Where a remembered message's items are: (the message, kept alive while remembered,
#: or None; its segment; its index there).
_Where = tuple[Message | None, _Segment, int]


class FactsMemo:
    """Each message's items (in a :class:`_Segment`), remembered across fallback
    summaries of one transcript (a preview's boundary moves).

    A message is recognised by identity (kept alive with its result, so its id is never
    another's). A digest's items depend only on its tool name, error flag and text, so
    they are also remembered by those values: a digest (a de-duplication one above all)
    is a new, equal message on every run, found by value and not kept. Other messages
    come back as the same objects (the analysis remembers their redaction), so they are
    not keyed by value (a new one is extracted again: the same items).
    """

    __slots__ = ("by_id", "by_value")

    def __init__(self) -> None:
        self.by_id: dict[int, _Where] = {}
        self.by_value: dict[tuple[str | None, bool, str], _Where] = {}

    def columns(self, middle: Sequence[Message]) -> dict[str, Iterable[Any]]:
        """The items of every message of ``middle`` per category, chained in message
        order; the new messages extracted in one batch."""
        by_id, by_value = self.by_id, self.by_value
        hits: list[_Where | None] = list(map(by_id.get, map(id, middle)))
        todo = list(itertools.compress(range(len(hits)), map(operator.not_, hits)))
        keys = {i: _digest_key(middle[i]) for i in todo if middle[i].meta.generated_by == "digest"}
        for i, key in keys.items():
            hits[i] = by_value.get(key)
        if any(hits[i] is not None for i in keys):
            todo = [i for i in todo if hits[i] is None]
        if todo:
            new = [middle[i] for i in todo]
            segment = _extract(new)
            where = list(zip(new, itertools.repeat(segment), range(len(new)), strict=False))
            by_id.update(zip(map(id, new), where, strict=True))
            by_value.update((keys[i], (None, segment, j)) for j, i in enumerate(todo) if i in keys)
            if len(todo) == len(middle):
                return dict(zip(_FIELDS, segment.columns, strict=True))
            for i, w in zip(todo, where, strict=True):
                hits[i] = w
        runs = _runs(hits)  # type: ignore[arg-type]  # (none left)
        return {key: _chained(runs, c) for c, key in enumerate(_FIELDS)}


def _digest_key(m: Message) -> tuple[str | None, bool, str]:
    """What a digest's items depend on (see :class:`FactsMemo`)."""
    parts = m.parts
    text = parts[0].text if len(parts) == 1 and type(parts[0]) is TextPart else m.text
    return (m.tool_name, m.meta.is_error, text)


def _runs(hits: Iterable[_Where]) -> list[tuple[_Segment, int, int]]:
    """``hits`` as runs ``(segment, first, end)`` of consecutive messages of a segment."""
    runs: list[tuple[_Segment, int, int]] = []
    current: _Segment | None = None
    first = end = 0
    for _, segment, j in hits:
        if segment is current and j == end:
            end += 1
            continue
        if current is not None:
            runs.append((current, first, end))
        current, first, end = segment, j, j + 1
    if current is not None:
        runs.append((current, first, end))
    return runs


def _chained(runs: list[tuple[_Segment, int, int]], c: int) -> list[Any]:
    """Category ``c``'s items of ``runs``, in order."""
    out: list[Any] = []
    for segment, first, end in runs:
        starts = segment.starts[c]
        out += segment.columns[c][starts[first] : starts[end]]
    return out


def _collect(
    middle: Sequence[Message], last_turns: int, memo: FactsMemo | None = None
) -> _Collector:
    """The items of ``middle`` per category (from ``memo`` when it has them; without
    one, chained straight from the pass over the messages), merged first seen first
    without duplicates."""
    columns = _flat_facts(middle) if memo is None else memo.columns(middle)
    out = _Collector()
    items = out.items
    for key in _MERGED:
        items[key] = dict.fromkeys(columns[key])
    items["paths"] = _undiff_paths(dict.fromkeys(columns["paths"]))
    asks = list(columns["asks"])
    items["asks"] = dict.fromkeys(reversed(asks))
    calls = list(columns["calls"])
    first_id = dict(reversed(calls))
    counts = Counter(map(itemgetter(0), calls))  # first seen first
    out.call_counts = {r: [n, first_id[r]] for r, n in counts.items()}
    items["tool_calls"] = dict.fromkeys(
        r + (f" ×{n}, first id {first_id[r]}" if n > 1 else f" id {first_id[r]}")
        for r, n in counts.items()
    )
    turns = middle[len(middle) - last_turns :] if last_turns > 0 else ()
    clean = _clean_reads([_turn_text(m) for m in turns], _TURN_CHARS)
    for m in turns:
        out.add("last_turns", _turn_line(m, clean))
    return out


@dataclass(slots=True)
class _Pending:
    """Texts to scan for paths and error lines in one batched pass, in message order
    (flat lists: no per-item containers)."""

    path_texts: list[str] = field(default_factory=list)
    #: A path argument named by its key, listed just before the scan of its text.
    named_paths: dict[int, str] = field(default_factory=dict)
    error_texts: list[str] = field(default_factory=list)
    error_labels: list[str] = field(default_factory=list)
    #: The first line of an error result, listed after the lines found in its text.
    error_firsts: dict[int, str] = field(default_factory=dict)


def _urls(text: str) -> list[str]:
    """The URLs of a text holding ``://`` (callers test that inline: most texts do not)."""
    return [u.group(0).rstrip(".,:;!?'\"") for u in _URL_RE.finditer(text)]


#: (tools, urls, digests, commands, real asks, calls) of the messages, in their order.
_Early = tuple[list[str], list[str], list[str], list[str], list[str], list[tuple[str, str]]]


#: Lengths marked per message by :func:`_first_pass`, in :data:`_FIELDS` order: of the
#: lists of :data:`_Early`, with the path texts and the error texts in place of the
#: paths and errors (found later).
_MARK_WIDTH = len(_FIELDS)


class _Pass(NamedTuple):
    """What :func:`_first_pass` found: the messages' early items (:data:`_Early`), flat;
    unless merged, ``marks[w * j : w * j + w]`` (``w``: :data:`_MARK_WIDTH`): the
    lengths before message ``j`` (once more at the end); the paths found in each path
    text and the error lines in each error text."""

    early: _Early
    marks: list[int]
    found: dict[int, list[str]]
    lines: dict[int, list[str]]
    todo: _Pending


def _extract(messages: Sequence[Message]) -> _Segment:
    """Each message's items, as one :class:`_Segment`; paths and error lines found in
    one batched scan."""
    early, marks, found, lines, todo = _first_pass(messages)
    ps, errors = _text_items(found, lines, todo)
    path_starts = _starts(len(todo.path_texts), todo.named_paths, found)
    error_starts = _starts(len(todo.error_texts), lines, todo.error_firsts)
    tools, urls, digests, commands, asks, calls = early
    starts = [marks[c::_MARK_WIDTH] for c in range(_MARK_WIDTH)]
    paths_at, errors_at = _FIELDS.index("paths"), _FIELDS.index("errors")
    # Those two were marked in texts: their items start where their texts' items do.
    starts[paths_at] = [path_starts[k] for k in starts[paths_at]]
    starts[errors_at] = [error_starts[k] for k in starts[errors_at]]
    return _Segment((tools, urls, digests, commands, ps, errors, asks, calls), tuple(starts))


def _starts(n: int, *items: Mapping[int, str | list[str]]) -> list[int]:
    """Where the items of each of ``n`` scanned texts start in their category (one more
    entry at the end): ``items`` map a text's index to its item (a str) or items."""
    sizes = [0] * n
    for found in items:
        for k, v in found.items():
            sizes[k] += 1 if type(v) is str else len(v)
    return [0, *itertools.accumulate(sizes)]


def _text_items(
    found: dict[int, list[str]], lines: dict[int, list[str]], todo: _Pending
) -> tuple[list[str], list[str]]:
    """The path and error items of the scanned texts, in their order."""
    named_paths = todo.named_paths
    # Path and error texts are listed in message order: their indices order the items.
    ps = _path_items(sorted(named_paths.keys() | found.keys()), named_paths, found)
    return ps, _text_errors(lines, todo)


def _text_errors(lines: dict[int, list[str]], todo: _Pending) -> list[str]:
    """The error items of the scanned texts, in their order."""
    firsts = todo.error_firsts
    return _error_items(sorted(lines.keys() | firsts.keys()), todo.error_labels, lines, firsts)


def _flat_facts(messages: Sequence[Message]) -> dict[str, Iterable[Any]]:
    """Every message's items per category, chained in message order: what
    :func:`_extract` gives, without marks per message (when none is remembered), and
    without a repeated tool call's items but the call (merged first seen first, the
    same)."""
    early, _, _, lines, todo = _first_pass(messages, merged=True)
    ps = _first_paths(todo.path_texts, todo.named_paths)
    errors = _text_errors(lines, todo)
    tools, urls, digests, commands, asks, calls = early
    return {
        "tools": tools,
        "urls": urls,
        "digests": digests,
        "commands": commands,
        "paths": ps,
        "errors": errors,
        "asks": asks,
        "calls": calls,
    }


def _path_items(
    texts: Iterable[int], named_paths: dict[int, str], found: dict[int, list[str]]
) -> list[str]:
    """The paths of these scanned texts (by index, in order): the one a tool call named,
    then those found in its text."""
    out: list[str] = []
    for k in texts:
        named = named_paths.get(k)
        if named is not None:
            out.append(named)
        more = found.get(k)
        if more:
            out += more
    return out


def _error_items(
    texts: Iterable[int],
    labels: Sequence[str],
    lines: dict[int, list[str]],
    firsts: dict[int, str],
) -> list[str]:
    """The error items of these scanned texts (by index, in order): each error line found,
    labelled, then the first line of a failed result."""
    out: list[str] = []
    for k in texts:
        label = labels[k]
        out += [label + _one_line(line, _ERROR_CHARS) for line in lines.get(k, ())]
        first_line = firsts.get(k)
        if first_line is not None:
            out.append(first_line)
    return out


# Long for speed: one pass over the messages collecting every kind of fact, the path
# and error texts queued for one batched scan (per-kind helpers would walk them 5 times).
def _first_pass(messages: Sequence[Message], merged: bool = False) -> _Pass:
    """The per-message pass of :func:`_extract`, the path and error texts scanned.
    ``merged``: only the items' first occurrences matter (see :class:`_Calls`), no marks
    are kept (``marks`` is left empty) and the path texts are left to the caller
    (:func:`tinyjuice.summary.scan._first_paths`; ``found`` is left empty)."""
    todo = _Pending()
    path_texts, error_texts, error_labels = todo.path_texts, todo.error_texts, todo.error_labels
    calls = _Calls(todo, repeats=not merged)
    tool_role = Role.TOOL
    user_role = Role.USER
    marks: list[int] = []
    mark = marks.extend
    tools: list[str] = []
    urls: list[str] = []
    digests: list[str] = []
    commands: list[str] = []
    asks: list[str] = []
    rendered: list[tuple[str, str]] = []
    early = (tools, urls, digests, commands, asks, rendered)
    # In _FIELDS order (see _MARK_WIDTH).
    sized: tuple[Sized, ...] = (
        tools, urls, digests, commands, path_texts, error_texts, asks, rendered
    )  # fmt: skip
    for m in messages:
        if not merged:
            mark(map(len, sized))
        parts = m.parts
        text = parts[0].text if len(parts) == 1 and type(parts[0]) is TextPart else m.text
        role = m.role
        if (
            role is user_role
            and m.is_real_user
            and not m.meta.generated_by
            and not is_summary_message(m)
            and text.strip()
        ):
            asks.append(_clip_lines(text, _ASK_CHARS))
        if role is tool_role:
            name = m.tool_name
            if name:
                tools.append(name)
            if text:
                path_texts.append(text)
                if "://" in text:
                    urls += _urls(text)
                stripped = text.strip()
                if m.meta.is_error and stripped:
                    first = " — ".join(error_head(text))
                    todo.error_firsts[len(error_texts)] = f"[{name or 'tool'}] " + _one_line(
                        first, _ERROR_CHARS
                    )
                if stripped and (
                    m.meta.generated_by == "digest"
                    or ("\n" not in stripped and len(stripped) < 400 and _DIGEST_RE.match(stripped))
                ):
                    digests.append(_one_line(stripped, 400))
                # {"output": …, "exit_code": 1} results are scanned through their output.
                error_texts.append(tool_output_text(text) if text[:1] == "{" else text)
                error_labels.append(f"[{name or 'tool'}] ")
        elif text:
            path_texts.append(text)
            if "://" in text:
                urls += _urls(text)
            if role is not Role.ASSISTANT:
                # Errors are what tools (or the user, pasting) reported: "failed" in the
                # assistant's own prose is not one (tinyjuice.facts).
                error_texts.append(text)
                error_labels.append("")
        for call in m.tool_calls:
            rendered.append(calls.add(call, tools, urls, commands))
    if not merged:
        mark(map(len, sized))
    # Merged, only first occurrences count: the caller scans the texts by token.
    found = _paths_many(path_texts) if path_texts and not merged else {}
    return _Pass(early, marks, found, _error_lines_many(error_texts), todo)


#: What a tool call adds (:func:`_work_out`): (rendered, URLs, commands, (named path or
#: None, text)…).
_CallItems = tuple[str, tuple[str, ...], tuple[str, ...], tuple[tuple[str | None, str], ...]]
#: Each call's items, remembered across summaries (:func:`remembered_call`).
_CALL_ITEMS: dict[tuple[str, str], _CallItems] = {}


class _Calls:
    """Tool calls: the call itself, its tool name, paths, URLs and shell commands (a
    call repeated verbatim, same tool and arguments, is worked out once).

    ``repeats=False`` (items merged across messages, first seen first): a repeated call
    adds only itself, as its name, paths, URLs and commands are in already.
    """

    __slots__ = ("_repeats", "_seen", "_todo")

    def __init__(self, todo: _Pending, repeats: bool = True) -> None:
        self._todo = todo
        self._repeats = repeats
        #: The calls of these messages so far, by (name, arguments).
        self._seen: dict[tuple[str, str], _CallItems] = {}

    def add(
        self, call: ToolCall, tools: list[str], urls: list[str], commands: list[str]
    ) -> tuple[str, str]:
        """Adds the call's items to the lists and its texts to the pending scan;
        returns ``(rendered call, call id)``."""
        key = (call.name, call.arguments)
        seen = self._seen.get(key)
        if seen is None:
            seen = self._seen[key] = remembered_call(_CALL_ITEMS, call, _work_out)
        elif not self._repeats:
            return seen[0], call.id
        rendered, call_urls, call_commands, texts = seen
        if call.name:
            tools.append(call.name)
        urls += call_urls
        commands += call_commands
        todo = self._todo
        path_texts = todo.path_texts
        for named, text in texts:
            if named is not None:
                todo.named_paths[len(path_texts)] = named
            path_texts.append(text)
        return rendered, call.id


def _work_out(call: ToolCall) -> _CallItems:
    """A tool call's items (see :data:`_CallItems`), from its name and arguments alone."""
    args = call.parsed_arguments()
    rendered = _call_summary(call, args)
    if args is None:
        return rendered, (), (), ((None, call.arguments),)
    if type(args) is dict and not any(isinstance(v, dict | list) for v in args.values()):
        leaves: Iterable[tuple[str | None, Any]] = args.items()
    else:
        leaves = _string_leaves(args)
    urls: list[str] = []
    texts: list[tuple[str | None, str]] = []
    for key, leaf in leaves:
        if not isinstance(leaf, str):
            continue
        named = leaf.strip() if key in _PATH_KEYS and len(leaf) <= 500 else ""
        texts.append((named or None, leaf))
        if "://" in leaf:
            urls += _urls(leaf)
    commands: list[str] = []
    if isinstance(args, dict) and _is_shell_tool(call.name):
        for key in ("command", "cmd"):
            cmd = _command_text(args.get(key))
            if cmd:
                commands.append("`" + _one_line(cmd, _COMMAND_CHARS) + "`")
    return rendered, tuple(urls), tuple(commands), tuple(texts)


def _turn_line(m: Message, clean: Container[str] = ()) -> str:
    """A last turn's line; ``clean``: see :func:`_one_line`."""
    if m.role is Role.TOOL:
        label = f"tool result {m.tool_name or ''}".strip()
    elif is_summary_message(m):
        label = "earlier summary"
    else:
        label = m.role.value
    text = _turn_text(m)
    body = _one_line(text, _TURN_CHARS, clean) if text.strip() else ""
    if m.tool_calls:
        called = "called " + ", ".join(c.name for c in m.tool_calls)
        body = f"{body} ({called})" if body else called
    if m.media:
        body = (body + " " if body else "") + f"[{len(m.media)} media]"
    return f"[{label}] {body or '(empty)'}"


def _turn_text(m: Message) -> str:
    """The text a last turn's line shows."""
    return strip_summary_wrappers(m.text) if is_summary_message(m) else m.text


def _bullet(item: str) -> str:
    # Continuation lines are indented four spaces, so a "# heading" inside a quoted ask
    # cannot be read back as a section heading.
    return "- " + item.replace("\n", "\n    ")


def _note(
    n_messages: int,
    omitted: Mapping[str, int],
    focus: str | None = None,
    appendix_id: str | None = None,
) -> str:
    note = (
        f"Deterministic fallback summary of {n_messages:,} earlier message(s), generated "
        "locally without a model; it may be incomplete."
    )
    if focus:
        note += f" Focus: {_one_line(focus, 200)} (matching items are listed first)."
    left = [f"{omitted[key]:,} {label}" for key, label in _CATEGORIES if omitted.get(key)]
    if left:
        note += " Left out to fit the budget: " + ", ".join(left) + "."
    if left and appendix_id:
        note += (
            f" Every item left out is in appendix sha256:{appendix_id}, archived with the "
            f"commit (`tjui recover {appendix_id} -o FILE`)."
        )
    return note


def _block(key: str, items: Sequence[str]) -> str:
    """A category's items as bullets, one a line (``_bullet`` of each, joined in C when
    no item holds a line break, as few do)."""
    if not items:
        return ""
    if _one_lines(items):
        return "- " + "\n- ".join(items)
    return "\n".join([_bullet(i) for i in items])


def _one_lines(items: Iterable[str]) -> bool:
    """Whether no item holds a line break (each is its bullet's one line)."""
    return not any(map(str.__contains__, items, itertools.repeat("\n")))


class _Blocks:
    """:func:`_block`, remembering each category's last items and block: a draft is
    rendered again and again with one or two categories changed."""

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen: dict[str, tuple[list[str], str]] = {}

    def __call__(self, key: str, items: Sequence[str]) -> str:
        seen = self.seen.get(key)
        if seen is not None and seen[0] == items:
            return seen[1]
        block = _block(key, items)
        self.seen[key] = (list(items), block)
        return block


def _assemble(
    n_messages: int,
    chosen: Mapping[str, list[str]],
    omitted: Mapping[str, int],
    focus: str | None = None,
    appendix_id: str | None = None,
    blocks: Callable[[str, Sequence[str]], str] = _block,
) -> StructuredSummary:
    """The summary of the ``chosen`` items. ``blocks`` renders a category's bullets
    (a draft's :class:`_Blocks` keeps them for its next render: one category changes
    at a time while it is fitted)."""

    def block(key: str) -> str:
        return blocks(key, chosen.get(key, ()))

    def labelled(*pairs: tuple[str, str]) -> str:
        out = [f"{label}:\n{block(key)}" for label, key in pairs if chosen.get(key)]
        return "\n".join(out)

    asks = block("asks")
    if asks:
        asks = (
            "Newest first, verbatim; historical — the latest user message overrides them.\n" + asks
        )
    return StructuredSummary(
        historical_task_snapshot=_note(n_messages, omitted, focus, appendix_id),
        pending_asks=asks,
        relevant_files=labelled(
            ("Artifact trail (every file a tool touched: what was done)", "artifacts"),
            ("Other paths", "paths"),
        )
        if chosen.get("artifacts")
        else block("paths"),
        completed_actions=labelled(
            ("Tools used", "tools"),
            ("Commands run", "commands"),
            ("Tool calls", "tool_calls"),
            ("Tool results", "digests"),
        ),
        blockers=block("errors"),
        constraints_preferences=block("rules"),
        critical_context=labelled(("URLs", "urls")),
        active_state=labelled(("Last turns before the compacted span", "last_turns")),
    )


#: Anchors: what a continuation cannot re-derive and what a summary review measures.
#: They are all served before any of the verbose categories gets a token.
_ANCHORS: tuple[str, ...] = (
    "artifacts",
    "rules",
    "asks",
    "paths",
    "commands",
    "errors",
    "urls",
    "tools",
)
_VERBOSE: tuple[str, ...] = ("tool_calls", "digests", "last_turns")

#: Pass-one share per category, priority order, unused shares flowing down: anchors
#: share the whole room; verbose categories share what the anchors left.
_SHARES: dict[str, float] = {
    "artifacts": 0.20,
    "rules": 0.08,
    "asks": 0.27,
    "paths": 0.10,
    "commands": 0.14,
    "errors": 0.12,
    "urls": 0.06,
    "tools": 0.03,
    "tool_calls": 0.50,
    "digests": 0.30,
    "last_turns": 0.20,
}


def _cost_floor(item: str) -> int:
    """A lower bound of an item's bullet cost (``count(_bullet(item)) + 1``) under a
    :data:`~tinyjuice.tokens.SPACE_SPLIT_PATTERNS` encoding: one token per piece the
    pre-tokenizer must make, here the item's runs split at spaces that hold a non-blank
    character (Python's blanks include every ``\\s`` of the tokenizer) and the bullet's
    dash; plus the line break. Cheap enough for every item; :func:`_piece_floor` is
    finer."""
    if item.isprintable():
        # No blank but the space: every non-empty run counts.
        runs = item.split(" ")
        return len(runs) - runs.count("") + 2
    # The runs neither empty nor blank, counted in C (an empty run is not blank).
    runs = _bullet(item).split(" ")
    return len(runs) - runs.count("") - sum(map(str.isspace, runs)) + 1


#: Runs of ASCII letters (apostrophes within: a contraction may share their piece) and of
#: up to three ASCII digits: see :func:`_piece_floor`.
_PIECE_RUN_RE = re.compile(r"[A-Za-z']*[A-Za-z][A-Za-z']*|[0-9]{1,3}")


def _piece_floor(item: str) -> int:
    """Like :func:`_cost_floor`, counting for ASCII text its letter runs and its digits in
    threes (a piece holds letters or digits, never both, and never two letter runs), the
    dash and the line break; 0 for other text."""
    return len(_PIECE_RUN_RE.findall(item)) + 2 if item.isascii() else 0


#: The least an item can cost (:func:`_cost_floor` and every exact cost): its bullet is
#: at least one token, and its line break one more.
_MIN_COST = 2

#: Characters of items per token of room above which :func:`_allocate` uses floors.
_FLOORS_OVER = 8


#: Where a text may be cut for counting under a :func:`_floors` encoding: after a line
#: break followed by a character neither blank nor ``/``, and before a line break that
#: follows an ASCII letter or digit. No pre-tokenizer piece of either pattern holds a
#: line break and then such a character (o200k's punctuation piece may run on into
#: ``\n/``), nor a letter or digit and then a line break (letters and digits end their
#: piece; only punctuation takes the line breaks after it), so a text's count is the sum
#: of its stretches'. A one-line bullet ending in a letter or digit is then a stretch of
#: its own: counted once by :func:`_allocate`, found again in every render.
_LINE_CUT_RE = re.compile(r"(?<=\n)(?=[^\s/])|(?<=[A-Za-z0-9])(?=\n)")
_ASCII_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _stretches(text: str) -> list[str]:
    """``_LINE_CUT_RE.split(text)``, from the text's lines (``re`` tries both lookbehinds
    at every character: several times slower on a summary)."""
    lines = text.split("\n")
    out: list[str] = []
    cur = lines[0]
    for line in itertools.islice(lines, 1, None):
        if cur and cur[-1] in _ASCII_ALNUM:
            out.append(cur)
            cur = "\n"
        else:
            cur += "\n"
        if line and line[0] != "/" and not line[0].isspace():
            out.append(cur)
            cur = line
        else:
            cur += line
    out.append(cur)
    return out


#: ASCII punctuation and the ellipsis clipped items end with: characters neither blank,
#: letters nor digits for the tokenizer (:func:`_end_piece`).
_PUNCTUATION = string.punctuation + "…"


def _end_piece(text: str) -> str | None:
    """The last pre-tokenizer piece of ``text`` under a :func:`_floors` encoding when
    ``text`` ends in :data:`_PUNCTUATION`: that run, with the space before it, if any
    (the punctuation piece's optional lead); line breaks appended join that piece and no
    other, so ``count(text + breaks) == count(text) - count(piece) + count(piece +
    breaks)``. None when the text does not end so, or when the run follows a character
    other than an ASCII letter or digit, a space or a tab (one that may belong to the
    run's piece). Not a line break: under o200k a punctuation piece runs on over the
    line breaks and slashes after it, so in ``x.\\n/-`` the piece ``.\\n/`` takes the
    run's slash."""
    head = text.rstrip(_PUNCTUATION)
    if len(head) == len(text):
        return None
    before = head[-1:]
    if before == " ":
        return text[len(head) - 1 :]
    if not before or before in _ASCII_ALNUM or before == "\t":
        return text[len(head) :]
    return None


#: A space before an ASCII digit: after a character not blank, a piece of its own under
#: a :func:`_floors` encoding (no number takes the space before it, and no piece runs on
#: from a non-blank character into a space), so a text may be cut before it too. Numbers
#: vary between notes ("of 12 earlier message(s)"), the words between them recur.
_NUMBER_RE = re.compile(r" (?=[0-9])")

#: Where two sections of a rendered summary meet (a :data:`_LINE_CUT_RE` cut before
#: the ``#``; a bullet's continuation lines are indented, so no item holds it).
_SECTION_BREAK = "\n\n## "


class LineCounter:
    """``counter`` counting a text as the sum of its stretches between
    :data:`_LINE_CUT_RE` cuts, each counted (and kept) by ``counter``: the same counts
    under a :func:`_floors` encoding, for texts that mostly repeat lines counted before
    (a summary counted again and again with a few lines changed, then wrapped; its
    bullets counted one by one as it was allocated: :meth:`_stretch`).

    A text of several sections (split at :data:`_SECTION_BREAK`, one of those cuts) is
    summed section by section, each section's sum remembered by its text: one summary's
    renders mostly change one section. Keep one instance for one summary's counts."""

    def __init__(self, counter: TiktokenCounter) -> None:
        self.inner = counter
        self.name = counter.name
        self.kind = counter.kind
        self.message_overhead = counter.message_overhead
        #: Each section's count, by (its text between breaks, first, last).
        self.sections: dict[tuple[str, bool, bool], int] = {}

    def count(self, text: str) -> int:
        pieces = text.split(_SECTION_BREAK)
        last = len(pieces) - 1
        if not last:
            return self._sum(text)
        known = self.sections
        total = 0
        for i, piece in enumerate(pieces):
            key = (piece, not i, i == last)
            n = known.get(key)
            if n is None:
                section = piece if not i else "## " + piece
                n = known[key] = self._sum(section if i == last else section + "\n\n")
            total += n
        return total

    def _sum(self, text: str) -> int:
        # The counter keeps each stretch's count (read back in C).
        stretches = _stretches(text)
        counts = self.inner.cached(stretches)
        if None not in counts:
            return sum(cast("list[int]", counts))
        pairs = zip(stretches, counts, strict=True)
        return sum(self._stretch(s) if n is None else n for s, n in pairs)

    def _stretch(self, stretch: str) -> int:
        """The count of a stretch not counted yet, from counts kept where it can (and
        then kept too: a draft is rendered again and again).

        A bullet ending in punctuation is counted alone by :func:`_allocate`, and a
        rendered summary holds it with its line break (or two, the last of a section):
        that count follows from the bullet's (:func:`_end_piece`). Else the stretch is
        cut before the spaces :data:`_NUMBER_RE` finds (a note's words are counted
        once, its numbers apart)."""
        inner = self.inner
        line = stretch.rstrip("\n")
        if line != stretch and line[-1:] in _PUNCTUATION:
            (alone,) = inner.cached((line,))
            piece = _end_piece(line)
            if alone is not None and piece is not None:
                breaks = stretch[len(line) :]
                n = alone - inner.count(piece) + inner.count(piece + breaks)
                inner.remember(stretch, n)
                return n
        # Python's blanks hold the tokenizer's: a character not blank here is not there.
        starts = (m.start() for m in _NUMBER_RE.finditer(stretch))
        cuts = [i for i in starts if i and not stretch[i - 1].isspace()]
        if not cuts:
            return inner.count(stretch)
        bounds = itertools.pairwise((0, *cuts, len(stretch)))
        n = sum(inner.count(stretch[a:b]) for a, b in bounds)
        inner.remember(stretch, n)
        return n

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(t) for t in texts]


def line_counter(counter: TokenCounter) -> TokenCounter:
    """A :class:`LineCounter` of ``counter`` under a :func:`_floors` encoding, else
    ``counter`` itself (its counts need not add up over lines)."""
    return LineCounter(counter) if _floors(counter) else counter


def _mostly_over(items: Mapping[str, list[str]], room: int) -> bool:
    """Whether the items run over :data:`_FLOORS_OVER` characters per token of ``room``:
    most of them cannot fit (about 4 characters a token)."""
    return sum(sum(map(len, items[key])) for key, _ in _CATEGORIES) > _FLOORS_OVER * max(room, 1)


def _remember_costs(lines: Iterable[str], counter: TokenCounter, memo: dict[str, int]) -> None:
    """Count each item of ``lines`` that ``memo`` does not hold yet into it: its bullet's
    tokens and its line break's."""
    new = [i for i in dict.fromkeys(lines) if i not in memo]
    if new:
        bullets = list(map(_bullet, new))
        memo.update(zip(new, map((1).__add__, counter.count_many(bullets)), strict=True))


# Long on purpose: the two passes (share_out, leftovers) and the costing they trigger
# (first_cost, settle) read and write one state (costs, taken, used) as closures, in
# the fallback's hottest loop; the allocation contract reads in one place.
def _allocate(
    items: Mapping[str, list[str]],
    room: int,
    counter: TokenCounter,
    memo: dict[str, int] | None = None,
) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """Choose items per category within ``room`` tokens (see :func:`fallback_summary`).

    Returns the chosen items and the omitted ones, per category. ``memo`` (item → cost,
    for this counter; a fresh one when not given) remembers each item's cost across
    calls.

    An item is counted only when its cost decides something: under a counter
    :func:`_floors` accepts, an item whose :func:`_cost_floor` (then, tried once,
    :func:`_piece_floor`) already exceeds the room it is tried against cannot be taken,
    whatever its exact cost (on a long session most items are: the room is spent early).
    Costs not counted are kept negated (``-floor``); a floor is only worked out when its
    item is first tried (0 until then): once the room left is below :data:`_MIN_COST`,
    no item is tried again.
    """
    costs: dict[str, list[int]] = {}
    memo = {} if memo is None else memo
    # Floors pay only when most items cannot fit (about 4 characters a token): else
    # nearly every item is counted anyway, after its floors.
    floors = _floors(counter) and _mostly_over(items, room)
    for key, _ in _CATEGORIES:
        lines = items[key]
        if floors:
            costs[key] = [0] * len(lines)
            continue
        _remember_costs(lines, counter, memo)
        costs[key] = list(map(memo.__getitem__, lines))

    refined: set[tuple[str, int]] = set()

    def first_cost(key: str, i: int) -> int:
        # The item's remembered exact cost, else its floor (negated).
        item = items[key][i]
        cost = costs[key][i] = memo.get(item) or -_cost_floor(item)
        return cost

    def settle(key: str, i: int, limit: int) -> int:
        # The cost of an item whose floor is within ``limit``: its finer floor (negated)
        # when that is above, else its exact cost (remembered in both places).
        item = items[key][i]
        if (key, i) not in refined:
            refined.add((key, i))
            floor = max(-costs[key][i], _piece_floor(item))
            costs[key][i] = -floor
            if floor > limit:
                return -floor
        cost = costs[key][i] = memo[item] = counter.count(_bullet(item)) + 1
        return cost

    taken: dict[str, list[bool]] = {key: [False] * len(items[key]) for key, _ in _CATEGORIES}
    picked: dict[str, list[str]] = {key: list(items[key]) for key, _ in _CATEGORIES}
    used = 0

    def share_out(group: tuple[str, ...], group_room: int) -> None:
        # Each category, in priority order, gets its share plus what the ones above left
        # unused; within it, items too large for what is left are skipped.
        nonlocal used
        carry = 0
        for key in group:
            allowance = int(group_room * _SHARES[key]) + carry
            for i, cost in enumerate(costs[key]):
                if allowance < _MIN_COST:
                    break
                if not cost:
                    cost = first_cost(key, i)
                if cost < 0:
                    if -cost > allowance:
                        continue
                    cost = settle(key, i, allowance)
                if 0 < cost <= allowance:
                    taken[key][i] = True
                    allowance -= cost
                    used += cost
            carry = max(0, allowance)

    def leftovers(group: tuple[str, ...]) -> None:
        # The room still left goes to the skipped items, highest priority first.
        nonlocal used
        for key in group:
            for i, cost in enumerate(costs[key]):
                if room - used < _MIN_COST:
                    return
                if taken[key][i]:
                    continue
                if not cost:
                    cost = first_cost(key, i)
                if cost < 0 and -cost <= room - used:
                    cost = settle(key, i, room - used)
                if 0 < cost <= room - used:
                    taken[key][i] = True
                    used += cost
                elif key == "asks" and i == 0 and room - used > 40:
                    # The newest ask never disappears entirely: keep as much as fits.
                    clipped = _clip_lines(picked[key][0], (room - used) * 3)
                    picked[key][0] = clipped
                    taken[key][0] = True
                    used += counter.count(_bullet(clipped)) + 1

    share_out(_ANCHORS, room)
    leftovers(_ANCHORS)
    share_out(_VERBOSE, max(0, room - used))
    leftovers(_VERBOSE)
    chosen = {key: list(itertools.compress(picked[key], taken[key])) for key, _ in _CATEGORIES}
    omitted = {
        key: list(itertools.compress(picked[key], map(operator.not_, taken[key])))
        for key, _ in _CATEGORIES
    }
    return chosen, omitted


def _take_all(
    items: Mapping[str, list[str]], room: int, counter: TokenCounter, memo: dict[str, int]
) -> tuple[dict[str, list[str]], dict[str, list[str]]] | None:
    """What :func:`_allocate` returns when every item fits ``room``, counted the way it
    counts them (``memo``: item → cost); None when they do not all fit, or when
    ``_allocate`` would rather not count them all (its floors).

    ``_allocate`` takes an item only where its cost is within the room still unspent,
    and its last pass offers every item skipped to that room. So when the costs add up
    to at most ``room``, each item is taken (what is unspent is at least the cost of
    those still out): every item chosen, in order, none left out (a short middle, the
    common case in a batch), without its passes.
    """
    if _mostly_over(items, room):
        return None  # most likely too many: _allocate's floors decide without counting
    lines = [i for key, _ in _CATEGORIES for i in items[key]]
    _remember_costs(lines, counter, memo)
    if sum(map(memo.__getitem__, lines)) > room:
        return None
    return (
        {key: list(items[key]) for key, _ in _CATEGORIES},
        {key: [] for key, _ in _CATEGORIES},
    )


#: Categories a focus topic reorders (asks stay newest first, last turns in order).
_FOCUSABLE: tuple[str, ...] = (
    "artifacts",
    "paths",
    "commands",
    "errors",
    "urls",
    "tools",
    "tool_calls",
    "digests",
)
_FOCUS_STOPWORDS = frozenset(("the", "and", "for", "with", "from", "into", "about", "that"))


def _focus_terms(focus: str | None) -> tuple[str, ...]:
    """The words of a focus topic worth matching (3+ characters, lower case)."""
    if not focus:
        return ()
    words = re.findall(r"[\w./-]{3,}", focus.lower())
    return tuple(dict.fromkeys(w for w in words if w not in _FOCUS_STOPWORDS))


def _focus_first(items: list[str], terms: tuple[str, ...]) -> list[str]:
    """``items`` with those that mention a focus term first (each group in its order)."""
    hit = [i for i in items if any(t in i.lower() for t in terms)]
    if not hit or len(hit) == len(items):
        return items
    hits = set(hit)
    return hit + [i for i in items if i not in hits]


# Long docstring on purpose: it is the fallback's budget contract (50 lines of code).
def fallback_summary(
    middle: Sequence[Message],
    *,
    budget_tokens: int,
    counter: TokenCounter | None = None,
    last_turns: int = 3,
    redact: bool = True,
    focus: str | None = None,
    appendix: bool = True,
    redactor: Callable[[str], str] | None = None,
    lines: TokenCounter | None = None,
) -> FallbackSummary:
    """A model-free summary of ``middle`` (messages that were ALREADY redacted).

    Extracts, in first-seen order without duplicates: the real user asks (verbatim, newest
    first, each clipped at 2,000 chars), every path (text and tool arguments, plus JSON
    fields ``path``, ``workdir``, ``file_path``, ``output_path``, ``filename``, ``cwd``),
    shell commands (``command``/``cmd`` of terminal/shell/bash-like tools), URLs,
    error/blocker lines, the names of the tools used, tool calls with key arguments and
    call ids, digest lines of tool results, and the last ``last_turns`` messages (short).

    Path rule: Windows absolute paths; unix paths starting with ``/``, ``~/``, ``./`` or
    ``../`` (a single segment without extension only for well-known roots such as
    ``/tmp``, so slash commands are skipped); relative paths with a slash when they end in
    an extension or a slash, or have two slashes ("and/or" and dates are skipped); bare file names
    with a known extension; common dotfiles.

    The *artifact trail* comes first: every file a tool call touched with what was done
    to it (``path — read, edited``; :func:`tinyjuice.facts.file_actions`), under Relevant
    Files, and those paths leave the plain path list.

    The body is clamped to ``budget_tokens`` (the explanatory note always stays). The
    compact *anchors* come first — artifact trail > rules > asks > paths > commands >
    errors > URLs > tool names — and only the room they leave goes to the verbose parts —
    tool calls > tool results > last turns — so whenever the budget can hold every
    anchor, all of them are in. *Rules* are those of injected context in the span (a
    CLAUDE.md / AGENTS.md, a skill: :func:`tinyjuice.survival.find_rules`), under
    Constraints & Preferences. Within each group pass one gives every category, in
    priority order, a share (anchors: 20, 8, 27, 10, 14, 12, 6 and 3% of the budget;
    verbose: 50, 30 and 20% of what the anchors left) plus whatever the categories above
    left unused,
    so thousands of old asks cannot crowd out every path; pass two hands the room still
    left to skipped items, highest priority first. The newest ask is always kept (clipped
    to the room left if it alone is too big). What was left out is counted per category
    in ``omitted``, named in ``omitted_items`` and counted in the text ("Left out to fit
    the budget: …"); ``appendix`` lists every such item and the note names its id
    (``appendix_id``, the first 16 hex digits of its sha256), under which a commit
    archives it, so nothing is silently lost (``appendix=False``: no appendix, for
    callers that archive nothing, such as ``tjui batch``).
    A ``focus`` topic puts the paths, commands, errors, URLs, tools, tool calls and tool
    results that mention one of its words first in their category (so they are the ones a
    tight budget keeps), and the note names it; asks and last turns keep their order.
    With ``redact`` the chosen items go through :func:`tinyjuice.redact.redact_text` once
    more, and so do the items of ``omitted_items`` (each category when first read).
    Linear in the size of ``middle``. ``redactor`` (default: a fresh
    :class:`TextRedactor`) is the text redaction used, to share its memory across calls.
    ``lines`` (default: a fresh :func:`line_counter` of ``counter``) counts the summary's
    text; a caller counting the summary message again passes its own to reuse the
    sections counted here.
    """
    counter = counter or default_counter()
    red: Callable[[str], str] = (redactor or TextRedactor()) if redact else _same
    memo = redactor if isinstance(redactor, TextRedactor) else None
    items, focus = _gather(middle, last_turns, focus, memo)
    totals = {key: len(v) for key, v in items.items()}

    # Fixed cost: the note at its longest, every heading and label that may appear.
    fixed_text = _assemble(
        len(middle),
        {key: [""] for key in items if items[key]},
        {key: n for key, n in totals.items() if n},
        focus,
        "f" * _APPENDIX_ID_CHARS if appendix else None,
    ).render()
    # Counted line by line: its headings and labels are the same in every call.
    lines = line_counter(counter) if lines is None else lines
    remaining = max(0, budget_tokens - lines.count(fixed_text))

    # Each item's cost, shared by the two ways of choosing (a fresh memory per call when
    # no redactor carries one: the same costs as counting them in _allocate).
    costs: dict[str, int] = {} if memo is None else memo.costs.setdefault(counter, {})
    chosen_all = _take_all(items, remaining, counter, costs)
    if chosen_all is None:
        chosen, left_out = _allocate(items, remaining, counter, costs)
    else:
        chosen, left_out = chosen_all

    if isinstance(red, TextRedactor):
        # Every item chosen or left out is redacted once (now, by each render of the
        # appendix, or when read): one scan finds those with nothing to redact.
        red.prime(i for v in (*chosen.values(), *left_out.values()) for i in v)
    if redact:
        chosen = {key: [red(i) for i in v] for key, v in chosen.items()}
    omitted = {key: len(v) for key, v in left_out.items() if v}
    draft = _Draft(len(middle), chosen, left_out, omitted, focus, appendix, red)
    if memo is not None and redact:
        draft.bullet_memo = memo.bullets
    listed, appendix_id, summary, text, tokens = draft.fit(budget_tokens, counter, lines)

    included = {key: len(v) for key, v in chosen.items()}
    return FallbackSummary(
        text=text,
        summary=summary,
        included=included,
        omitted={key: omitted[key] for key, _ in _CATEGORIES if omitted.get(key)},
        tokens=tokens,
        source_messages=len(middle),
        omitted_items=(
            _RedactedItems({key: left_out[key] for key, _ in _CATEGORIES}, red)
            if redact
            else {key: tuple(left_out[key]) for key, _ in _CATEGORIES if left_out[key]}
        ),
        appendix=listed,
        appendix_id=appendix_id,
    )


def _gather(
    middle: Sequence[Message],
    last_turns: int,
    focus: str | None,
    memo: TextRedactor | None = None,
) -> tuple[dict[str, list[str]], str | None]:
    """The items per category (artifact trail and rules included, focus matches first),
    and the focus when any of its words is worth matching."""
    collected = _collect(middle, last_turns, None if memo is None else memo.facts)
    items = {key: list(collected.items[key]) for key, _ in _CATEGORIES}
    _add_trail(middle, items, None if memo is None else memo.trail)
    _add_rules(middle, items, None if memo is None else memo.rules)
    terms = _focus_terms(focus)
    if not terms:
        return items, None
    for key in _FOCUSABLE:
        items[key] = _focus_first(items[key], terms)
    return items, focus


@dataclass(slots=True)
class _Draft:
    """The chosen and left-out items of a fallback summary, rendered until they fit."""

    n_messages: int
    chosen: dict[str, list[str]]
    left_out: dict[str, list[str]]
    omitted: dict[str, int]
    focus: str | None
    appendix: bool
    #: The text redaction (identity when not redacting).
    redact: Callable[[str], str]
    #: The appendix's bullets per category, reused by the next render (see _appendix).
    bullets: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    #: Per category, the items last hashed and their bullets' UTF-8 bytes (see _hash).
    encoded: dict[str, tuple[list[str], bytes]] = field(default_factory=dict)
    #: Each item's appendix bullet, kept across drafts (TextRedactor.bullets); None: none.
    bullet_memo: dict[str, str] | None = None
    #: The non-empty categories last hashed, in order: ``(key, items, sha256 state after
    #: the header and every category up to this one)`` (see appendix_id).
    states: list[tuple[str, list[str], Any]] = field(default_factory=list)
    #: Each category's chosen items as bullets, kept between renders.
    blocks: _Blocks = field(default_factory=_Blocks)

    def render(self) -> tuple[str, str | None, StructuredSummary, str]:
        """``(appendix, appendix id, summary, text)`` for the items as they are now."""
        listed = (
            _appendix(self.n_messages, self.left_out, self.redact, self.bullets, self.bullet_memo)
            if self.appendix
            else ""
        )
        # Hashed piece by piece (appendix_id): the pieces hashed for the fit are reused.
        appendix_id = self.appendix_id() if listed else None
        summary = _assemble(
            self.n_messages, self.chosen, self.omitted, self.focus, appendix_id, self.blocks
        )
        return listed, appendix_id, summary, summary.render()

    def text(self, placeholder: bool = False) -> str:
        """``render()[3]`` without building the appendix: its id is hashed from each
        category's bytes, kept between calls (the fit moves a few items at a time).
        ``placeholder``: the id as :data:`_PLACEHOLDER_ID` (nothing hashed)."""
        if not self.appendix:
            appendix_id = None
        elif placeholder:
            left_out = self.left_out
            appendix_id = (
                _PLACEHOLDER_ID if any(left_out.get(key) for key, _ in _CATEGORIES) else None
            )
        else:
            appendix_id = self.appendix_id()
        return _assemble(
            self.n_messages, self.chosen, self.omitted, self.focus, appendix_id, self.blocks
        ).render()

    def sided_count(self, budget: int, lines: TokenCounter) -> int:
        """A token count of ``text()`` on the same side of ``budget`` as the exact one
        (counted by ``lines``, a :func:`line_counter`).

        Under a counter :func:`_floors` accepts (a :class:`LineCounter`), the text with a
        placeholder id is counted first: the appendix id (twice in the note) moves the
        count within :func:`_id_moves`, so when that count is farther from ``budget``,
        the bound says on which side the text falls without hashing the appendix.
        """
        count = lines.count
        if self.appendix and isinstance(lines, LineCounter):
            rough = count(self.text(placeholder=True))
            down, up = _id_moves(lines.inner)
            if rough + up <= budget:
                return rough + up
            if rough - down > budget:
                return rough - down
        return count(self.text())

    def appendix_id(self) -> str | None:
        """The id an appendix is archived under, the first hex digits of the sha256 of
        ``_appendix(…)``: the same bytes fed to sha256 piece by piece."""
        left_out = self.left_out
        if not any(left_out.get(key) for key, _ in _CATEGORIES):
            return None
        import hashlib

        # The fit changes the lowest-priority categories first: the hash state after each
        # unchanged leading category is kept and copied, not fed its bytes again.
        states = self.states
        h: Any = None
        done = 0
        for key, label in _CATEGORIES:
            lines = left_out.get(key)
            if not lines:
                continue
            if h is None and done < len(states):
                kept_key, kept_lines, _ = states[done]
                if kept_key == key and kept_lines == lines:
                    done += 1
                    continue
                del states[done:]
            if h is None:
                h = (
                    states[done - 1][2].copy()
                    if done
                    else hashlib.sha256(_appendix_header(self.n_messages).encode())
                )
            h.update(f"\n\n## {label} ({len(lines):,})\n".encode())
            self._hash(key, lines, h)
            states.append((key, list(lines), h.copy()))
        if h is None:
            # Every category as hashed last time.
            del states[done:]
            h = states[done - 1][2].copy()
        h.update(b"\n")
        hex_digest: str = h.hexdigest()
        return hex_digest[:_APPENDIX_ID_CHARS]

    def _hash(self, key: str, lines: list[str], h: Any) -> None:
        """Feeds ``h`` the appendix body of ``lines`` (bullets joined by line breaks).

        When the items hashed before are ``lines`` without a few at the front, or with a
        few more there (what the fit does), only those few bullets are encoded; the rest
        is the bytes kept from then.
        """
        seen = self.encoded.get(key)
        if seen is not None:
            items, body = seen
            skip = len(items) - len(lines)
            if skip >= 0 and (items if skip == 0 else items[skip:]) == lines:
                cut = sum(len(self._bullet_bytes(i)) + 1 for i in items[:skip])
                h.update(memoryview(body)[cut:])
                return
            if skip < 0 and lines[-skip:] == items:
                for i in lines[:-skip]:
                    h.update(self._bullet_bytes(i) + b"\n")
                h.update(body)
                return
        bullets = _bullets(key, lines, self.redact, self.bullets, self.bullet_memo)
        body = "\n".join(bullets).encode()
        self.encoded[key] = (list(lines), body)
        h.update(body)

    def _bullet_bytes(self, item: str) -> bytes:
        return _bullet(self.redact(item)).encode()

    def fit(
        self, budget_tokens: int, counter: TokenCounter, lines: TokenCounter | None = None
    ) -> tuple[str, str | None, StructuredSummary, str, int]:
        """Rendered within ``budget_tokens``: trimmed from the lowest priority, then the
        room the note did not need handed back; ``(…render(), tokens)``."""
        chosen, omitted, left_out = self.chosen, self.omitted, self.left_out
        # Token counts are not exactly additive (and redaction may lengthen an item): trim
        # from the lowest priority until the text fits.
        order = [key for key, _ in reversed(_CATEGORIES)]
        lines = line_counter(counter) if lines is None else lines
        count = lines.count
        if not any(left_out.values()):
            whole = self._fit_whole(budget_tokens, count)
            if whole is not None:
                return whole
        while True:
            tokens = count(self.text())
            if tokens <= budget_tokens or not any(chosen[k] for k in order):
                break
            excess = tokens - budget_tokens
            while excess > 0 and any(chosen[k] for k in order):
                key = next(k for k in order if chosen[k])
                dropped = chosen[key].pop()
                excess -= counter.count(_bullet(dropped)) + 1
                omitted[key] = omitted.get(key, 0) + 1
                left_out[key].insert(0, dropped)

        if omitted and tokens < budget_tokens:
            # The note was reserved at its longest: give the room it did not need back.
            _Fill(chosen, left_out, omitted, self.redact).run(
                lambda: self.sided_count(budget_tokens, lines), budget_tokens
            )
        # Rendered in full once, with the appendix (the text was counted last time).
        listed, appendix_id, summary, text = self.render()
        return listed, appendix_id, summary, text, count(text)

    def _fit_whole(
        self, budget_tokens: int, count: Callable[[str], int]
    ) -> tuple[str, str | None, StructuredSummary, str, int] | None:
        """:meth:`fit`'s result when nothing was left out and every item fits: rendered
        and counted once (no appendix, no id: :meth:`text` and :meth:`render` agree
        then); None when the text is over ``budget_tokens`` (the trim decides)."""
        summary = _assemble(self.n_messages, self.chosen, self.omitted, self.focus, None)
        text = summary.render()
        tokens = count(text)
        return None if tokens > budget_tokens else ("", None, summary, text, tokens)


class _Fill:
    """Moves left-out items back into a summary while the rendered text still fits.

    The note was reserved at its longest, and a tight budget can leave room it did not
    need. Highest priority first, each item is tried by rendering the whole summary
    (``render`` returns its token count, or a bound on the same side of the budget), at
    most :attr:`TRIES` times, so the cost stays small however many items were left out.
    """

    TRIES = 24

    def __init__(
        self,
        chosen: dict[str, list[str]],
        left_out: dict[str, list[str]],
        omitted: dict[str, int],
        redact: Callable[[str], str],
    ) -> None:
        self.chosen, self.left_out, self.omitted, self.redact = chosen, left_out, omitted, redact

    def run(self, render: Callable[[], int], budget: int) -> None:
        tries = self.TRIES
        for key, _ in _CATEGORIES:
            while self.left_out.get(key) and tries > 0:
                tries -= 1
                item = self.left_out[key].pop(0)
                self.chosen[key].append(self.redact(item))
                self._count(key, -1)
                if render() <= budget:
                    continue
                self.chosen[key].pop()
                self.left_out[key].insert(0, item)
                self._count(key, +1)
                break

    def _count(self, key: str, delta: int) -> None:
        self.omitted[key] = self.omitted.get(key, 0) + delta
        if not self.omitted[key]:
            del self.omitted[key]


#: Hex digits of an appendix id (the first characters of its sha256).
_APPENDIX_ID_CHARS = 16
#: An id of that length, counted in its stead (:meth:`_Draft.sided_count`).
_PLACEHOLDER_ID = "0" * _APPENDIX_ID_CHARS
#: What comes just before the appendix id where the note names it (``sha256:`` and a
#: space).
_ID_LEADS = (":", " ")


def _id_moves(counter: TokenCounter) -> tuple[int, int]:
    """``(down, up)``: how far the real appendix id can move a note's count below and
    above its count with :data:`_PLACEHOLDER_ID`, under a :func:`_floors` encoding.

    The id is named twice (after each of :data:`_ID_LEADS`), and each of those stretches
    (the id and the character before it) is whole pre-tokenizer pieces (alphanumerics
    between punctuation or spaces: nothing around them joins a piece with them), so it
    counts the same alone as in the note: the placeholder's exactly, any id's 1 to
    ``_APPENDIX_ID_CHARS + 1`` tokens (one at least, one per character at most).
    """
    held = sum(counter.count(lead + _PLACEHOLDER_ID) for lead in _ID_LEADS)
    least, most = len(_ID_LEADS), len(_ID_LEADS) * (_APPENDIX_ID_CHARS + 1)
    return held - least, most - held


def _add_trail(
    middle: Sequence[Message], items: dict[str, list[str]], memo: EffectsMemo | None = None
) -> None:
    """The artifact trail (:func:`tinyjuice.facts.file_actions`) into ``items``; the
    paths it names leave the plain path list (the trail already says them)."""
    from tinyjuice.facts import file_actions, norm_path

    trail = file_actions(middle, memo=memo)
    if not trail:
        return
    items["artifacts"] = [a.line() for a in trail]
    named = {norm_path(a.path) for a in trail}
    relative = tuple("/" + k for k in named if not k.startswith(("/", "~")))

    def covered(p: str) -> bool:
        key = norm_path(p)
        return key in named or (key.startswith("/") and key.endswith(relative))

    items["paths"] = [p for p in items["paths"] if not covered(p)]


def _add_rules(
    middle: Sequence[Message], items: dict[str, list[str]], memo: RulesMemo | None = None
) -> None:
    """Rules of injected context in the span (a CLAUDE.md / AGENTS.md re-read, a skill, a
    rules section; :func:`tinyjuice.survival.find_rules`) that must outlive the
    compaction. The user's own constraints are already in the asks, verbatim."""
    from tinyjuice.survival import find_rules, may_hold_source_rules

    if not may_hold_source_rules(middle):
        # Every rule there is a user's (left out here): the asks need not be read.
        items["rules"] = []
        return
    rules = find_rules(middle, memo=memo)
    items["rules"] = [f"[{r.source}] {r.text}" for r in rules if r.source != "user"]


def _same(text: str) -> str:
    return text


def _appendix(
    n_messages: int,
    left_out: Mapping[str, list[str]],
    redact_text: Callable[[str], str],
    memo: dict[str, tuple[list[str], list[str]]] | None = None,
    each: dict[str, str] | None = None,
) -> str:
    """Everything the budget left out, per category, as markdown; "" when nothing was.

    ``memo`` keeps each category's items and bullets between renders of one draft: the
    fit only adds and removes items at the front, so a list that is a tail of the one
    seen before (compared item by item) reuses that tail's bullets.
    """
    if not any(left_out.get(key) for key, _ in _CATEGORIES):
        return ""
    blocks = [_appendix_header(n_messages)]
    for key, label in _CATEGORIES:
        lines = left_out.get(key)
        if lines:
            body = "\n".join(_bullets(key, lines, redact_text, memo, each))
            blocks.append(f"## {label} ({len(lines):,})\n{body}")
    return "\n\n".join(blocks) + "\n"


def _appendix_header(n_messages: int) -> str:
    return (
        f"# Appendix to the fallback summary of {n_messages:,} message(s)\n"
        "Every item the summary left out to fit its budget, by category."
    )


def _bullets(
    key: str,
    lines: list[str],
    redact_text: Callable[[str], str],
    memo: dict[str, tuple[list[str], list[str]]] | None,
    each: dict[str, str] | None = None,
) -> list[str]:
    """The appendix bullets of ``lines`` (redacted), from ``memo`` when it holds them;
    ``each`` (item → bullet, kept by the caller) remembers single items."""
    if memo is not None:
        seen = memo.get(key)
        if seen is not None:
            items, bullets = seen
            skip = len(items) - len(lines)
            if skip >= 0 and items[skip:] == lines:
                return bullets[skip:]
    if each is None:
        bullets = [_bullet(redact_text(i)) for i in lines]
    else:
        new = [i for i in lines if i not in each]
        if new:
            each.update(zip(new, map(_bullet, map(redact_text, new)), strict=True))
        bullets = list(map(each.__getitem__, lines))
    if memo is not None:
        memo[key] = (list(lines), bullets)
    return bullets
