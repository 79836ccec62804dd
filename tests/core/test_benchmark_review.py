"""The summary-review benchmark section (issue #19) on small fixtures."""

from __future__ import annotations

from pathlib import Path

from benchmarks.review import _targets, measure


def test_review_section_figures(tmp_path: Path) -> None:
    report = measure(tmp_path, scale=0.25)
    trail = report["trail"]
    assert sum(r["touched"] for r in trail) > 0
    # Every touched file with its action, in the summary or its appendix.
    assert all(r["in_summary"] + r["in_appendix"] == r["touched"] for r in trail)
    assert report["sessions"]["compactions"] == 4
    agents = report["sessions"]["agents"]
    assert sum(n for _, n in agents.values()) > 0
    rows = {t["id"]: t for t in _targets(report)}
    assert set(rows) == {"review.trail", "review.probes.fixtures", "review.probes.sessions"}
    assert rows["review.trail"]["pass"] and rows["review.trail"]["value"] == 1.0
    assert rows["review.probes.sessions"]["pass"]
    assert not list(Path("benchmarks/fixtures").glob(".*.tmp"))
