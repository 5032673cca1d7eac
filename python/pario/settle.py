"""The settle step before each launch of a sweep: no run pays for the previous one's I/O.

1. sync(): the kernel writes back every dirty page, so the writeback of the previous run's
   data (and its file system journal) does not land inside the next run's timing.
2. Drop the page cache of the previous run's files. Method `fadvise` (the default):
   posix_fadvise(POSIX_FADV_DONTNEED) on every file left in the previous run's scratch
   directory; once synced the pages are clean and the kernel frees them. It needs no
   privilege and touches only the sweep's own files: on a shared machine it leaves other
   users' cache (and the MPI libraries the next launch loads) alone. pario-bench removes
   its test files at the end of a run unless --keep, which frees their pages too; the
   fadvise covers the files a run kept or left behind when it was killed. Method
   `drop-caches` writes 1 to /proc/sys/vm/drop_caches (root only): the whole page cache,
   for a dedicated machine where reads must start cold. `none` skips this step.
3. A short pause (default 1 s), so that the write-back the sync started and the processes of
   the previous launch are gone before the next one starts.
"""

from __future__ import annotations

import os
import time
from typing import Callable, Optional

SETTLE_METHODS = ("fadvise", "drop-caches", "none")
DEFAULT_PAUSE = 1.0
DROP_CACHES = "/proc/sys/vm/drop_caches"


class SettleError(RuntimeError):
    pass


def do_sync() -> None:
    """sync(2): every dirty page of the machine written back (looked up at call time, so tests
    can replace it)."""
    os.sync()


def fadvise_tree(directory: Optional[str]) -> int:
    """posix_fadvise(DONTNEED) on every regular file under directory; returns the file count."""
    if not directory or not os.path.isdir(directory) or not hasattr(os, "posix_fadvise"):
        return 0
    count = 0
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            try:
                fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            except OSError:
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            except OSError:
                pass
            finally:
                os.close(fd)
    return count


def can_drop_caches() -> bool:
    return os.access(DROP_CACHES, os.W_OK)


class Settler:
    """Callable: settle(previous_scratch_dir) before a launch (None before the first)."""

    def __init__(self, method: str = "fadvise", pause: float = DEFAULT_PAUSE,
                 sync: Optional[Callable[[], None]] = None, sleep: Callable[[float], None] = time.sleep):
        if method not in SETTLE_METHODS:
            raise SettleError(f"unknown settle method {method!r} (choose from {', '.join(SETTLE_METHODS)})")
        if method == "drop-caches" and not can_drop_caches():
            raise SettleError(f"--settle drop-caches needs write access to {DROP_CACHES} (root); "
                              "use --settle fadvise")
        if pause < 0:
            raise SettleError(f"bad settle pause {pause}")
        self.method, self.pause, self._sleep = method, pause, sleep
        self._sync = sync or (lambda: do_sync())

    def __call__(self, previous: Optional[str]) -> None:
        if self.method == "none":
            if self.pause:
                self._sleep(self.pause)
            return
        self._sync()
        if self.method == "fadvise":
            fadvise_tree(previous)
        else:
            with open(DROP_CACHES, "w", encoding="ascii") as f:
                f.write("1\n")
        if self.pause:
            self._sleep(self.pause)
