"""The made-up project ledgerline: its files (data/ledgerline/), edited as the stories go.
Its test runs are data too (data/runs/<story>/NN.txt, quoted by the stories' steps): pytest's
output as the simulated suite of commit 739a532 (project.py) wrote it."""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from .common import data_json, data_text


class Repo:
    """The project's files as text, edited in step with the story so reads stay consistent."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)

    def text(self, path: str) -> str:
        return self.files[path]

    def lines(self, path: str) -> list[str]:
        return self.files[path].removesuffix("\n").split("\n")

    def numbered(
        self, path: str, offset: int = 1, limit: int | None = None, arrow: bool = False
    ) -> str:
        lines = self.lines(path)
        end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
        sep = "→" if arrow else "|"
        return "\n".join(f"{i:>6}{sep}{lines[i - 1]}" for i in range(offset, end + 1))

    def find_line(self, path: str, needle: str) -> int:
        for i, line in enumerate(self.lines(path), start=1):
            if needle in line:
                return i
        raise KeyError(f"{needle!r} not in {path}")

    def patch(self, path: str, old: str, new: str) -> str:
        """Replace the one occurrence of ``old`` in ``path``; return the unified diff."""
        return self.patch_many(path, [(old, new)])

    def patch_many(self, path: str, edits: Sequence[tuple[str, str]]) -> str:
        """Apply several unique replacements to one file; return one unified diff."""
        before = self.files[path]
        text = before
        for old, new in edits:
            if text.count(old) != 1:
                raise ValueError(f"edit for {path} matches {text.count(old)} times: {old[:60]!r}")
            text = text.replace(old, new)
        self.files[path] = text
        a, b = before.splitlines(), text.splitlines()
        return "\n".join(difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", lineterm=""))

    def write(self, path: str, text: str) -> None:
        self.files[path] = text


_START_FILES: list[str] = data_json("project_files.json")
WEBHOOKS = "src/app/payments/webhooks.py"  # the one file some stories start from


def ledgerline(*paths: str) -> Repo:
    """The project as every story starts it (data/ledgerline/): the files named in
    data/project_files.json, or only ``paths``."""
    return Repo({path: data_text(f"ledgerline/{path}") for path in paths or _START_FILES})
