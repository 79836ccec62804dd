"""Scripted views of the app, shared by the snapshot tests and the screenshot script.

Each scene opens a transcript at a fixed size, waits until exact counts are in, and
drives the UI to a state worth looking at. Deterministic: no clock, no random input.
"""

from __future__ import annotations

import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from textual.pilot import Pilot
from textual.widgets import Input

from tjui.screens.commit import CommitDialog
from tjui.screens.error import ErrorDialog
from tjui.screens.help import HelpScreen
from tjui.screens.main import MainScreen
from tjui.screens.preview import PreviewScreen
from tjui.widgets.context_bar import ContextBar
from tjui.widgets.detail import DetailPane


async def wait_until(
    pilot: Pilot[None], predicate: Callable[[], bool], timeout: float = 30.0
) -> None:
    waited = 0.0
    while not predicate():
        await pilot.pause(0.05)
        waited += 0.05
        if waited > timeout:
            raise TimeoutError("the app did not reach the expected state")


async def loaded(pilot: Pilot[None]) -> MainScreen:
    def ready() -> bool:
        s = pilot.app.screen
        return (
            isinstance(s, MainScreen)
            and s.session is not None
            and s.session.tokens.counter != "rough"
            and not s.query_one(DetailPane).filling
            and (s.session.current_result is not None or not s.query_one(ContextBar).computing)
        )

    await wait_until(pilot, ready)
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, MainScreen)
    return screen


async def main_view(pilot: Pilot[None]) -> None:
    await loaded(pilot)


async def settled(pilot: Pilot[None]) -> None:
    """Wait until the bar's "after" figure is computed for the boundary on screen."""
    screen = pilot.app.screen
    assert isinstance(screen, MainScreen)
    await pilot.pause(0.3)  # the boundary's rest delay
    await wait_until(
        pilot,
        lambda: (
            screen.session is not None
            and (
                screen.session.current_result is not None
                or not screen.query_one(ContextBar).computing
            )
        ),
    )
    await pilot.pause()


async def boundary_moved(pilot: Pilot[None]) -> None:
    await loaded(pilot)
    await pilot.press("number_sign", "4", "enter")
    await pilot.pause()
    await pilot.press("left_curly_bracket", "left_square_bracket")
    await settled(pilot)


async def preview(pilot: Pilot[None]) -> None:
    screen = await loaded(pilot)
    assert screen.session is not None
    await pilot.press("number_sign", "4", "enter", "p")
    await wait_until(
        pilot,
        lambda: isinstance(pilot.app.screen, PreviewScreen) and pilot.app.screen.result is not None,
    )
    await pilot.pause()


async def commit_dialog(pilot: Pilot[None]) -> None:
    await loaded(pilot)
    await pilot.press("c")
    await wait_until(
        pilot,
        lambda: isinstance(pilot.app.screen, CommitDialog) and pilot.app.screen.plan is not None,
    )
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


async def help_screen(pilot: Pilot[None]) -> None:
    await loaded(pilot)
    await pilot.press("question_mark")
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))
    await pilot.pause()


async def error_dialog(pilot: Pilot[None]) -> None:
    await wait_until(pilot, lambda: isinstance(pilot.app.screen, ErrorDialog))
    # The path field has focus: a blinking cursor would make the picture timing-dependent.
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()


#: Where the commit scenes' copy of the demo lives: the dialog names the file, so the
#: picture must not depend on the checkout's path.
SCENE_DIR = Path(tempfile.gettempdir()) / "tjui-scenes"


def demo_copy() -> Path:
    """The bundled demo session at a fixed path (a copy, so a commit touches nothing)."""
    from tjui.paths import demo_session

    SCENE_DIR.mkdir(parents=True, exist_ok=True)
    path = SCENE_DIR / "demo.json"
    data = demo_session().read_bytes()
    if not path.exists() or path.read_bytes() != data:
        path.write_bytes(data)
    return path


@dataclass(frozen=True, slots=True)
class Scene:
    name: str
    size: tuple[int, int]
    run: Callable[[Pilot[None]], Awaitable[None]]
    #: None: the bundled demo session.
    transcript: Callable[[], Path] | None = None
    #: A Textual theme name; None: the default (dark) theme.
    theme: str | None = None

    async def play(self, pilot: Pilot[None]) -> None:
        if self.theme is not None:
            pilot.app.theme = self.theme
        await self.run(pilot)


LIGHT = "textual-light"
SIZES = {"160x48": (160, 48), "80x24": (80, 24)}

SCENES: tuple[Scene, ...] = (
    Scene("main-160x48", (160, 48), main_view),
    Scene("main-80x24", (80, 24), main_view),
    Scene("boundary-moved", (160, 48), boundary_moved),
    Scene("preview", (160, 48), preview),
    Scene("preview-80x24", (80, 24), preview),
    Scene("commit-160x48", (160, 48), commit_dialog, demo_copy),
    Scene("commit-80x24", (80, 24), commit_dialog, demo_copy),
    *(
        Scene(f"{name}-{size}-light", SIZES[size], run, source, LIGHT)
        for name, run, source in (
            ("main", main_view, None),
            ("preview", preview, None),
            ("commit", commit_dialog, demo_copy),
        )
        for size in SIZES
    ),
    Scene("help", (100, 40), help_screen),
)
