"""The savings report (benchmarks.savings) at small scale: every seed-000 P3 fixture is
compressed by both profiles and the batch strategy, invariants hold, summary failures drop
nothing, repeated no-op compression backs off, and two runs give identical numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks import RunContext
from benchmarks.savings import _targets, build_fixtures, markdown, measure

SCALE = 0.3

FIXTURES = (
    "long-tool-heavy",
    "repeated-reads",
    "huge-terminal",
    "image-heavy",
    "partial-keep-last",
    "summary-auth-failure",
    "summary-network-failure",
    "anti-thrash",
)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any], Path]:
    a = tmp_path_factory.mktemp("savings-a")
    b = tmp_path_factory.mktemp("savings-b")
    first = measure(a, SCALE)
    second = measure(b, SCALE)
    return first, second, a


def _row(report: dict[str, Any], fixture: str, method: str) -> dict[str, Any]:
    return next(r for r in report["rows"] if r["fixture"] == fixture and r["method"] == method)


def test_two_runs_give_identical_numbers_and_fixture_bytes(runs: Any) -> None:
    first, second, directory = runs
    assert first == second
    again = directory.parent / "again"
    measure(again, SCALE)
    for name in FIXTURES:
        assert (again / f"{name}.json").read_bytes() == (directory / f"{name}.json").read_bytes()


def test_every_fixture_is_written_and_compressed_each_way(runs: Any) -> None:
    report, _, directory = runs
    assert tuple(report["fixtures"]) == FIXTURES
    assert {p.stem for p in directory.glob("*.json")} == set(FIXTURES)
    for name in FIXTURES:
        methods = {r["method"] for r in report["rows"] if r["fixture"] == name}
        expected = {"hermes", "rules"} if name == "anti-thrash" else {"hermes", "rules", "batch"}
        assert methods == expected
    for row in report["rows"]:
        assert row["tokens_before"] > 0 and row["tokens_after"] <= row["tokens_before"]
        saved = 100 * (row["tokens_before"] - row["tokens_after"]) / row["tokens_before"]
        assert row["percent_saved"] == round(saved, 2)


def test_invariants_hold_on_every_row(runs: Any) -> None:
    report, _, _ = runs
    for row in report["rows"]:
        inv = row["invariants"]
        assert {"pairs_ok", "tail_identical", "latest_ask_verbatim", "args_valid_json"} <= set(inv)
        assert row["invariants_held"], (row["fixture"], row["method"], inv)


def test_real_savings_on_the_compressible_fixtures(runs: Any) -> None:
    report, _, _ = runs
    for name in ("long-tool-heavy", "repeated-reads", "huge-terminal", "image-heavy"):
        row = _row(report, name, "hermes")
        assert row["status"] == "compacted" and row["percent_saved"] > 10
        assert (
            _row(report, name, "batch")["tokens_after"]
            <= _row(report, name, "batch")["target_tokens"]
        )
    huge = _row(report, "huge-terminal", "hermes")
    assert huge["percent_saved"] > 80
    partial = _row(report, "partial-keep-last", "hermes")
    assert partial["status"] == "compacted"


@pytest.mark.parametrize("fixture", ["summary-auth-failure", "summary-network-failure"])
def test_auth_and_network_failures_drop_nothing(runs: Any, fixture: str) -> None:
    report, _, _ = runs
    for method, status in (("hermes", "aborted"), ("batch", "summary_failed")):
        row = _row(report, fixture, method)
        assert row["status"] == status
        assert row["invariants"]["nothing_dropped"] is True
        assert row["tokens_after"] == row["tokens_before"]
        assert row["provider_calls"] == 1
        assert row["failure_class"] == fixture.split("-")[1]


def test_repeated_noop_compression_backs_off(runs: Any) -> None:
    report, _, _ = runs
    for method in ("hermes", "rules"):
        row = _row(report, "anti-thrash", method)
        assert row["statuses"][:2] == ["noop", "noop"]
        assert row["backed_off_at_call"] == 3 and row["auto_blocked"]
        assert set(row["statuses"][2:]) == {"backed_off"}
        assert row["strikes"][:2] == [1, 2]


def test_fact_retention_is_measured_on_compressed_spans(runs: Any) -> None:
    report, _, _ = runs
    row = _row(report, "long-tool-heavy", "hermes")
    fr = row["fact_retention"]
    assert fr["facts"] > 0 and 0 <= fr["kept"] <= fr["facts"]
    assert set(fr["by_kind"]) == {"paths", "commands", "urls", "errors"}
    assert fr["by_kind"]["commands"]["kept"] == fr["by_kind"]["commands"]["facts"]
    assert _row(report, "summary-auth-failure", "hermes")["fact_retention"] is None
    review = row["review"]  # tinyjuice.review's scorecard of the inserted summary
    assert 0 < review["overall"] <= 1 and review["checks_ok"]
    assert review["found"]["commands"] == review["total"]["commands"]
    assert _row(report, "long-tool-heavy", "rules")["review"] is None  # no summary there


def test_targets_and_markdown(runs: Any) -> None:
    report, _, _ = runs
    targets = {t["id"]: t for t in _targets(report)}
    assert set(targets) == {
        "savings.invariants",
        "savings.summary_failures",
        "savings.anti_thrash",
        "savings.fact_retention",
    }
    assert targets["savings.invariants"]["pass"] and targets["savings.summary_failures"]["pass"]
    assert targets["savings.anti_thrash"]["value"] == 3
    table = markdown(report)
    assert table.count("\n") == 2 + len(report["rows"])
    assert "| huge-terminal | hermes |" in table


def test_summary_at_no_cost_is_undone_even_after_an_error(tmp_path: Path) -> None:
    import tinyjuice.fit as fit
    from benchmarks.batch import summary_at_no_cost

    real = fit.fallback_summary
    with pytest.raises(RuntimeError), summary_at_no_cost():
        assert fit.fallback_summary is not real
        raise RuntimeError("stop")
    assert fit.fallback_summary is real


def test_scale_changes_size_not_shape() -> None:
    small = build_fixtures(0.3)
    full = build_fixtures(1.0)
    assert [f.name for f in small] == [f.name for f in full] == list(FIXTURES)
    assert len(small[0].doc["messages"]) < len(full[0].doc["messages"])


def test_batch_benchmark_section_runs_small(tmp_path: Path) -> None:
    from benchmarks import batch as batch_section

    result = batch_section.run(RunContext(sizes=(40,), quick=True, work_dir=tmp_path))
    assert result["trajectories"] == 40
    assert result["outputs_identical"] and result["aggregates_equal"]
    assert result["no_compression_output_unchanged"]
    assert result["workers_1"]["compressed"] > 0
    # The reference run replaced every summary with its fixed line, and nothing else.
    free = result["workers_1_free_summary"]
    assert free["fallback_summaries"] > 0 and free["compressed"] > 0
    assert free["turns_before"] == result["workers_1"]["turns_before"]
    assert free["tokens_after"] < result["workers_1"]["tokens_after"]
    assert result["free_summary_vs_floor"] is not None
    assert (
        "costs nothing" in {t["id"]: t for t in result["targets"]}["batch.floor_target"]["figure"]
    )
    assert {t["id"] for t in result["targets"]} == {
        "batch.workers",
        "batch.floor",
        "batch.floor_target",
    }
