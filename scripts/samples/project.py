"""The made-up project ledgerline: its files (data/ledgerline/) and its simulated test suite
(its collected test ids and the causes of its red run, data/test_ids.txt and data/bugs.txt)."""

from __future__ import annotations

import difflib
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from .common import Ids, data_json, data_text, rng_for


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

    @staticmethod
    def diff(path: str, before: str, after: str) -> str:
        a, b = before.splitlines(), after.splitlines()
        return "\n".join(difflib.unified_diff(a, b, f"a/{path}", f"b/{path}", lineterm=""))

    def patch_many(self, path: str, edits: Sequence[tuple[str, str]]) -> str:
        """Apply several unique replacements to one file; return one unified diff."""
        before = self.files[path]
        text = before
        for old, new in edits:
            if text.count(old) != 1:
                raise ValueError(f"edit for {path} matches {text.count(old)} times: {old[:60]!r}")
            text = text.replace(old, new)
        self.files[path] = text
        return self.diff(path, before, text)

    def write(self, path: str, text: str) -> None:
        self.files[path] = text


_START_FILES: list[str] = data_json("project_files.json")
WEBHOOKS = "src/app/payments/webhooks.py"  # the one file some stories start from


def ledgerline(*paths: str) -> Repo:
    """The project as every story starts it (data/ledgerline/): the files named in
    data/project_files.json, or only ``paths``."""
    return Repo({path: data_text(f"ledgerline/{path}") for path in paths or _START_FILES})


# ============================================================================ test suite


@dataclass
class Bug:
    """One cause of red tests: per failing id, pytest's report (``block``, ``where``:
    "tests/...py:31: AssertionError" and any captured log, ``short``: the summary reason)."""

    key: str
    reports: dict[str, dict[str, str]]
    error: bool = False  # an error at setup rather than a failure

    @property
    def tests(self) -> tuple[str, ...]:
        return tuple(self.reports)

    def render(self, repo: Repo, test: str) -> tuple[str, str, str]:
        """``test``'s report, its source quotes read from ``repo`` as it is now:
        ``«line PATH|NEEDLE»`` is the number of PATH's first line holding NEEDLE,
        ``«frame PATH|NEEDLE»`` pytest's excerpt of the function up to that line."""

        def quote(m: re.Match[str]) -> str:
            kind, path, needle = m.groups()
            if kind == "line":
                return str(repo.find_line(path, needle))
            return frame(repo, path, needle)

        report = self.reports[test]
        block, where = (_QUOTE.sub(quote, report[k]) for k in ("block", "where"))
        return block, where, report["short"]


_QUOTE = re.compile(r"«(line|frame) ([^|»]+)\|([^»]+)»")


def parse_bugs(text: str) -> list[Bug]:
    """The bugs of ``data/bugs.txt``'s format: one ``@@ bug KEY [error]`` header a bug, then
    per test ``@@ test ID``, ``@@ short REASON`` and the ``@@ where`` / ``@@ block`` texts
    (the lines up to the next ``@@`` line)."""
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


def ledgerline_suite(seed: str, repo: Repo, active: Callable[[str], bool]) -> Suite:
    """The project's test suite on ``repo``: its tests and the causes of its red run, in fix
    order (``data/bugs.txt``), those whose key is ``active`` breaking their tests."""
    bugs = {bug.key: bug for bug in parse_bugs(data_text("bugs.txt"))}
    tests = data_text("test_ids.txt").split("\n")[:-1]
    return Suite(tests, rng_for(seed), repo, bugs, {key for key in bugs if active(key)})


@dataclass
class Suite:
    inventory: list[str]
    rng: random.Random
    repo: Repo
    bugs: dict[str, Bug]
    active: set[str]  # the keys of the bugs breaking their tests now
    skipped: tuple[str, ...] = (
        "tests/test_migrations.py::test_downgrade_one",
        "tests/billing/test_invoice_repository.py::test_lines_keep_order",
    )

    def failing(self) -> dict[str, Bug]:
        return {t: self.bugs[k] for k in sorted(self.active) for t in self.bugs[k].tests}

    def duration(self, n: int) -> str:
        return f"{n * self.rng.uniform(0.012, 0.03) + 0.4:.2f}s"

    def run(self, targets: Sequence[str] = ("tests",), stop_first: bool = False) -> tuple[str, int]:
        """``pytest -q`` over ``targets``: progress dots, failure reports, summary."""
        selected = [t for t in self.inventory if any(t == x or t.startswith(x) for x in targets)]
        failing = self.failing()
        chars: list[str] = []
        for t in selected:
            bug = failing.get(t)
            chars.append(("E" if bug.error else "F") if bug else "s" if t in self.skipped else ".")
            if bug and stop_first:
                break
        bad = [t for t, c in zip(selected, chars, strict=False) if c in "FE"]
        total, starts = max(len(selected), 1), range(0, len(chars), 72)  # 72 a progress row
        rows = (("".join(chars[s : s + 72]), min(s + 72, len(chars))) for s in starts)
        out = "\n".join(f"{chunk:<72} [{round(100 * end / total):>3}%]" for chunk, end in rows)
        if bad:
            out += self._reports(bad, failing, selected)
        elif "s" in chars:
            out += "\n" + " short test summary info ".center(80, "=") + "\n"
            out += "\n".join(self._skip_lines(selected))
        n_fail, n_err, n_skip, n_pass = (chars.count(c) for c in "FEs.")
        words = ((n_fail, "failed"), (n_pass, "passed"), (n_skip, "skipped"), (n_err, "error"))
        parts = [f"{n} {w}" for n, w in words if n or w == "passed"]
        if n_err > 1:
            parts[-1] += "s"
        if stop_first and bad:
            out += "\n" + " stopping after 1 failures ".center(80, "!")
        out += f"\n{', '.join(parts)} in {self.duration(len(chars))}"
        return out, (1 if bad else 0)

    def _reports(
        self, bad: Sequence[str], failing: dict[str, Bug], selected: Sequence[str] | None = None
    ) -> str:
        if not bad:
            return ""
        out: list[str] = []
        errors = [t for t in bad if failing[t].error]
        fails = [t for t in bad if not failing[t].error]
        rendered = {t: failing[t].render(self.repo, t) for t in bad}
        lead = "\n"  # before the first section's heading only
        for tests, heading, title, pad in (
            (errors, " ERRORS ", " ERROR at setup of {} ", ()),
            (fails, " FAILURES ", " {} ", ("",)),
        ):
            if tests:
                out.append(lead + heading.center(80, "="))
                lead = ""
            for t in tests:
                block, where, _ = rendered[t]
                out.append(title.format(t.split("::", 1)[1]).center(80, "_"))
                out.extend((*pad, block, "", where))
        out.append(" short test summary info ".center(80, "="))
        out.extend(self._skip_lines(selected))
        out += [f"ERROR {t} - {rendered[t][2]}" for t in errors]
        out += [f"FAILED {t} - {rendered[t][2]}" for t in fails]
        return "\n".join(out)

    def _skip_lines(self, selected: Sequence[str] | None = None) -> list[str]:
        return [
            f"SKIPPED [1] {t.split('::')[0]}:{31 if 'migrations' in t else 52}: needs the postgres container"
            for t in self.skipped
            if selected is None or t in selected
        ]

    def verbose_log(self, total_lines: int) -> tuple[str, int]:
        """``pytest -vv --log-cli-level=DEBUG -p randomly ... | tail -n total_lines``."""
        rng = self.rng
        failing = self.failing()
        order = list(self.inventory)
        rng.shuffle(order)
        lines = data_text("text/pytest_vv_header.txt").format(n=len(order)).split("\n")[:-1]
        for i, t in enumerate(order, start=1):
            lines.append(f"{t} ")
            lines.append("-" * 32 + " live log setup " + "-" * 32)
            lines.extend(_log_lines(rng, t, "setup"))
            lines.append("-" * 33 + " live log call " + "-" * 32)
            lines.extend(_log_lines(rng, t, "call"))
            pct = f"[{round(100 * i / len(order)):>3}%]"
            skipped = "SKIPPED (needs the postgres container)"
            word = "FAILED" if t in failing else skipped if t in self.skipped else "PASSED"
            lines.append(f"{word:<72} {pct}")
            if rng.random() < 0.3:
                lines.append("-" * 31 + " live log teardown " + "-" * 30)
                lines.extend(_log_lines(rng, t, "teardown"))
        bad = [t for t in order if t in failing]
        report = self._reports(bad, failing).strip("\n").split("\n")
        lines.extend(report)
        n_fail = len(bad)
        n_skip = sum(1 for t in order if t in self.skipped)
        summary = f"{n_fail} failed, {len(order) - n_fail - n_skip} passed, {n_skip} skipped in 61.84s (0:01:01)"
        lines.append(f" {summary} ".center(80, "="))
        if len(lines) < total_lines:
            raise ValueError(f"verbose log too short: {len(lines)} < {total_lines}")
        return "\n".join(lines[-total_lines:]), (1 if bad else 0)


_LOG_TEMPLATES: dict[str, list[str]] = data_json("log_templates.json")


def _log_lines(rng: random.Random, test: str, phase: str) -> list[str]:
    area = test.split("/")[1] if test.count("/") > 1 else "other"
    templates = _LOG_TEMPLATES.get(area, _LOG_TEMPLATES["other"])
    out = []
    for _ in range(rng.randint(1, {"setup": 3, "call": 5, "teardown": 2}[phase])):
        a = rng.randint(1000, 99999) / 100
        b = round(a * 0.0725, 2)
        out.append(
            rng.choice(templates).format(
                n=rng.randint(40, 330),
                h=Ids(rng).hex(8),
                h2=Ids(rng).hex(6),
                a=f"{a:.2f}",
                b=f"{b:.2f}",
                c=f"{a + b:.2f}",
                seq=f"{rng.randint(1, 400):04d}",
                s=f"{rng.uniform(0.001, 2.5):.4f}",
                ts=1757927524 + rng.randint(0, 500),
                k=rng.randint(1, 4),
            )
        )
    return out


def frame(repo: Repo, path: str, needle: str) -> str:
    """A pytest traceback frame: the enclosing function (its decorators first) up to the
    failing line, the first holding ``needle``."""
    lines = repo.lines(path)
    at = repo.find_line(path, needle)
    start = at
    while start > 1 and not lines[start - 1].lstrip().startswith(("def ", "async def ")):
        start -= 1
    if start > 1 and lines[start - 2].strip() == ")":
        while start > 1 and not lines[start - 2].lstrip().startswith("@"):
            start -= 1
    while start > 1 and lines[start - 2].lstrip().startswith("@"):
        start -= 1
    window = enumerate(lines[start - 1 : at], start=start)
    return "\n".join((">   " if n == at else "    ") + ln if ln else "" for n, ln in window)
