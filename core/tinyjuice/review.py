"""Summary-quality review: what of the compressed middle survived in a summary.

Details: docs/compaction.md (`tinyjuice.review`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from tinyjuice.facts import (
    Facts,
    extract_facts,
    listing_results,
    norm_error,
    norm_path,
    norm_text,
    tool_error_lines,
)
from tinyjuice.model import Message, Role, Transcript
from tinyjuice.redact import find_secrets, redact_text
from tinyjuice.rules import tool_output_text
from tinyjuice.summary import (
    END_MARKER,
    HANDOFF_PREFIX,
    is_summary_message,
    strip_summary_wrappers,
)
from tinyjuice.summary.scan import (
    _PATH_KEYS,
    _URL_RE,
    _command_text,
    _is_shell_tool,
    _paths_in,
    _string_leaves,
    _undiff_paths,
)
from tinyjuice.text import cut_end
from tinyjuice.tokens import TokenCounter, default_counter

__all__ = [
    "CATEGORIES",
    "Category",
    "PastCompaction",
    "ReviewCheck",
    "ReviewItem",
    "SummaryReview",
    "collect_items",
    "fresh_request_lines",
    "review_past_compactions",
    "review_summary",
]


class Category(StrEnum):
    PATHS = "paths"
    COMMANDS = "commands"
    URLS = "urls"
    ERRORS = "errors"
    NUMBERS = "numbers"
    TOOLS = "tools"
    IDENTIFIERS = "identifiers"
    LATEST_ASK = "latest_ask"


#: Every category, in display order.
CATEGORIES: tuple[Category, ...] = tuple(Category)

#: Long commands and error lines count as kept when this many leading characters appear.
PREFIX_CHARS = 100


@dataclass(frozen=True, slots=True)
class ReviewItem:
    """One anchor of the middle. ``index`` is the message it first appeared in."""

    category: Category
    text: str
    index: int
    found: bool
    #: How much the item matters (see :data:`WEIGHTS`; a file a tool touched weighs 3).
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class ReviewCheck:
    """A yes/no check. ``ok`` is None when the check does not apply."""

    name: str
    ok: bool | None
    detail: str


@dataclass(frozen=True, slots=True)
class SummaryReview:
    items: tuple[ReviewItem, ...]
    checks: tuple[ReviewCheck, ...]
    summary_tokens: int
    budget_tokens: int | None
    source_messages: int
    start_index: int = 0
    #: Names seen only in a listing or search result (or system executables):
    #: ``(text, index)``, reported apart and never counted as missing.
    background: tuple[tuple[str, int], ...] = ()
    #: Probe questions answered from the summary (:mod:`tinyjuice.probes`).
    probes: Any = None
    #: Rules that must outlive the compaction and whether they did (:mod:`tinyjuice.survival`).
    rules: Any = None

    def total(self, category: Category | str) -> int:
        cat = Category(category)
        return sum(1 for i in self.items if i.category is cat)

    def found(self, category: Category | str) -> int:
        cat = Category(category)
        return sum(1 for i in self.items if i.category is cat and i.found)

    @property
    def recall(self) -> dict[str, float]:
        """Found / total per category, for the categories that had anything to keep."""
        out: dict[str, float] = {}
        for cat in CATEGORIES:
            total = self.total(cat)
            if total:
                out[cat.value] = self.found(cat) / total
        return out

    @property
    def overall(self) -> float | None:
        """Found / total over every item, or None when the middle had nothing to keep."""
        if not self.items:
            return None
        return sum(1 for i in self.items if i.found) / len(self.items)

    @property
    def weighted(self) -> float | None:
        """Found / total weighted by what the agent did with each item (:data:`WEIGHTS`):
        a touched file, a tool's error or the latest ask counts three times a mention."""
        total = sum(i.weight for i in self.items)
        if not total:
            return None
        return sum(i.weight for i in self.items if i.found) / total

    @property
    def missing(self) -> dict[str, tuple[ReviewItem, ...]]:
        """The items the summary lost, per category (categories with none are left out)."""
        out: dict[str, list[ReviewItem]] = {}
        for item in self.items:
            if not item.found:
                out.setdefault(item.category.value, []).append(item)
        return {k: tuple(v) for k, v in out.items()}

    @property
    def ok(self) -> bool:
        """No check failed (checks that do not apply are ignored)."""
        return all(c.ok is not False for c in self.checks)

    def check(self, name: str) -> ReviewCheck:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict[str, Any]:
        """JSON shape: recall, found/total counts, missing items with indexes, checks."""
        return {
            "recall": {k: round(v, 4) for k, v in self.recall.items()},
            "overall": None if self.overall is None else round(self.overall, 4),
            "found": {c.value: self.found(c) for c in CATEGORIES if self.total(c)},
            "total": {c.value: self.total(c) for c in CATEGORIES if self.total(c)},
            "missing": {
                k: [{"text": i.text, "index": i.index} for i in v] for k, v in self.missing.items()
            },
            "checks": [{"name": c.name, "ok": c.ok, "detail": c.detail} for c in self.checks],
            "summary_tokens": self.summary_tokens,
            "budget_tokens": self.budget_tokens,
            "source_messages": self.source_messages,
            "start_index": self.start_index,
            "weighted": None if self.weighted is None else round(self.weighted, 4),
            "background": [{"text": t, "index": i} for t, i in self.background],
            "probes": None if self.probes is None else self.probes.to_dict(),
            "rules": None if self.rules is None else self.rules.to_dict(),
        }


# ------------------------------------------------------------------------- extraction

_NUMBER = r"(?<![\w.,/-])(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?"
_UNITS = (
    "%",
    *[
        "ms",
        "µs",
        "us",
        "ns",
        "sec",
        "secs",
        "second",
        "seconds",
        "min",
        "mins",
        "minute",
        "minutes",
        "hr",
        "hrs",
        "hour",
        "hours",
        "day",
        "days",
        "week",
        "weeks",
    ],
    *["B", "KB", "MB", "GB", "TB", "KiB", "MiB", "GiB", "TiB", "kB", "bytes", "byte"],
    *[
        "tokens",
        "token",
        "chars",
        "characters",
        "lines",
        "line",
        "files",
        "file",
        "tests",
        "test",
        "passed",
        "failed",
        "errors",
        "error",
        "skipped",
        "warnings",
        "warning",
        "messages",
        "rows",
        "items",
        "requests",
        "retries",
        "attempts",
        "calls",
        "matches",
        "deselected",
        "xfailed",
        "xpassed",
        "commits",
    ],
    "s",
    "k",
    "K",
    "M",
    "G",
)
_UNIT_ALT = "|".join(re.escape(u) for u in sorted(set(_UNITS), key=lambda u: (-len(u), u)))
_NUMBER_RE = re.compile(
    "(?P<num>" + _NUMBER + r")(?P<sp>[ \t]?)(?P<unit>" + _UNIT_ALT + r")(?![A-Za-z0-9_])"
)
_VERSION_RE = re.compile(r"(?<![\w.])v?\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.]+)?(?![\w.])")
#: Progress counters such as pytest's "[ 40%]" are not measured numbers.
_PROGRESS_RE = re.compile(r"\[\s*\d{1,3}%\]")
_HASH_RE = re.compile(r"(?<![\w./:-])[0-9a-f]{7,40}(?![\w/-])")
_ISSUE_RE = re.compile(r"(?<![&#\w])#\d{1,6}(?!\w)")
#: Ticket keys; not inside brackets, where test ids such as ``[JPY-0]`` live.
_TICKET_RE = re.compile(r"(?<![\w\[-])[A-Z][A-Z0-9]{1,9}-\d{1,6}(?![\w\]-])")
#: Acronym-number pairs that are standards, not tickets.
_NOT_TICKETS = frozenset({"UTF", "SHA", "ISO", "AES", "RSA", "TLS", "SSL", "HTTP", "MD", "ES"})


def _norm(text: str) -> str:
    return " ".join(text.split())


def _numbers(text: str) -> Iterator[str]:
    scan = _PROGRESS_RE.sub(" ", text) if "%]" in text else text
    for m in _NUMBER_RE.finditer(scan):
        yield m.group(0)
    for m in _VERSION_RE.finditer(scan):
        yield m.group(0)


def _identifiers(text: str) -> Iterator[str]:
    for m in _HASH_RE.finditer(text):
        h = m.group(0)
        if any(c.isdigit() for c in h) and any(c.isalpha() for c in h):
            yield h
    if "#" in text:
        for m in _ISSUE_RE.finditer(text):
            yield m.group(0)
    for m in _TICKET_RE.finditer(text):
        if m.group(0).split("-", 1)[0] not in _NOT_TICKETS:
            yield m.group(0)


class _Items:
    """First-seen items per category; paths de-duplicated as a reader would compare them
    (``./src/a.py`` is ``src/a.py``)."""

    def __init__(self) -> None:
        self.seen: dict[tuple[Category, str], int] = {}
        self._paths: set[str] = set()

    def add(self, category: Category, text: str, index: int) -> None:
        if not text:
            return
        if category is Category.PATHS:
            key = norm_path(text)
            if key in self._paths:
                return
            self._paths.add(key)
        self.seen.setdefault((category, text), index)


def _source_text(m: Message) -> str:
    return strip_summary_wrappers(m.text) if is_summary_message(m) else m.text


def _undiff(items: _Items) -> None:
    """Diff prefixes dropped from paths as the fallback summary drops them (``a/P`` and
    ``b/P`` both seen: both are ``P``, at the first place either was seen)."""
    paths = {text: None for (cat, text) in items.seen if cat is Category.PATHS}
    kept = _undiff_paths(paths)
    if kept is paths:
        return
    seen: dict[tuple[Category, str], int] = {}
    for (cat, text), index in items.seen.items():
        if cat is Category.PATHS and text not in kept:
            text = text[2:]
        key = (cat, text)
        seen[key] = min(index, seen.get(key, index))
    items.seen = seen


#: What an item of each category weighs in :attr:`SummaryReview.weighted`; a path a
#: tool call read, wrote, edited, deleted or ran weighs :data:`TOUCHED_WEIGHT`.
WEIGHTS: dict[Category, float] = {
    Category.PATHS: 1.0,
    Category.COMMANDS: 2.0,
    Category.URLS: 1.0,
    Category.ERRORS: 3.0,
    Category.NUMBERS: 0.5,
    Category.TOOLS: 0.5,
    Category.IDENTIFIERS: 1.0,
    Category.LATEST_ASK: 3.0,
}
TOUCHED_WEIGHT = 3.0


#: "Traceback (most recent call last):" says an error follows; the error is the line
#: that names it, not this header.
_TRACEBACK_HEAD_RE = re.compile(r"^\s*Traceback \(most recent call last\):?\s*$")


def _tool_error_lines(m: Message, text: str) -> list[str]:
    """:func:`~tinyjuice.facts.tool_error_lines` with the head lines first, normalised,
    without traceback headers. Only tools return errors: prose is not scanned."""
    lines = tool_error_lines(text, m.meta.is_error, head_first=True)
    return [_norm(line) for line in lines if not _TRACEBACK_HEAD_RE.match(line)]


def _scan_message(out: _Items, m: Message, i: int, content: bool) -> None:
    """Items of one message. ``content``: a tool result holding a listing, search hits
    or a file's content — its paths are scanned (background unless seen elsewhere), its
    numbers, identifiers and "Error" words are not facts."""
    if m.meta.is_injected and m.meta.injected_kind != "observation":
        # Injected context (CLAUDE.md, reminders, slash-command echoes) is re-injected,
        # not remembered: its rules are checked by tinyjuice.survival instead. (SWE-agent
        # observations are tool output carried as user turns: they count.)
        return
    text = _source_text(m)
    if text and content:
        for p in _paths_in(text):
            out.add(Category.PATHS, p, i)
        if m.tool_name:
            out.add(Category.TOOLS, m.tool_name, i)
        if m.meta.is_error:
            for line in _tool_error_lines(m, text):
                out.add(Category.ERRORS, line, i)
    elif text:
        for p in _paths_in(text):
            out.add(Category.PATHS, p, i)
        if "://" in text:
            for u in _URL_RE.finditer(text):
                out.add(Category.URLS, u.group(0).rstrip(".,:;!?'\""), i)
        if m.meta.generated_by != "digest":
            # A digest's own sizes ("120 lines, 5,230 bytes") describe what was cut.
            for n in _numbers(text):
                out.add(Category.NUMBERS, n, i)
        for ident in _identifiers(text):
            out.add(Category.IDENTIFIERS, ident, i)
    observation = m.meta.injected_kind == "observation"
    if (m.role is Role.TOOL or observation) and not content:
        if m.tool_name:
            out.add(Category.TOOLS, m.tool_name, i)
        # {"output": …, "exit_code": 1} results are read through their output.
        for line in _tool_error_lines(m, tool_output_text(text)):
            out.add(Category.ERRORS, line, i)
    for call in m.tool_calls:
        out.add(Category.TOOLS, call.name, i)
        args = call.parsed_arguments()
        if args is None:
            for p in _paths_in(call.arguments):
                out.add(Category.PATHS, p, i)
            continue
        for key, leaf in _string_leaves(args):
            if key in _PATH_KEYS and leaf.strip() and len(leaf) <= 500:
                out.add(Category.PATHS, leaf.strip(), i)
            for p in _paths_in(leaf):
                out.add(Category.PATHS, p, i)
            if "://" in leaf:
                for u in _URL_RE.finditer(leaf):
                    out.add(Category.URLS, u.group(0).rstrip(".,:;!?'\""), i)
        if _is_shell_tool(call.name) and isinstance(args, dict):
            for key in ("command", "cmd"):
                cmd = _command_text(args.get(key))
                if cmd:
                    out.add(Category.COMMANDS, _norm(cmd), i)


@dataclass(frozen=True, slots=True)
class _Collected:
    items: tuple[tuple[Category, str, int, float], ...]
    background: tuple[tuple[str, int], ...]


def _collect(middle: Sequence[Message], start_index: int, facts: Facts | None = None) -> _Collected:
    out = _Items()
    latest: tuple[str, int] | None = None
    content = listing_results(middle)
    for offset, m in enumerate(middle):
        i = start_index + offset
        text = _source_text(m)
        if m.is_real_user and not is_summary_message(m) and text.strip():
            latest = (text.strip(), i)
        _scan_message(out, m, i, offset in content)
    if latest is not None:
        out.add(Category.LATEST_ASK, latest[0], latest[1])
    _undiff(out)
    facts = facts or extract_facts(middle, start_index=start_index)
    touched = {norm_path(a.path) for a in facts.artifacts}
    background = facts.background
    aside = {norm_path(f.text) for f in background}
    order = {c: k for k, c in enumerate(CATEGORIES)}
    items = sorted(out.seen.items(), key=lambda kv: order[kv[0][0]])
    result: list[tuple[Category, str, int, float]] = []
    for (cat, text), index in items:
        weight = WEIGHTS[cat]
        if cat is Category.PATHS:
            key = norm_path(text)
            if key in aside:
                continue
            if key in touched:
                weight = TOUCHED_WEIGHT
        red = redact_text(text)
        if cat in (Category.ERRORS, Category.COMMANDS):
            red = _norm(red)
        result.append((cat, red, index, weight))
    return _Collected(tuple(result), tuple((redact_text(f.text), f.index) for f in background))


def collect_items(
    middle: Sequence[Message], *, start_index: int = 0
) -> tuple[tuple[Category, str, int], ...]:
    """Every anchor of ``middle`` as ``(category, text, message index)``, first seen first.

    Item texts are redacted; ``index`` is ``start_index`` + the position in ``middle``.
    Errors come from tool results only; paths that only appeared in a listing or a search
    result (or name a system executable) are background, not items
    (:func:`tinyjuice.facts.extract_facts`).
    """
    return tuple((c, t, i) for c, t, i, _ in _collect(middle, start_index).items)


# --------------------------------------------------------------------------- matching

_BRACE_RE = re.compile(r"([^\s{}]*)\{([^{}\s]*,[^{}\s]*)\}([^\s{}]*)")


def _expand_braces(text: str) -> str:
    """``src/{a,b}.py`` → ``src/a.py src/b.py`` (one level, a few passes)."""
    for _ in range(3):
        if "{" not in text:
            break
        new = _BRACE_RE.sub(
            lambda m: " ".join(f"{m.group(1)}{alt}{m.group(3)}" for alt in m.group(2).split(",")),
            text,
        )
        if new == text:
            break
        text = new
    return text


_WORD_RE = re.compile(r"[\w.+/-]+")


class _Summary:
    """The summary, prepared once for many lookups. Matching is a reader's: case,
    quoting, ``./`` and absolute prefixes, spacing and ``1,284`` vs ``1284`` do not
    matter (:mod:`tinyjuice.facts`)."""

    def __init__(self, text: str) -> None:
        red = redact_text(text)
        self.flat = _norm(red)
        self.flat_lower = self.flat.lower()
        self.plain = norm_text(red)
        self.words = set(_WORD_RE.findall(self.plain))
        expanded = _expand_braces(self.flat) if "{" in self.flat else self.flat
        self.expanded = expanded
        self.paths: set[str] = set()
        for p in _paths_in(expanded):
            q = norm_path(p)
            if "/" in q.strip("/"):
                self.paths.add(q.lstrip("/"))

    def has_path(self, path: str) -> bool:
        p = norm_path(path)
        pat = r"(?<![\w.-])(?:\./)?" + re.escape(p) + r"(?![\w-])"
        if re.search(pat, self.expanded, re.I):
            return True
        segments = [s for s in p.split("/") if s and s != "."]
        return any("/".join(segments[k:]) in self.paths for k in range(1, len(segments) - 1))

    def has_prefix(self, text: str) -> bool:
        return norm_text(text)[:PREFIX_CHARS] in self.plain

    def has_error(self, text: str) -> bool:
        """The error line's first 100 characters (its shell prefix and pytest's ``E``
        dropped), or — for a line of four words or more — 80% of its first 20 words."""
        key = norm_error(text)
        if not key or key[:PREFIX_CHARS] in self.plain:
            return True
        words = _WORD_RE.findall(key)[:20]
        words = [w.strip(".:,;()[]") for w in words]
        words = [w for w in words if len(w) >= 2]
        if len(words) < 4:
            return False
        hits = sum(1 for w in words if w in self.words)
        return hits >= 0.8 * len(words)

    def has_word(self, word: str) -> bool:
        pat = r"(?<![\w-])" + re.escape(word) + r"(?![\w-])"
        return re.search(pat, self.flat, re.I) is not None

    def has_number(self, item: str) -> bool:
        m = _NUMBER_RE.fullmatch(item)
        if m is None:
            return re.search(r"(?<![\w.])" + re.escape(item) + r"(?![\w.])", self.flat) is not None
        num = re.escape(m.group("num")).replace(",", ",?")
        pat = r"(?<![\w.,])" + num + r"[ \t]?" + re.escape(m.group("unit")) + r"(?![A-Za-z0-9_])"
        return re.search(pat, self.flat, re.I) is not None

    def has_identifier(self, ident: str) -> bool:
        if ident.startswith("#"):
            return re.search(re.escape(ident) + r"(?!\d)", self.flat) is not None
        if _TICKET_RE.fullmatch(ident):
            return self.has_word(ident)
        return ident[:7].lower() in self.flat_lower

    def has(self, category: Category, text: str) -> bool:
        if category is Category.PATHS:
            return self.has_path(text)
        if category is Category.COMMANDS:
            return self.has_prefix(text)
        if category is Category.ERRORS:
            return self.has_error(text)
        if category is Category.URLS:
            return text.lower().rstrip("/") in self.flat_lower
        if category is Category.TOOLS:
            return self.has_word(text)
        if category is Category.NUMBERS:
            return self.has_number(text)
        if category is Category.IDENTIFIERS:
            return self.has_identifier(text)
        return norm_text(text) in self.plain


# ----------------------------------------------------------------------------- checks

#: Section titles whose lines quote history on purpose (asks kept verbatim).
_HISTORY_TITLES = ("historical", "pending", "ask", "user message", "request")
#: Line openers that address the reader with a new request (lower case).
_REQUEST_OPENERS = (
    "please ",
    "please,",
    "can you",
    "could you",
    "would you",
    "will you",
    "i want you",
    "i need you",
    "i'd like you",
    "you must",
    "you should",
    "you need to",
    "you will now",
    "your task",
    "your next task",
    "your job",
    "go ahead",
    "now, ",
    "now please",
    "make sure you",
    "don't forget to",
    "do not forget to",
    "remember to",
    "start by",
    "begin by",
    "proceed to",
    "continue by",
)
_TITLE_RE = re.compile(
    r"^\s{0,3}(?:#{1,6}\s+(?P<h>.+?)|\*\*(?P<b>.+?)\*\*:?|(?P<n>\d{1,2}\.\s+[A-Z][^:]{0,60}):)\s*$"
)
_QUOTED_RE = re.compile(r"\"[^\"\n]*\"|“[^”\n]*”|`[^`\n]*`")
_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+")


def fresh_request_lines(summary: str) -> list[str]:
    """Lines of a summary that read like a new request to the model that continues.

    A heuristic, by design narrow: a line is flagged when, after its bullet or number,
    it opens with a request addressed to the reader — "please …", "can you …", "you
    should …", "your task …", "go ahead …", "make sure you …", "start by …" and similar
    (see ``_REQUEST_OPENERS``). Quoted text ("…", “…”, `…`) and ``>`` quote lines are not
    looked at, nor are lines under a heading that marks history or quoted asks
    ("Historical …", "Pending Asks", "All user messages", "… requests"), which is where
    a good summary keeps the user's own words. Wrappers are removed first.
    """
    flagged: list[str] = []
    in_history = False
    for raw in strip_summary_wrappers(summary).splitlines():
        m = _TITLE_RE.match(raw)
        if m:
            title = (m.group("h") or m.group("b") or m.group("n") or "").lower()
            in_history = any(w in title for w in _HISTORY_TITLES)
            continue
        line = raw.strip()
        if not line or in_history or line.startswith(">"):
            continue
        body = _BULLET_RE.sub("", line)
        body = _QUOTED_RE.sub("", body).strip().lower()
        if body.startswith(_REQUEST_OPENERS):
            flagged.append(cut_end(line, 160))
    return flagged


def _checks(
    summary: str,
    body_tokens: int,
    budget_tokens: int | None,
) -> tuple[ReviewCheck, ...]:
    stripped = summary.strip()
    if stripped.startswith(HANDOFF_PREFIX):
        has_end = stripped.endswith(END_MARKER)
        wrapper = ReviewCheck(
            "wrapper",
            has_end,
            "handoff prefix and end marker present"
            if has_end
            else "handoff prefix present, end marker missing",
        )
    else:
        wrapper = ReviewCheck(
            "wrapper", None, "not a tinyjuice summary (no handoff prefix); not checked"
        )
    if budget_tokens is None:
        budget = ReviewCheck("budget", None, f"{body_tokens:,} tokens; no budget given")
    else:
        fits = body_tokens <= budget_tokens
        budget = ReviewCheck(
            "budget",
            fits,
            f"{body_tokens:,} of {budget_tokens:,} tokens"
            + ("" if fits else f" ({body_tokens - budget_tokens:,} over)"),
        )
    hits = find_secrets(summary)
    kinds = sorted({h.kind.value for h in hits})
    secrets = ReviewCheck(
        "no_secrets",
        not hits,
        "no secret found" if not hits else f"{len(hits)} secret(s) leaked: {', '.join(kinds)}",
    )
    lines = fresh_request_lines(summary)
    fresh = ReviewCheck(
        "no_fresh_request",
        not lines,
        "no line reads as a new request"
        if not lines
        else f"{len(lines)} line(s) read as a new request: " + " | ".join(lines[:3]),
    )
    return (wrapper, budget, secrets, fresh)


# ----------------------------------------------------------------------------- review


def review_summary(
    middle: Sequence[Message],
    summary: str,
    *,
    start_index: int = 0,
    budget_tokens: int | None = None,
    counter: TokenCounter | None = None,
    kept: Sequence[Message] = (),
) -> SummaryReview:
    """Review ``summary`` against the ``middle`` it replaces (see the module docs).

    ``start_index`` is the transcript index of ``middle[0]``, so every item's ``index``
    points into the transcript. ``budget_tokens`` is the summary budget; the *body*
    (wrappers removed) is measured against it. ``kept`` are the messages the model
    still sees after the compaction (head and tail): a rule of the middle found there
    survived (:mod:`tinyjuice.survival`). The probes (:mod:`tinyjuice.probes`) are
    answered from the summary.
    """
    from tinyjuice.probes import answer_from_summary, make_probes
    from tinyjuice.survival import check_rules, find_rules

    counter = counter or default_counter()
    prepared = _Summary(summary)
    facts = extract_facts(middle, start_index=start_index)
    collected = _collect(middle, start_index, facts)
    items = tuple(
        ReviewItem(cat, text, index, prepared.has(cat, text), weight)
        for cat, text, index, weight in collected.items
    )
    body_tokens = counter.count(strip_summary_wrappers(summary))
    return SummaryReview(
        items=items,
        checks=_checks(summary, body_tokens, budget_tokens),
        summary_tokens=body_tokens,
        budget_tokens=budget_tokens,
        source_messages=len(middle),
        start_index=start_index,
        background=collected.background,
        probes=answer_from_summary(make_probes(middle, facts=facts), summary),
        rules=check_rules(find_rules(middle, start_index=start_index), summary, kept),
    )


@dataclass(frozen=True, slots=True)
class PastCompaction:
    """A summary an agent wrote into a transcript, reviewed against the turns before it."""

    #: Index of the summary message.
    index: int
    #: The reviewed span is ``messages[start:end]``.
    start: int
    trigger: str
    pre_tokens: int | None
    review: SummaryReview
    #: End of the reviewed span: the summary, or the first message the agent re-sent
    #: before it (Codex's replacement history), which it did not summarise.
    end: int | None = None

    @property
    def span_end(self) -> int:
        return self.index if self.end is None else self.end

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "span": [self.start, self.span_end],
            "trigger": self.trigger,
            "pre_tokens": self.pre_tokens,
            **self.review.to_dict(),
        }


def review_past_compactions(
    transcript: Transcript, *, counter: TokenCounter | None = None
) -> tuple[PastCompaction, ...]:
    """One review per summary already in ``transcript``, oldest first.

    Summaries are the compaction events' summary messages plus any other message the
    reader marked as a summary (``meta.is_summary``). Each is reviewed against the
    messages since the previous summary (that summary included: it was part of what the
    agent summarised) — for readers that keep full history (Claude Code, Codex) these
    are the turns that were compacted; for logs that drop them (Hermes) it is what the
    log kept before the summary.
    """
    counter = counter or default_counter()
    msgs = transcript.messages
    events: dict[int, tuple[str, int | None, int]] = {}
    for e in transcript.compactions:
        at = e.summary_index
        if at is not None and 0 <= at < len(msgs):
            # What the agent re-sent before its summary (Codex's replacement history,
            # Hermes' re-inserted head) was not summarised: the span ends before it.
            end = e.message_index if e.resets_context and e.message_index <= at else at
            events[at] = (e.trigger.value, e.pre_tokens, end)
    for i, m in enumerate(msgs):
        if m.meta.is_summary and i not in events:
            events[i] = ("unknown", None, i)
    out: list[PastCompaction] = []
    previous = 0
    ats = sorted(events)
    for k, at in enumerate(ats):
        trigger, pre, end = events[at]
        end = max(previous, end)
        after = ats[k + 1] if k + 1 < len(ats) else len(msgs)
        review = review_summary(
            msgs[previous:end],
            msgs[at].text,
            start_index=previous,
            counter=counter,
            kept=msgs[at + 1 : after],
        )
        out.append(PastCompaction(at, previous, trigger, pre, review, end))
        previous = at
    return tuple(out)
