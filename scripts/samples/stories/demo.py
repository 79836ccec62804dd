"""demo.json: the Hermes session the inspector and the pipeline are shown on.

Its steps (``data/stories/demo.jsonl``) are user messages, assistant messages whose tool
calls are computed from the repo and suite as they stand (:class:`~.hermes_steps.HermesTools`),
and changes to the world between them (a bug fixed, a file written, tests added, a mark
for the manifest).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import (
    LATEST_ASK,
    SECRETS,
    Clock,
    Ids,
    data_bytes,
    data_json,
    data_text,
    data_url,
    env_file,
    fill,
    make_secrets,
    parallel_calls,
    rng_for,
    roles_counts,
    write_json,
)
from ..project import ledgerline, ledgerline_suite
from ..tools import HERMES_TOOLS, hermes_system_prompt
from ..writers import ChatLog
from .hermes_steps import HermesStory, HermesTools

START = datetime(2025, 9, 16, 8, 41, 7, 118233, tzinfo=UTC)

#: The screenshots users paste, by the name steps give them.
IMAGES = {
    "ci_dashboard": lambda: data_url(data_bytes("images/demo_ci_dashboard.png")),
    "invoice": lambda: data_url(data_bytes("images/demo_invoice.png")),
}


class DemoStory(HermesStory):
    """The demo's world: the repo, the simulated test suite and the screenshots."""

    def __init__(self) -> None:
        rng = rng_for("demo")
        self.ids = Ids(rng)
        self.clock = Clock(START, rng)
        self.repo = ledgerline()
        self.repo.write("CHANGELOG.md", data_text("ledgerline/CHANGELOG.md"))
        self.repo.write(".env", env_file(make_secrets(rng_for("demo-secrets"))))
        self.suite = ledgerline_suite("demo-suite", self.repo, lambda key: key != "flaky_dedupe")
        log, tools = ChatLog(self.ids, self.clock), HermesTools(self.repo, self.suite)
        super().__init__({"demo": log}, tools, self.ids)
        self.marks["invoice_reads"] = []

    def part(self, part: dict[str, Any]) -> str:
        if "image" in part:
            return IMAGES[part["image"]]()
        if "verbose_log" in part:
            return self.suite.verbose_log(part["verbose_log"])[0]
        return super().part(part)

    def step_write(self, value: list[Any], step: dict[str, Any]) -> None:
        self.repo.write(*self.resolve(value))

    def step_extend(self, tests: list[str], step: dict[str, Any]) -> None:
        self.suite.inventory.extend(tests)

    def step_activate(self, bug: str, step: dict[str, Any]) -> None:
        self.suite.active.add(bug)  # the flaky test failing this run (``fix`` ends it)

    def step_skip_hex(self, n: int, step: dict[str, Any]) -> None:
        self.ids.hex(n)  # an id the story drew here (a background process id)


def build_demo(out_dir: Path) -> dict[str, Any]:
    story = DemoStory()
    story.replay("demo")
    h, marks = story.log, story.marks
    shape = data_json("demo_session.json")  # the session log and its manifest entry
    doc = fill(
        shape["session"],
        start=START.replace(tzinfo=None).isoformat(),
        updated=story.clock.local(),
        system_prompt=hermes_system_prompt(),
        tools=HERMES_TOOLS,
        count=len(h.messages),
        messages=h.messages,
    )
    write_json(out_dir / "demo.json", doc)

    reads = [h.messages[i]["content"] for i in marks["invoice_reads"]]
    if len(set(reads)) != 1 or len(reads) != 3:
        raise AssertionError("demo: the three invoice.py reads must be identical")
    if len(json.loads(h.messages[marks["long_output"]]["content"])["output"].split("\n")) != 3000:
        raise AssertionError("demo: the long output must be exactly 3,000 lines")
    entry: dict[str, Any] = fill(
        shape["manifest"],
        counts=roles_counts([m["role"] for m in h.messages], h.tool_calls),
        compactions=h.compactions,
        images=h.images,
        model=doc["model"],
        session_id=doc["session_id"],
        prompt_chars=len(doc["system_prompt"]),
        tool_count=len(HERMES_TOOLS),
        parallel=parallel_calls(h.messages),
        secret_kinds=[s["kind"] for s in SECRETS],
        latest_text=LATEST_ASK,
        **marks,
    )
    return entry
