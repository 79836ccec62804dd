"""Failed background workers, handled in one place: the App.

Textual does not bubble ``Worker.StateChanged``, so each screen (and widget) that runs
workers mixes in :class:`ForwardWorkerErrors`, which hands every failure to
:meth:`tjui.app.TjuiApp.worker_failed`. There the screen may show the failure where it
happened (:class:`ShowsFailures`: the commit dialog's result line, the history status
line, the preview header); anything else opens the error dialog.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from textual.worker import Worker, WorkerState

__all__ = ["ForwardWorkerErrors", "ShowsFailures", "failure_text"]


def failure_text(error: BaseException | None, *plain: type[BaseException]) -> str:
    """What to show for ``error``: its own message when it is one of the ``plain``
    (expected, already readable) kinds, else prefixed with its type."""
    if plain and isinstance(error, plain):
        return str(error)
    return f"{type(error).__name__}: {error}"


@runtime_checkable
class ShowsFailures(Protocol):
    """A screen that shows (some of) its workers' failures itself."""

    def show_failure(self, worker: Worker[Any]) -> bool:
        """Show ``worker``'s failure; False lets the App open the error dialog."""
        ...


class ForwardWorkerErrors:
    """Mixed into a screen or widget: its failed workers go to the App's one handler."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.state is not WorkerState.ERROR:
            return
        from tjui.app import TjuiApp  # here: tjui.app imports the screens

        app = event.worker.node.app
        if isinstance(app, TjuiApp):
            app.worker_failed(event.worker)
        elif isinstance(self, ShowsFailures):  # hosted by another app (a test's)
            self.show_failure(event.worker)
