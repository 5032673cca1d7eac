"""The sweep's progress on the terminal: a rich progress bar on stderr (the run in progress, a
bar, runs done of the total, time elapsed, the estimated time left) above one plain line per
finished run on stdout.

The bar is drawn only when stderr is a terminal and --quiet was not given; in a pipe or a log
file there is no bar, only the per-run lines (none with --quiet). The time left is the runner's
estimate (runner.estimate_left: the finished runs of the same suite and rank count), counted
down between runs. The bar is transient: it goes when the sweep ends or is interrupted, and
rich's refresh thread stops with it.
"""

from __future__ import annotations

import time
from typing import Optional, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn
from rich.text import Text


def fmt_duration(seconds: float) -> str:
    """h:mm:ss, e.g. 0:01:23."""
    seconds = max(int(round(seconds)), 0)
    return f"{seconds // 3600:d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


def _isatty(stream: TextIO) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):   # no isatty, or closed
        return False


class _TimeLeft(ProgressColumn):
    """The runner's estimate of the time left, counted down since it was made."""

    def render(self, task) -> Text:
        left = task.fields.get("left")
        if left is None:
            return Text("ETA ?:??:??")
        return Text("ETA " + fmt_duration(left - (time.monotonic() - task.fields["at"])))


class SweepProgress:
    """Context manager: the bar (when shown) lives between __enter__ and __exit__."""

    def __init__(self, total: int, stream: TextIO, bar_stream: TextIO, quiet: bool = False):
        self.quiet = quiet
        self.stream = stream
        self.progress: Optional[Progress] = None
        if not quiet and _isatty(bar_stream):
            console = Console(file=bar_stream, force_terminal=True, highlight=False, emoji=False)
            self.progress = Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                                     MofNCompleteColumn(), TimeElapsedColumn(), _TimeLeft(),
                                     console=console, transient=True, redirect_stdout=False,
                                     redirect_stderr=False)
            self.task = self.progress.add_task("", total=total, left=None, at=time.monotonic())
        # a line on the terminal the bar is drawn on goes above the bar, through rich
        self._through_bar = self.progress is not None and _isatty(stream)

    def __enter__(self) -> "SweepProgress":
        if self.progress is not None:
            self.progress.start()
        return self

    def __exit__(self, *exc) -> bool:
        if self.progress is not None:
            self.progress.stop()
        return False

    def running(self, label: str, left: Optional[float]) -> None:
        """A run starts; `left`: the estimated seconds left, this run included (None: unknown)."""
        if self.progress is not None:
            self.progress.update(self.task, description=label, left=left, at=time.monotonic(), refresh=True)

    def finished(self, line: str, left: Optional[float]) -> None:
        """A run ended: its line, and the estimate of the runs still to go."""
        if self.progress is not None:
            self.progress.update(self.task, advance=1, left=left, at=time.monotonic(), refresh=True)
        if self.quiet:
            return
        if self._through_bar:
            self.progress.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            self.stream.write(line + "\n")
            self.stream.flush()
