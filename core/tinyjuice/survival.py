"""Rules survival: instructions that must outlive a compaction, and whether they did.

Details: docs/compaction.md (`tinyjuice.survival`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from tinyjuice.breakdown import _classified_sections
from tinyjuice.facts import _CONSTRAINT_RE, _real_user, norm_text, split_sentences
from tinyjuice.model import Message, Role
from tinyjuice.redact import redact_text

__all__ = ["Rule", "RuleCheck", "RulesReport", "check_rules", "find_rules"]

#: Share of a rule's words the summary must hold for the rule to count as kept.
KEPT_SHARE = 0.7
MAX_RULES = 60

_BULLET_RE = re.compile(r"^\s*(?:[-*+•]|\d{1,3}[.)])\s+(?P<body>.+)$")
_RULES_FILE_RE = re.compile(r"(?:CLAUDE|AGENTS|GEMINI)\.md|\.cursorrules|user_instructions", re.I)
_SKILL_RE = re.compile(r"<skill\b|^#+\s*skill|base directory for this skill", re.I | re.M)
_WORD_RE = re.compile(r"[\w.+-]{3,}")
_SUFFIX_RE = re.compile(r"(?:ing|ed|es|s)$")


def _stem(word: str) -> str:
    """A word as compared: ``.``/``-`` trimmed, a plural or tense ending dropped."""
    w = word.strip("./-")
    return _SUFFIX_RE.sub("", w) if len(w) > 4 else w


@dataclass(frozen=True, slots=True)
class Rule:
    text: str
    #: ``claude_md``, ``agents_md``, ``skill``, ``system_prompt`` or ``user``.
    source: str
    #: Message index where it was found.
    index: int


@dataclass(frozen=True, slots=True)
class RuleCheck:
    rule: Rule
    #: ``summary``, ``kept`` (still in the context) or ``lost``.
    where: str

    @property
    def survived(self) -> bool:
        return self.where != "lost"


@dataclass(frozen=True, slots=True)
class RulesReport:
    checks: tuple[RuleCheck, ...]

    @property
    def lost(self) -> tuple[RuleCheck, ...]:
        return tuple(c for c in self.checks if not c.survived)

    @property
    def ok(self) -> bool | None:
        return None if not self.checks else not self.lost

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": len(self.checks),
            "kept": len(self.checks) - len(self.lost),
            "ok": self.ok,
            "lost": [
                {"text": c.rule.text, "source": c.rule.source, "index": c.rule.index}
                for c in self.lost
            ],
            "rules": [
                {
                    "text": c.rule.text,
                    "source": c.rule.source,
                    "index": c.rule.index,
                    "where": c.where,
                }
                for c in self.checks
            ],
        }


def _rule_lines(text: str, *, every_bullet: bool) -> list[str]:
    out: list[str] = []
    for raw in text.splitlines():
        if raw.lstrip().startswith(("<", "Contents of ")):
            continue
        m = _BULLET_RE.match(raw)
        if m and every_bullet:
            body = m.group("body").strip()
            if 8 <= len(body) <= 300:
                out.append(body)
            continue
        for s in split_sentences(raw):
            if _CONSTRAINT_RE.search(s) and 8 <= len(s) <= 300:
                out.append(s)
    return out


def _source_of(m: Message, text: str) -> tuple[str, str] | None:
    """(source, the part of the text holding rules) for a rules-bearing message."""
    if m.role is Role.TOOL and (m.tool_name or "").lower() == "skill":
        return "skill", text
    if m.meta.is_injected or m.role is Role.SYSTEM:
        found = _RULES_FILE_RE.search(text)
        if found:
            kind = "agents_md" if "agents" in found.group(0).lower() else "claude_md"
            if kind == "agents_md" or m.meta.injected_kind == "agents_md":
                kind = "agents_md"
            return kind, text
        if _SKILL_RE.search(text):
            return "skill", text
        if m.role is Role.SYSTEM:
            sections = _classified_sections(text)
            picked = "\n".join(sections.get(k, "") for k in ("rules", "skills"))
            return "system_prompt", picked or text
    return None


#: Rules remembered per message across calls: ``id(message) → (message, its rules as
#: (key, text, source))`` (see find_rules).
RulesMemo = dict[int, tuple[Message, tuple[tuple[str, str, str], ...]]]


def find_rules(
    middle: Sequence[Message], *, start_index: int = 0, memo: RulesMemo | None = None
) -> tuple[Rule, ...]:
    """The rules in ``middle`` (see the module docs), de-duplicated, first seen first.

    ``memo`` (one per transcript) remembers each message's rules by the message object.
    Only the messages that may hold rules (:func:`_may_hold_rules`) are read or
    remembered.
    """
    seen: dict[str, Rule] = {}
    for offset, m in enumerate(middle):
        if not _may_hold_rules(m):
            continue
        if memo is None:
            found = _message_rules(m)
        else:
            # The memo keeps each message alive, so an id found there is that message.
            hit = memo.get(id(m))
            if hit is None:
                hit = memo[id(m)] = (m, _message_rules(m))
            found = hit[1]
        for key, line, source in found:
            if key not in seen:
                seen[key] = Rule(line, source, start_index + offset)
    return tuple(redact_rule(r) for r in list(seen.values())[:MAX_RULES])


_ROLE = attrgetter("role")
_INJECTED = attrgetter("meta.is_injected")
_TOOL_NAME = attrgetter("tool_name")


def may_hold_source_rules(middle: Sequence[Message]) -> bool:
    """Whether a message of ``middle`` may hold rules from a source other than the user
    (injected context, a skill, a system message: :func:`_source_of`). False means that
    every rule :func:`find_rules` finds there is a user's. Read in C, not per message:
    any tool name "skill" counts, whatever its role (True only asks for the full read).
    """
    roles = set(map(_ROLE, middle))
    if Role.SYSTEM in roles or any(map(_INJECTED, middle)):
        return True
    return Role.TOOL in roles and any(
        (name or "").lower() == "skill" for name in set(map(_TOOL_NAME, middle))
    )


def _may_hold_rules(m: Message) -> bool:
    """A real ask or a rules source (:func:`_source_of`) may hold rules; nothing else is
    read."""
    role = m.role
    return (
        role is Role.USER
        or role is Role.SYSTEM
        or m.meta.is_injected
        or (role is Role.TOOL and (m.tool_name or "").lower() == "skill")
    )


#: :data:`~tinyjuice.facts._CONSTRAINT_RE` loosened for lower-case text: no word
#: boundaries, any blanks between its words. Every sentence of a text
#: (:func:`~tinyjuice.facts.split_sentences`: pieces with their blanks collapsed) that
#: matches the strict pattern is a stretch of the text this one matches, once lowered.
_CONSTRAINT_HINT_RE = re.compile(_CONSTRAINT_RE.pattern.replace(r"\b", "").replace(" ", r"\s+"))
#: Characters ``re.IGNORECASE`` matches to an ASCII letter that ``str.lower`` does not
#: turn into it (dotted and dotless I, long s).
_ODD_FOLDS = ("\u0130", "\u0131", "\u017f")


def _may_constrain(text: str) -> bool:
    """False when no sentence of ``text`` can match ``_CONSTRAINT_RE`` (one case-sensitive
    scan of the lowered text instead of a case-insensitive one per sentence)."""
    return _CONSTRAINT_HINT_RE.search(text.lower()) is not None or any(
        c in text for c in _ODD_FOLDS
    )


def _message_rules(m: Message) -> tuple[tuple[str, str, str], ...]:
    """The rules of one message that may hold rules (:func:`_may_hold_rules`), in order:
    ``(norm_text key, text, source)``."""
    text = m.text
    if not text.strip():
        return ()
    if _real_user(m):
        if not _may_constrain(text):
            return ()
        return tuple(
            (norm_text(s), s, "user")
            for s in split_sentences(text)
            if _CONSTRAINT_RE.search(s) and 8 <= len(s) <= 300
        )
    found = _source_of(m, text)
    if found is None:
        return ()
    source, body = found
    every = source != "system_prompt"
    return tuple((norm_text(line), line, source) for line in _rule_lines(body, every_bullet=every))


def redact_rule(rule: Rule) -> Rule:
    return Rule(redact_text(rule.text), rule.source, rule.index)


def _words(text: str) -> list[str]:
    return list(dict.fromkeys(_stem(w) for w in _WORD_RE.findall(norm_text(text))))


def _holds(plain: str, vocab: set[str], rule: str) -> bool:
    key = norm_text(rule)
    if key.rstrip(".") in plain:
        return True
    words = [w for w in _words(rule) if w]
    if not words:
        return False
    return sum(w in vocab for w in words) >= KEPT_SHARE * len(words)


def check_rules(rules: Sequence[Rule], summary: str, kept: Sequence[Message] = ()) -> RulesReport:
    """Where each rule still is after the compaction: the summary, a kept message, or
    nowhere (lost)."""
    plain = norm_text(redact_text(summary))
    vocab = {_stem(w) for w in _WORD_RE.findall(plain)}
    kept_text = norm_text(redact_text("\n".join(m.text for m in kept)))
    checks = []
    for rule in rules:
        if _holds(plain, vocab, rule.text):
            where = "summary"
        elif kept_text and norm_text(rule.text).rstrip(".") in kept_text:
            where = "kept"
        else:
            where = "lost"
        checks.append(RuleCheck(rule, where))
    return RulesReport(tuple(checks))
