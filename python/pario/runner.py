"""Running a planned sweep: launch each pario-bench run, collect its JSON lines, log it.

A run that fails (non-zero exit, crash, timeout, no output, missing binary) is recorded in
runs.jsonl with its reason and the sweep goes on. Each run writes its measurements to a
file of its own, which is then appended to DIR/results.jsonl, so a run killed mid-write
cannot corrupt another run's lines. Progress is one plain line per run.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Callable, List, Optional, TextIO

from .benchargs import bench_argv
from .launch import Launcher
from .plan import PlannedRun
from .results import RESULTS_FILE, ResultError, RunRecord, append_run, parse_line

LOG_DIR = "logs"
SCRATCH_DIR = "scratch"


def build_dir_default() -> str:
    return os.environ.get("PARIO_BUILD_DIR") or "build"


def bench_path(build_dir: str, mpi: str) -> str:
    return os.path.join(build_dir, mpi, "bench", "pario-bench")


def lib_path(build_dir: str, mpi: str) -> str:
    return os.path.join(build_dir, mpi, "src", "libpario.so")


def fmt_duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 60:d}:{seconds % 60:02d}"


@dataclass
class SweepOutcome:
    runs: List[RunRecord]
    elapsed: float

    def count(self, status: str) -> int:
        return sum(1 for r in self.runs if r.status == status)


class Runner:
    def __init__(self, out_dir: str, build_dir: str, launcher: Launcher, timeout: float,
                 stream: Optional[TextIO] = None, clock: Callable[[], float] = time.monotonic):
        self.out_dir = os.path.abspath(out_dir)
        self.build_dir = os.path.abspath(build_dir)
        self.launcher = launcher
        self.timeout = timeout
        self.stream = stream or sys.stdout
        self.clock = clock
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    # -- one run ---------------------------------------------------------------------------
    def _missing(self, run: PlannedRun) -> Optional[str]:
        bench = bench_path(self.build_dir, run.mpi)
        if not os.access(bench, os.X_OK):
            return f"pario-bench not built for {run.mpi} ({bench})"
        if run.impl == "pario" and not os.path.exists(lib_path(self.build_dir, run.mpi)):
            return f"libpario.so not built for {run.mpi} ({lib_path(self.build_dir, run.mpi)})"
        return None

    def command(self, run: PlannedRun, raw_file: str, workdir: str) -> List[str]:
        program = bench_argv(bench_path(self.build_dir, run.mpi), run.suite, run.case, raw_file, workdir)
        preload = lib_path(self.build_dir, run.mpi) if run.impl == "pario" else None
        return self.launcher.command(run.mpi, run.ranks, program, preload)

    def execute(self, run: PlannedRun) -> RunRecord:
        logs = os.path.join(self.out_dir, LOG_DIR)
        os.makedirs(logs, exist_ok=True)
        raw_file = os.path.join(logs, run.slug + ".jsonl")
        workdir = os.path.join(self.out_dir, SCRATCH_DIR, run.slug)
        log = os.path.join(logs, run.slug + ".log")
        rec = RunRecord(index=run.index, suite=run.suite, mpi=run.mpi, impl=run.impl,
                        ranks=run.ranks, case=run.case, command=[],
                        log=os.path.relpath(log, self.out_dir))
        missing = self._missing(run)
        if missing:
            rec.status, rec.message, rec.log = "skipped", missing, ""
            return rec
        rec.command = self.command(run, raw_file, workdir)
        if os.path.exists(raw_file):
            os.remove(raw_file)
        os.makedirs(workdir, exist_ok=True)
        start = self.clock()
        timed_out = False
        with open(log, "w", encoding="utf-8") as logf:
            logf.write("$ " + " ".join(rec.command) + "\n")
            logf.flush()
            try:
                proc = subprocess.Popen(rec.command, stdout=logf, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, env=self.launcher.env(), cwd=workdir,
                                        start_new_session=True)
            except OSError as e:
                rec.status, rec.message = "failed", f"cannot start launcher: {e}"
                rec.elapsed = self.clock() - start
                shutil.rmtree(workdir, ignore_errors=True)
                return rec
            try:
                rec.returncode = proc.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
                _kill_group(proc)
                rec.returncode = proc.returncode
        rec.elapsed = self.clock() - start
        shutil.rmtree(workdir, ignore_errors=True)
        self._collect(rec, raw_file, log, timed_out)
        return rec

    def _collect(self, rec: RunRecord, raw_file: str, log: str, timed_out: bool) -> None:
        lines: List[str] = []
        if os.path.exists(raw_file):
            with open(raw_file, encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
            os.remove(raw_file)
        good, kept, problems = [], [], []
        for n, line in enumerate(lines, 1):
            try:
                m = parse_line(line)
            except ResultError as e:
                problems.append(f"line {n}: {e}")
                continue
            if m is not None:
                good.append(m)
                kept.append(line.rstrip("\n") + "\n")
        if kept:
            with open(os.path.join(self.out_dir, RESULTS_FILE), "a", encoding="utf-8") as f:
                f.writelines(kept)
        rec.measurements = len(good)
        unverified = [m for m in good if m.verified is False]
        rec.unverified = len(unverified)
        failed = [m for m in good if m.status == "failed"]
        if timed_out:
            rec.status, rec.message = "timeout", f"killed after {self.timeout:g} s"
        elif rec.returncode != 0:
            rec.status = "failed"
            if unverified:
                rec.message = f"verification failed ({len(unverified)} measurement(s))"
            elif failed and failed[0].error:
                rec.message = failed[0].error
            else:
                rec.message = f"exit status {rec.returncode}: {_last_line(log)}"
        elif not good:
            rec.status, rec.message = "failed", "no measurements written: " + _last_line(log)
        else:
            rec.status = "ok"
            if failed:
                rec.message = f"{len(failed)} measurement(s) failed"
        if problems:
            rec.message = (rec.message + "; " if rec.message else "") + f"{len(problems)} bad result line(s)"
        rec.message = _one_line(rec.message)

    # -- the sweep -------------------------------------------------------------------------
    def run_all(self, runs: List[PlannedRun]) -> SweepOutcome:
        os.makedirs(self.out_dir, exist_ok=True)
        t0 = self.clock()
        records: List[RunRecord] = []
        width = len(str(len(runs)))
        for run in runs:
            prefix = f"[{run.index:>{width}}/{len(runs)}] {fmt_duration(self.clock() - t0):>5}  {run.label:<34}"
            if self.tty:
                self.stream.write(prefix + " running\r")
                self.stream.flush()
            rec = self.execute(run)
            append_run(self.out_dir, rec)
            records.append(rec)
            detail = f"{rec.measurements} result(s)" if rec.status == "ok" else rec.message
            line = f"{prefix} {rec.status:<7} {rec.elapsed:6.1f}s  {detail}"
            if self.tty:
                line = line.ljust(len(prefix) + 9)
            self.stream.write(line + "\n")
            self.stream.flush()
        shutil.rmtree(os.path.join(self.out_dir, SCRATCH_DIR), ignore_errors=True)
        return SweepOutcome(records, self.clock() - t0)


def _kill_group(proc: subprocess.Popen) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=5)
            return
        except subprocess.TimeoutExpired:
            continue


def _one_line(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _last_line(log: str) -> str:
    try:
        with open(log, encoding="utf-8", errors="replace") as f:
            lines = [ln.strip() for ln in f if ln.strip() and not ln.startswith("$ ")]
    except OSError:
        return ""
    return lines[-1][:200] if lines else "(no output)"
