"""Probe questions: can a reader of the summary answer what the compressed turns knew?

From the compressed middle, :func:`make_probes` writes deterministic questions in four
kinds (the kinds of Factory's production evaluation), each with the evidence — the
message index in the original — and what a right answer must hold:

==================  =====================================================================
``recall``          "What was the error when running `X`?" — one per error a tool
                    returned (up to 8): the error line must be in the answer.
``artifact``        "What was done to PATH?" — one per file a tool call touched (up to
                    16): the path and every action (read, created, edited, deleted, ran,
                    or a synonym such as "modified", "wrote", "removed", "executed")
                    near it.
``continuation``    "What was about to happen next?" — the last step the assistant
                    announced ("I'll …", "Next, …"), else the latest ask: most of its
                    words must be in the answer.
``decision``        "What was decided about Y and why?" — one per decision sentence of
                    the assistant (up to 5): half of its words must be in the answer.
==================  =====================================================================

:func:`answer_from_summary` answers every probe from the summary text itself
(deterministic matching); :func:`judge_probes` asks a model — any provider with
``answer(prompt, max_tokens)`` (:mod:`tinyjuice.providers`) — to answer them from the
summary alone, and grades its answers with the same rules. Everything sent and returned
is redacted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

import orjson

from tinyjuice.facts import Facts, extract_facts, norm_text
from tinyjuice.model import Message
from tinyjuice.redact import redact_text
from tinyjuice.review import _TRACEBACK_HEAD_RE, _Summary

__all__ = [
    "ACTION_WORDS",
    "Probe",
    "ProbeKind",
    "ProbeReport",
    "answer_from_summary",
    "judge_probes",
    "make_probes",
]


class ProbeKind(StrEnum):
    RECALL = "recall"
    ARTIFACT = "artifact"
    CONTINUATION = "continuation"
    DECISION = "decision"


#: Words that say an action was done to a file (lower case, matched as word starts).
ACTION_WORDS: dict[str, tuple[str, ...]] = {
    "read": ("read", "view", "open", "inspect", "look", "check", "examin", "review"),
    "created": ("creat", "wrote", "writ", "add", "new", "generat", "produc", "output"),
    "edited": ("edit", "modif", "chang", "updat", "fix", "patch", "replac", "rewr", "set"),
    "deleted": ("delet", "remov", "rm "),
    "ran": ("ran", "run", "execut", "invok", "launch", "re-ran", "rerun"),
}

MAX_RECALL = 8
MAX_ARTIFACT = 16
MAX_DECISION = 5

_STOP = frozenset(
    (
        *("the", "and", "for", "with", "that", "this", "from", "into", "then", "than"),
        *("was", "were", "are", "has", "have", "had", "not", "but", "you", "your", "our"),
        *("its", "it's", "i'll", "i'm", "let's", "will", "would", "should", "could"),
        *("about", "there", "their", "what", "when", "which", "also", "just", "now"),
        *("use", "used", "using", "instead", "because"),
    )
)
_CONTENT_RE = re.compile(r"[\w./+-]{3,}")


def _content_words(text: str) -> list[str]:
    words = [w.strip("./-") for w in _CONTENT_RE.findall(norm_text(text))]
    return list(dict.fromkeys(w for w in words if len(w) >= 3 and w not in _STOP))


@dataclass(frozen=True, slots=True)
class Probe:
    kind: ProbeKind
    question: str
    #: Message index (in the transcript) of the evidence.
    evidence: int
    #: What the answer must hold: the error line, the path and its actions, the words.
    expected: tuple[str, ...]
    answered: bool = False
    #: 0..1: the share of ``expected`` the answer held.
    score: float = 0.0
    #: The judge's answer (None when answered from the summary).
    answer: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind.value,
            "question": self.question,
            "evidence": self.evidence,
            "expected": list(self.expected),
            "answered": self.answered,
            "score": round(self.score, 4),
        }
        if self.answer is not None:
            out["answer"] = self.answer
        return out


@dataclass(frozen=True, slots=True)
class ProbeReport:
    probes: tuple[Probe, ...]
    #: The provider that answered (None: the summary was matched directly).
    judge: str | None = None
    #: Why the judge could not answer (then the probes are the summary's answers).
    judge_error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def scores(self) -> dict[str, float]:
        """Answered / asked per kind (kinds with no probe are left out)."""
        out: dict[str, float] = {}
        for kind in ProbeKind:
            asked = [p for p in self.probes if p.kind is kind]
            if asked:
                out[kind.value] = sum(p.answered for p in asked) / len(asked)
        return out

    @property
    def overall(self) -> float | None:
        if not self.probes:
            return None
        return sum(p.answered for p in self.probes) / len(self.probes)

    @property
    def unanswered(self) -> tuple[Probe, ...]:
        return tuple(p for p in self.probes if not p.answered)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scores": {k: round(v, 4) for k, v in self.scores.items()},
            "overall": None if self.overall is None else round(self.overall, 4),
            "judge": self.judge,
            "judge_error": self.judge_error,
            "probes": [p.to_dict() for p in self.probes],
            "unanswered": [
                {"kind": p.kind.value, "question": p.question, "evidence": p.evidence}
                for p in self.unanswered
            ],
        }


# --------------------------------------------------------------------------- making


def _short(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _topic(sentence: str) -> str:
    code: list[str] = re.findall(r"`([^`]{2,60})`", sentence)
    if code:
        return code[0]
    words: list[str] = re.findall(r"[\w./-]+", sentence)
    techy = [w for w in words if re.search(r"[\d_./]", w)]
    if techy:
        return techy[0].strip(".")
    return " ".join(_content_words(sentence)[:4]) or _short(sentence, 40)


def make_probes(
    middle: Sequence[Message], *, start_index: int = 0, facts: Facts | None = None
) -> tuple[Probe, ...]:
    """The probe questions for ``middle`` (redacted), in kind order, evidence first seen
    first. Deterministic: the same middle always gives the same probes."""
    facts = facts or extract_facts(middle, start_index=start_index)
    out: list[Probe] = []
    by_result: dict[int, list[str]] = {}
    where: dict[int, str | None] = {}
    for err, source in zip(facts.tool_errors, facts.error_sources, strict=True):
        if _TRACEBACK_HEAD_RE.match(err.text):
            continue
        by_result.setdefault(err.index, []).append(err.text)
        where.setdefault(err.index, source)
    for index, lines in list(by_result.items())[:MAX_RECALL]:
        source = where[index]
        what = f"running `{_short(source, 70)}`" if source else "the tool call"
        out.append(Probe(ProbeKind.RECALL, f"What was the error when {what}?", index, tuple(lines)))
    for a in facts.artifacts[:MAX_ARTIFACT]:
        out.append(
            Probe(
                ProbeKind.ARTIFACT,
                f"Which files changed and how: what was done to {a.path}?",
                a.index,
                (a.path, *a.actions),
            )
        )
    step = facts.next_step or facts.latest_ask
    if step is not None:
        out.append(
            Probe(
                ProbeKind.CONTINUATION,
                "What was about to happen next when these turns ended?",
                step.index,
                (step.text,),
            )
        )
    for d in facts.decisions[:MAX_DECISION]:
        out.append(
            Probe(
                ProbeKind.DECISION,
                f"What was decided about {_topic(d.text)} and why?",
                d.index,
                (d.text,),
            )
        )
    return tuple(
        replace(p, question=redact_text(p.question), expected=tuple(map(redact_text, p.expected)))
        for p in out
    )


# -------------------------------------------------------------------------- grading


def _near_path(text: str, path: str) -> str | None:
    """The lines around each mention of ``path`` in ``text`` (that line and the two
    after it), joined; None when the path is not mentioned."""
    lines = text.splitlines()
    hits: list[str] = []
    for k, line in enumerate(lines):
        if _Summary(line).has_path(path):
            hits.extend(lines[k : k + 3])
    return "\n".join(hits).lower() if hits else None


def _has_action(near: str, action: str) -> bool:
    return any(re.search(r"(?<![a-z])" + re.escape(w), near) for w in ACTION_WORDS[action])


def grade(probe: Probe, text: str) -> tuple[bool, float]:
    """Whether ``text`` answers ``probe`` and how much of the expected it holds."""
    if probe.kind is ProbeKind.RECALL:
        prepared = _Summary(text)
        score = sum(prepared.has_error(e) for e in probe.expected) / len(probe.expected)
        return score >= 0.5, score
    if probe.kind is ProbeKind.ARTIFACT:
        path, *actions = probe.expected
        near = _near_path(text, path)
        if near is None:
            return False, 0.0
        done = sum(_has_action(near, a) for a in actions)
        score = (1 + done) / (1 + len(actions))
        return done == len(actions), score
    words = _content_words(probe.expected[0])
    if not words:
        return False, 0.0
    have = set(re.findall(r"[\w./+-]+", norm_text(text)))
    have |= {w.strip("./-") for w in have}
    score = sum(w in have for w in words) / len(words)
    need = 0.6 if probe.kind is ProbeKind.CONTINUATION else 0.5
    return score >= need, score


def answer_from_summary(probes: Sequence[Probe], summary: str) -> ProbeReport:
    """Every probe answered by matching the (redacted) summary itself."""
    text = redact_text(summary)
    graded = []
    for p in probes:
        ok, score = grade(p, text)
        graded.append(replace(p, answered=ok, score=score))
    return ProbeReport(tuple(graded))


# ---------------------------------------------------------------------------- judge

_JUDGE_SYSTEM = (
    "You answer questions about an agent's earlier work using ONLY the summary you are "
    "given. Quote file paths, commands and error messages exactly as the summary has "
    "them. If the summary does not say, answer exactly: unknown."
)


def judge_prompt(probes: Sequence[Probe], summary: str) -> list[dict[str, str]]:
    """The chat messages asking a model to answer ``probes`` from ``summary`` alone."""
    questions = "\n".join(f"{k + 1}. {p.question}" for k, p in enumerate(probes))
    user = (
        f"<summary>\n{redact_text(summary)}\n</summary>\n\nAnswer each question in one or "
        "two sentences. Reply with a JSON array of strings, one answer per question, in "
        f"order, and nothing else.\n\n{questions}"
    )
    return [{"role": "system", "content": _JUDGE_SYSTEM}, {"role": "user", "content": user}]


def parse_answers(text: str, n: int) -> list[str]:
    """The judge's answers: a JSON array of strings, else numbered lines ("1. …")."""
    body = text.strip()
    start, end = body.find("["), body.rfind("]")
    if 0 <= start < end:
        try:
            data = orjson.loads(body[start : end + 1])
        except orjson.JSONDecodeError:
            data = None
        if isinstance(data, list):
            answers = [a if isinstance(a, str) else orjson.dumps(a).decode() for a in data]
            return (answers + [""] * n)[:n]
    numbered: dict[int, str] = {}
    for line in body.splitlines():
        m = re.match(r"^\s*(\d{1,3})[.)]\s*(.*)$", line)
        if m:
            numbered[int(m.group(1))] = m.group(2).strip()
    return [numbered.get(k + 1, "") for k in range(n)]


def judge_probes(probes: Sequence[Probe], summary: str, provider: Any) -> ProbeReport:
    """Ask ``provider`` (``answer(prompt, max_tokens) -> SummaryText``) to answer the
    probes from the summary alone; grade each answer against the evidence.

    A provider failure (:class:`~tinyjuice.summary.SummaryError`) is reported in
    ``judge_error`` and the probes are answered from the summary instead.
    """
    from tinyjuice.summary import SummaryError

    name = getattr(provider, "name", "judge")
    if not probes:
        return ProbeReport((), judge=name)
    try:
        reply = provider.answer(judge_prompt(probes, summary), 256 + 120 * len(probes))
    except SummaryError as exc:
        fallback = answer_from_summary(probes, summary)
        return ProbeReport(
            fallback.probes, judge=name, judge_error=f"[{exc.failure_class}] {exc.message}"
        )
    answers = parse_answers(redact_text(getattr(reply, "text", str(reply))), len(probes))
    graded = []
    for p, ans in zip(probes, answers, strict=True):
        unknown = ans.strip().lower().rstrip(".") in ("", "unknown")
        ok, score = (False, 0.0) if unknown else grade(p, ans)
        graded.append(replace(p, answered=ok, score=score, answer=ans))
    return ProbeReport(tuple(graded), judge=name)
