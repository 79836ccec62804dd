"""The causes of the demo's red test suite, in fix order (data/bugs.txt): which tests each
breaks and what pytest prints for them.

``data/bugs.txt`` holds one ``@@ bug KEY [error]`` header per bug, then per test ``@@ test
ID``, ``@@ short REASON`` and the ``@@ where`` / ``@@ block`` texts (the lines up to the
next ``@@`` line). The texts quote the project's source as it is when the report is
printed: see :meth:`~.project.Bug.render`.
"""

from __future__ import annotations

from .common import data_text
from .project import Bug


def _parse(text: str) -> list[Bug]:
    bugs: list[Bug] = []
    report: dict[str, str] = {}
    for chunk in ("\n" + text.removesuffix("\n")).split("\n@@ ")[1:]:
        head, _, body = chunk.partition("\n")
        kind, _, rest = head.partition(" ")
        if kind == "bug":
            key, _, error = rest.partition(" ")
            bugs.append(Bug(key, {}, error=error == "error"))
        elif kind == "test":
            report = bugs[-1].reports[rest] = {}
        elif kind == "short":
            report["short"] = rest
        else:
            report[kind] = body
    return bugs


def demo_bugs() -> list[Bug]:
    """The bugs of the demo's suite (the Hermes samples add them to their Suite)."""
    return _parse(data_text("bugs.txt"))
