"""Smoke test of the benchmark harness: a tiny run end to end, plus its building blocks."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from benchmarks import MEASURED, merge_results, render_markdown, target_row
from benchmarks.__main__ import main
from benchmarks.gen import FORMATS, conversation, filename, is_jsonl, render

RUN_DATE = "2025-07-04T12:00:00+00:00"

LOAD_NUMBERS = ("orjson_s", "load_s", "load_nogc_s", "ratio", "file_bytes", "messages_loaded")
TOKEN_NUMBERS = (
    "tokens",
    "transcript_tokens",
    "texts",
    "chars",
    "bare_s",
    "cold_s",
    "warm_s",
    "bare_tokens_per_s",
    "cold_tokens_per_s",
    "warm_tokens_per_s",
    "cold_vs_bare",
    "warm_speedup",
)
RSS_NUMBERS = ("peak_bytes", "baseline_bytes", "peak_mb", "ratio", "file_bytes")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("bench")
    out = root / "results.json"
    # Another section's figures, already in the file: the run must keep them.
    out.write_bytes(
        orjson.dumps({"machine": {}, "generated": "old", "ui": {"targets": [], "x": 1}})
    )
    argv = [
        "--quick",
        "--quiet",
        "--sizes",
        "200",
        "--section",
        "foundation",
        "--section",
        "engine",
        "--out",
        str(out),
        "--work",
        str(root / "work"),
    ]
    assert main([*argv, "--date", RUN_DATE]) == 0
    return out, orjson.loads(out.read_bytes())


def test_results_have_machine_date_and_merged_sections(run: tuple[Path, dict[str, Any]]) -> None:
    _, results = run
    assert results["generated"] == RUN_DATE
    machine = results["machine"]
    assert _is_number(machine["cpu_count"]) and machine["cpu_count"] >= 1
    assert machine["python"].count(".") == 2
    assert results["ui"] == {"targets": [], "x": 1}
    assert set(results) == {"machine", "generated", "ui", "engine", "foundation"}


def test_load_figures_are_numbers_or_an_error(run: tuple[Path, dict[str, Any]]) -> None:
    foundation = run[1]["foundation"]
    assert foundation["sizes"] == [200]
    assert set(foundation["load"]) == set(FORMATS)
    for fmt in FORMATS:
        entry = foundation["load"][fmt]["200"]
        assert _is_number(entry["orjson_s"]) and entry["orjson_s"] > 0
        if "error" in entry:  # a reader that cannot load yet is reported, not fatal
            assert isinstance(entry["error"], str) and entry["error"]
            continue
        for key in LOAD_NUMBERS:
            assert _is_number(entry[key]), (fmt, key, entry.get(key))
        assert entry["ratio"] == pytest.approx(entry["load_s"] / entry["orjson_s"])
        assert entry["mode"] in ("auto", "explicit")
        assert entry["pass"] is (entry["ratio"] <= 4.0)
    # The reference reader always loads, so at least one format is measured.
    assert "error" not in foundation["load"]["openai"]["200"]


def test_token_figures_are_consistent(run: tuple[Path, dict[str, Any]]) -> None:
    tokens = run[1]["foundation"]["tokens"]
    assert "error" not in tokens
    for key in TOKEN_NUMBERS:
        assert _is_number(tokens[key]) and tokens[key] > 0, key
    assert tokens["format"] == "openai" and tokens["messages"] == 200
    # Ours and the bare encoder agree on every text; the transcript adds overheads.
    assert tokens["tokens_agree"] is True
    assert tokens["transcript_tokens"] > tokens["tokens"]
    assert tokens["cold_vs_bare"] == pytest.approx(tokens["bare_s"] / tokens["cold_s"])
    assert tokens["warm_speedup"] == pytest.approx(tokens["cold_s"] / tokens["warm_s"])
    assert tokens["cold_pass"] is (tokens["cold_vs_bare"] >= 0.8)
    assert tokens["warm_pass"] is (tokens["warm_speedup"] >= 10.0)


def test_rss_measured_for_every_loaded_format(run: tuple[Path, dict[str, Any]]) -> None:
    foundation = run[1]["foundation"]
    loaded = {f for f, per in foundation["load"].items() if "error" not in per["200"]}
    assert set(foundation["rss"]) == loaded
    for fmt in loaded:
        entry = foundation["rss"][fmt]
        assert "error" not in entry, entry
        for key in RSS_NUMBERS:
            assert _is_number(entry[key]), (fmt, key)
        assert entry["ratio"] == pytest.approx(entry["peak_bytes"] / entry["file_bytes"])


def test_every_target_is_evaluated(run: tuple[Path, dict[str, Any]]) -> None:
    foundation = run[1]["foundation"]
    ids = [row["id"] for row in foundation["targets"]]
    expected = {f"load.{f}" for f in FORMATS} | {"tokens.cold", "tokens.warm"}
    expected |= {f"rss.{f}" for f in foundation["rss"]}
    assert set(ids) == expected and len(ids) == len(expected)
    for row in foundation["targets"]:
        assert isinstance(row["pass"], bool)
        assert row["measurement"] and row["figure"] and row["target"]
        if row["value"] is None:
            assert row["pass"] is False and row["figure"].startswith("error")


def test_markdown_table_from_results_file(
    run: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    out, results = run
    assert main(["--markdown", "--out", str(out)]) == 0
    table = capsys.readouterr().out
    rows = [ln for ln in table.splitlines() if ln.startswith("| ") and "measurement" not in ln]
    # Every section's rows, in the order the sections appear in the file.
    targets = [
        row
        for name, section in results.items()
        if name not in ("machine", "generated")
        for row in section["targets"]
    ]
    assert len(rows) == len(targets)
    for line, row in zip(rows, targets, strict=True):
        assert line.endswith("| pass |" if row["pass"] else "| **fail** |")
    assert "2025-07-04" in table


def test_markdown_without_results_fails_cleanly(tmp_path: Path) -> None:
    assert main(["--markdown", "--out", str(tmp_path / "none.json")]) == 1


def test_target_row_compares_in_the_right_direction() -> None:
    assert target_row("a", "m", "f", "t", 3.9, 4.0, at_most=True)["pass"] is True
    assert target_row("a", "m", "f", "t", 4.1, 4.0, at_most=True)["pass"] is False
    assert target_row("a", "m", "f", "t", 0.79, 0.8, at_most=False)["pass"] is False
    assert target_row("a", "m", "f", "t", None, 0.8, at_most=False)["pass"] is False


def test_render_markdown_escapes_and_marks_failures() -> None:
    row = target_row("x", "a | b", "1.0", "≤ 2", 3.0, 2.0, at_most=True)
    table = render_markdown({"s": {"targets": [row]}})
    assert "| a \\| b | 1.0 | ≤ 2 | **fail** |" in table


def test_merge_replaces_only_the_sections_run() -> None:
    old = {
        "machine": {"cpu_count": 1},
        "generated": "then",
        "engine": {"a": 1},
        "foundation": {"b": 1},
    }
    merged = merge_results(old, {"foundation": {"b": 2}}, machine={"cpu_count": 2}, generated="now")
    assert merged == {
        "machine": {"cpu_count": 2},
        "generated": "now",
        # A section kept from before carries the run it was kept under, as "no later than" that date.
        "engine": {
            "a": 1,
            MEASURED: {"generated": "then", "machine": {"cpu_count": 1}, "inherited": True},
        },
        "foundation": {"b": 2, MEASURED: {"generated": "now", "machine": {"cpu_count": 2}}},
    }
    # Merged again, each section keeps its own run.
    again = merge_results(merged, {"engine": {"a": 3}}, machine={"cpu_count": 4}, generated="later")
    assert again["foundation"][MEASURED] == {"generated": "now", "machine": {"cpu_count": 2}}
    assert again["engine"][MEASURED] == {"generated": "later", "machine": {"cpu_count": 4}}


def test_markdown_names_the_run_of_each_section_when_they_differ() -> None:
    row = target_row("x", "m", "1.0", "≤ 2", 1.0, 2.0, at_most=True)
    intel = {"cpu_count": 2, "cpu": "Intel", "python": "3.11.7", "platform": "p"}
    amd = {"cpu_count": 2, "cpu": "AMD", "python": "3.11.7", "platform": "p"}
    results = merge_results(
        {"machine": intel, "generated": "2026-11-25T00:00", "a": {"targets": [row]}},
        {"b": {"targets": [row]}},
        machine=amd,
        generated="2026-12-02T00:00",
    )
    table = render_markdown(results)
    assert "a: Measured no later than 2026-11-25 on 2 × Intel, Python 3.11.7 (p)." in table
    assert "b: Measured 2026-12-02 on 2 × AMD, Python 3.11.7 (p)." in table
    # One run for every section listed: the one sentence, as before.
    assert render_markdown(results, ["b"]).endswith(
        "\nMeasured 2026-12-02 on 2 × AMD, Python 3.11.7 (p).\n"
    )


def test_generators_are_deterministic_and_well_formed() -> None:
    conv = conversation(300)
    again = conversation(300)
    assert len(conv) == 300
    # Every tool call is answered, in order, and results only answer earlier calls.
    open_calls: set[str] = set()
    for m in conv.messages:
        open_calls |= {c.id for c in m.calls}
        if m.role == "tool":
            assert m.call is not None and m.call.id in open_calls
            open_calls.discard(m.call.id)
    assert any(m.role == "tool" for m in conv.messages)
    for fmt in FORMATS:
        data = render(conv, fmt)
        assert data == render(again, fmt), fmt
        if is_jsonl(Path(filename(fmt, 300))):
            docs = [orjson.loads(line) for line in data.splitlines()]
        else:
            docs = [orjson.loads(data)]
        assert all(isinstance(d, dict) for d in docs), fmt


def test_engine_section_measures_pipeline_and_boundary(run: tuple[Path, dict[str, Any]]) -> None:
    engine = run[1]["engine"]
    entry = engine["pipeline"]["200"]
    assert _is_number(entry["seconds"]) and entry["seconds"] > 0
    assert entry["status"] == "compacted"
    assert entry["after_tokens"] < entry["before_tokens"]
    boundary = engine["boundary"]
    assert boundary["moves"] == 200
    assert 0 < boundary["mean_ms"] <= boundary["max_ms"]
    ids = {t["id"]: t for t in engine["targets"]}
    assert set(ids) == {"engine.pipeline", "engine.boundary"}
    for row in ids.values():
        assert row["pass"] is (row["value"] <= row["limit"])


def test_ui_section_measures_the_inspector(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    argv = ["--quick", "--quiet", "--sizes", "200", "--section", "ui"]
    assert main([*argv, "--out", str(out), "--work", str(tmp_path / "work")]) == 0
    ui = orjson.loads(out.read_bytes())["ui"]
    assert "error" not in ui, ui.get("error")
    assert ui["messages"] == 200
    assert 0 < ui["first_paint_s"] < 60
    for key in ("boundary_move_ms", "scroll_page_ms", "full_frame_ms"):
        assert 0 < ui[key]["mean"] <= ui[key]["max"]
    assert {t["id"] for t in ui["targets"]} == {
        "ui.first_paint",
        "ui.boundary_move",
        "ui.scroll_page",
        "ui.detail_select",
    }
    detail = ui["detail_select"]
    assert "error" not in detail, detail.get("error")
    assert detail["tokens"] >= 70_000
    assert 0 < detail["select_ms"]["mean"] <= detail["select_ms"]["max"]


def test_preview_runs_each_repeat_in_a_fresh_interpreter(tmp_path: Path) -> None:
    """The preview figures are the best of repeats, each in its own interpreter: the
    first preview of a repeat finds no module-level memory of an earlier one."""
    from benchmarks.gen import ensure
    from benchmarks.speed import _preview

    (gen,) = ensure(tmp_path, [200], ["claude-code"])
    out = _preview(gen.path, 2)
    runs = out["runs"]
    assert out["repeats"] == len(runs) == 2
    assert out["messages"] == runs[0]["messages"] > 0
    assert out["first_s"] == min(r["first_s"] for r in runs) > 0
    assert out["after_move_s"] == min(r["after_move_s"] for r in runs) > 0
    # Two interpreters, neither of them this one.
    pids = {r["pid"] for r in runs}
    assert len(pids) == 2 and os.getpid() not in pids
