"""The `pario` command: `pario bench run` sweeps pario-bench, `pario bench report` redraws.

Exit status of `pario bench run`: 0 when the sweep ran (runs that crashed, timed out or
were unsupported are reported but do not fail the command, so one broken configuration
does not hide the rest); 1 when a pario measurement failed its data verification (wrong
bytes in the file); 2 on a usage error or when nothing ran at all (no pario-bench found,
or no run wrote a single measurement); 130 / 143 when stopped by SIGINT (Ctrl-C) / SIGTERM,
after stopping the MPI job and removing its scratch files. A verification failure of the
native MPI-IO is a finding about that MPI library, not about this run: it is reported, not an
error. Errors are one line, `pario: error: ...`, never a traceback (PARIO_DEBUG=1 shows the
traceback of an internal error, exit status 3).

Here: the parser and `pario bench run|report`; cli_trace.py has `pario trace`, cli_tools.py
`pario bench remote` and `pario checksum`, cliargs.py what they share.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import shlex
import shutil
import signal
import socket
import sys
from typing import List, Optional

from . import FLAVOURS, IMPLS, MPIS, SUITES, __version__
from .cli_tools import cmd_checksum, cmd_remote
from .cli_trace import _trace_parsers, cmd_trace
from .cliargs import (EXIT_INTERNAL, EXIT_NOTHING, EXIT_OK, EXIT_VERIFY, UsageError, _error, _Parser, _pause, _seconds,
                      _tool_args)
from .launch import Launcher, LauncherError
from .locate import bench_version, find_bench
from .plan import PlanError, default_repeat, parse_choice_list, parse_ranks, parse_suites, plan_sweep
from .results import META_FILE, REPORT_FILE, RESULTS_FILE, RUNS_FILE, load_results, save_meta
from .progress import fmt_duration
from .runner import LOG_DIR, SCRATCH_DIR, Interrupted, Runner, bench_path, build_dir_default, lib_path
from . import settle
from .settle import SETTLE_METHODS, SettleError, Settler
from .summary import SUMMARY_CSV, SUMMARY_JSON
from .headline import headline_text, summary_text
from .tables import compare, group

def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="pario",
        description="pario: run MPI-IO benchmark sweeps (native MPI-IO against pario) and report them.")
    p.add_argument("--version", action="store_true",
                   help="print pario's version and, for each pario-bench found, the MPI it was built for")
    p.add_argument("--build-dir", metavar="DIR", dest="global_build_dir", default=None,
                   help="build tree to look for pario-bench in (default $PARIO_BUILD_DIR or ./build)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    bench = sub.add_parser("bench", help="benchmark sweeps and reports",
                           description="Run pario-bench sweeps and build reports from their results.")
    bsub = bench.add_subparsers(dest="bench_command", metavar="SUBCOMMAND", parser_class=_Parser)
    bsub.required = True

    run = bsub.add_parser(
        "run", help="run a sweep and write DIR/report.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the benchmark suites over MPI flavours, implementations (native MPI-IO, "
                    "pario) and rank counts; store every result in DIR and write DIR/report.html, "
                    "DIR/summary.csv and DIR/summary.json.",
        epilog="suites: " + ", ".join(SUITES) + "\n\n"
               "pario-bench is looked for in the build tree (--build-dir), then in $PARIO_PREFIX\n"
               "and PATH (pario-bench-<mpi>, pario-bench.<mpi>, lib/pario/<mpi>/bin/pario-bench).\n\n"
               "exit status: 0 sweep ran (failed runs are listed, not fatal); 1 a pario\n"
               "measurement failed data verification; 2 usage error or nothing ran;\n"
               "130/143 stopped by Ctrl-C/SIGTERM (the MPI job is stopped, scratch files removed).\n"
               "(Native MPI-IO verification failures are reported as findings, exit 0.)\n\n"
               "examples:\n"
               "  pario bench run all --quick\n"
               "  pario bench run cfs,sharedfp --ranks 1,2,4,8 --mpi mpich\n"
               "  pario bench run noncontig --launcher 'srun -n {ranks}' --mpi openmpi")
    run.add_argument("suite", metavar="SUITE", help="a suite, a comma-separated list, or 'all'")
    run.add_argument("--quick", action="store_true", help="tiny sizes: `all --quick` takes a few minutes per round on 2 cores (a smoke test: "
                          "its figures are too short to quote)")
    run.add_argument("--ranks", metavar="LIST", help="rank counts, e.g. 1,2,4 (default 1,2,4)")
    run.add_argument("--mpi", metavar="LIST", default=",".join(MPIS),
                     help="MPI flavours, any of " + ",".join(FLAVOURS) + " (default %(default)s)")
    run.add_argument("--impl", metavar="LIST", default=",".join(IMPLS),
                     help="implementations (default %(default)s)")
    run.add_argument("--out", metavar="DIR", help="results directory (default results/bench-<UTC time>)")
    run.add_argument("--launcher", metavar="CMD",
                     help="launcher template with {ranks} (and optionally {mpi}), e.g. 'srun -n {ranks}'; "
                          "pario then reaches the ranks as LD_PRELOAD in their environment. "
                          "Default: each flavour's launcher as scripts/mpirun.sh")
    run.add_argument("--build-dir", metavar="DIR", default=None,
                     help="where <flavour>/bench/pario-bench and <flavour>/src/libpario.so are "
                          "(default $PARIO_BUILD_DIR or ./build); installed ones are found too")
    run.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                     help="kill a run after this long (default 60 with --quick, else 1800)")
    run.add_argument("--append", action="store_true",
                     help="add to the results already in DIR instead of starting afresh")
    run.add_argument("--dry-run", action="store_true", help="print the planned commands and stop")
    run.add_argument("--quiet", action="store_true",
                     help="no progress bar (drawn on stderr when it is a terminal) and no line per run; "
                          "warnings and the summary stay")
    run.add_argument("--repeat", type=int, metavar="N", default=None,
                     help="rounds per configuration, native and pario launched alternately "
                          "(native, pario, native, ...); figures are medians with min-max "
                          "(default 5 when both implementations run, else 1)")
    run.add_argument("--settle", metavar="METHOD", default="fadvise", choices=SETTLE_METHODS,
                     help="before each launch: sync, then drop the previous run's page cache with "
                          "posix_fadvise DONTNEED on its files (fadvise, default), or the whole cache "
                          "through /proc/sys/vm/drop_caches (drop-caches, root only); none: pause only")
    run.add_argument("--settle-pause", type=_pause, metavar="SECONDS", default=settle.DEFAULT_PAUSE,
                     help="pause after the settle step (default %(default)g)")

    rem = bsub.add_parser(
        "remote", help="remote I/O experiments (seed 004): pario-server against XRootD and a TCP copy",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Start pario-server (and XRootD, iperf3) on this machine, run seed 004's remote I/O "
                    "experiments through pario-bench, and write DIR/remote.jsonl, DIR/remote-summary.json "
                    "and DIR/remote.html. Every figure is the median of --repeat runs, systems alternating.",
        epilog="experiments: seq (large sequential write/read vs XRootD and a TCP copy), req4k (4 KiB\n"
               "requests one at a time vs pipelined), vec32 (32-byte segments per request), btio (BTIO\n"
               "over an emulated 100 ms / 20 MB/s link: staging vs remote), scale (rate against clients\n"
               "and servers, with and without a forwarder)\n\n"
               "examples:\n  pario bench remote --quick\n  pario bench remote --experiments seq,req4k --repeat 7")
    rem.add_argument("--experiments", metavar="LIST", default="all", help="comma-separated, or all (default)")
    rem.add_argument("--quick", action="store_true", help="small sizes: checks that everything works")
    rem.add_argument("--repeat", type=int, default=5, metavar="N", help="runs per figure (default 5)")
    _tool_args(rem, 900.0, "kill a pario-bench run after this long", out="remote")
    _trace_parsers(sub)
    ck = sub.add_parser(
        "checksum", help="Adler-32 or CRC32C of files, computed by pario-server for x-rio:// names",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Print VALUE  NAME per file (8 hex digits), like xrdadler32. For an x-rio://host:port/path "
                    "name the server sums the file and only the value travels; a local path is read here. "
                    "Compare the two to check a transfer.",
        epilog="examples:\n  pario checksum x-rio://io1:7800/run/out.h5 --secret-file ~/.pario-secret\n"
               "  pario checksum --algo crc32c out.h5")
    ck.add_argument("files", nargs="+", metavar="FILE", help="a path or x-rio://host:port/path")
    ck.add_argument("--algo", default="adler32", choices=("adler32", "crc32c"), help="default adler32")
    ck.add_argument("--secret-file", metavar="F", help="the server's secret (default $PARIO_RIO_SECRET_FILE)")
    _tool_args(ck, 3600.0, "give up after this long")

    rep = bsub.add_parser("report", help="rebuild DIR/report.html from stored results",
                          description="Rebuild DIR/report.html, its figures (PNG and SVG), DIR/summary.csv "
                                      "and DIR/summary.json from DIR/results.jsonl.")
    rep.add_argument("dir", metavar="DIR")
    return p


def version_lines(build_dir: Optional[str] = None) -> List[str]:
    """`pario --version`: pario's version, then per MPI flavour the pario-bench found and the MPI
    it was built for (from `pario-bench --version`, when that pario-bench has the option)."""
    build_dir = build_dir or build_dir_default()
    lines = [f"pario {__version__}"]
    env = Launcher().env()
    found_any = False
    for mpi in FLAVOURS:
        found = find_bench(mpi, build_dir)
        if found is None:
            continue
        found_any = True
        said = bench_version(found.bench, env=env)
        lines.append(f"{mpi}: " + (said or "pario-bench (the MPI it was built for is unknown: this "
                                   "pario-bench has no --version option)") + f"  [{found.bench}]")
    if not found_any:
        lines.append(f"no pario-bench found (looked in {os.path.abspath(build_dir)}, $PARIO_PREFIX and PATH)")
    return lines


def _default_out() -> str:
    return os.path.join("results", "bench-" + _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S"))


def _storage(path: str) -> str:
    """File system type of the mount holding `path`, from /proc/mounts."""
    real = os.path.realpath(path)
    best, fstype, dev = "", "?", "?"
    try:
        with open("/proc/mounts", encoding="utf-8") as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3:
                    continue
                mnt = parts[1].replace("\\040", " ")
                if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
                    best, fstype, dev = mnt, parts[2], parts[0]
    except OSError:
        pass
    return f"{real}/scratch on {fstype} ({dev} mounted at {best or '?'})"


def _clear(out: str) -> None:
    for name in (RESULTS_FILE, RUNS_FILE, META_FILE, REPORT_FILE, SUMMARY_CSV, SUMMARY_JSON):
        p = os.path.join(out, name)
        if os.path.exists(p):
            os.remove(p)
    shutil.rmtree(os.path.join(out, LOG_DIR), ignore_errors=True)
    for name in os.listdir(out):  # only the figures a report draws
        if name.endswith((".png", ".svg")) and name.split("-")[0] in SUITES:
            os.remove(os.path.join(out, name))


def _print_summary(directory: str, report: str, stream=None) -> None:
    stream = stream or sys.stdout
    ms, _ = load_results(directory)
    comparisons = compare(group(ms))
    print("", file=stream)
    if comparisons:
        print("pario against the native MPI-IO, per suite (storage regime named):", file=stream)
        print(headline_text(comparisons), file=stream)
        print("", file=stream)
    print(summary_text(comparisons), file=stream)
    print("pario/native: bandwidth ratio (above 1: pario faster); for overlap the ratio of "
          "nonblocking/blocking ratios (below 1: pario overlaps better). Geometric mean over configurations.",
          file=stream)
    print(f"\nreport: {report}", file=stream)
    print(f"summary: {os.path.join(directory, SUMMARY_CSV)}, {os.path.join(directory, SUMMARY_JSON)}",
          file=stream)


def cmd_run(args) -> int:
    try:
        suites = parse_suites(args.suite)
        mpis = parse_choice_list(args.mpi, FLAVOURS, "MPI flavour")
        impls = parse_choice_list(args.impl, IMPLS, "implementation")
        ranks = parse_ranks(args.ranks) if args.ranks else None
        launcher = Launcher(args.launcher)
    except (PlanError, LauncherError) as e:
        return _error(str(e))
    build_dir = args.build_dir or args.global_build_dir or build_dir_default()
    out = args.out or _default_out()
    if os.path.exists(out) and not os.path.isdir(out):
        return _error(f"--out {out}: exists and is not a directory")
    timeout = args.timeout if args.timeout else (60.0 if args.quick else 1800.0)
    repeat = args.repeat if args.repeat is not None else default_repeat(impls)
    if not 1 <= repeat <= 100:
        return _error(f"--repeat {repeat}: give 1 to 100 rounds")
    try:
        settler = Settler(args.settle, args.settle_pause)
    except SettleError as e:
        return _error(str(e))
    runs = plan_sweep(suites, mpis, impls, ranks, quick=args.quick, repeat=repeat)
    installs = {m: find_bench(m, build_dir) for m in mpis}
    runner = Runner(out, build_dir, launcher, timeout, installs=installs, settle=settler, quiet=args.quiet)

    if args.dry_run:
        for r in runs:
            cmd = runner.command(r, os.path.join(runner.out_dir, LOG_DIR, r.slug + ".jsonl"),
                                 os.path.join(runner.out_dir, SCRATCH_DIR, r.slug))
            print(f"[{r.index}/{len(runs)}] " + " ".join(shlex.quote(c) for c in cmd))
        return EXIT_OK

    for m in mpis:
        found = installs[m]
        if found is None:
            print(f"pario: warning: no pario-bench for {m} (not at {bench_path(build_dir, m)}, nor in "
                  "$PARIO_PREFIX or PATH); its runs are skipped", file=sys.stderr)
        elif "pario" in impls and not found.lib:
            print(f"pario: warning: no libpario.so for {m} (not at {lib_path(build_dir, m)}, nor beside "
                  f"{found.bench}); its pario runs are skipped", file=sys.stderr)
    if not any(installs.values()):
        return _error(f"nothing to run: pario-bench is not built under {os.path.abspath(build_dir)} nor "
                      "installed ($PARIO_PREFIX, PATH); run `make build`, or give --build-dir")

    try:
        os.makedirs(out, exist_ok=True)
        if not args.append and os.path.exists(os.path.join(out, RESULTS_FILE)):
            print(f"pario: replacing the results in {out} (use --append to add to them)")
            _clear(out)
    except OSError as e:
        return _error(f"cannot use --out {out}: {e.strerror or e}")
    started = _dt.datetime.now(_dt.timezone.utc)
    meta = {
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "pario " + " ".join(shlex.quote(a) for a in args.argv),
        "host": socket.gethostname(), "cpus": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}, Python {platform.python_version()}",
        "storage": _storage(out), "launcher": launcher.describe(),
        "build_dir": os.path.abspath(build_dir), "quick": args.quick,
        "benches": {m: f.bench for m, f in installs.items() if f},
        "suites": suites, "mpis": mpis, "impls": impls, "ranks": ranks,
        "repeat": repeat, "settle": {"method": args.settle, "pause": args.settle_pause},
    }
    save_meta(out, meta)
    print(f"pario bench: {len(runs)} runs of {', '.join(suites)} on {', '.join(mpis)} "
          f"({', '.join(impls)}){' quick' if args.quick else ''}, {repeat} round(s) per configuration"
          f"{', implementations alternating' if repeat > 1 and len(impls) > 1 else ''}; results in {out}",
          flush=True)
    try:
        outcome = runner.run_all(runs)
    except Interrupted as e:
        # the runner has stopped the MPI job's process group and removed the scratch files
        shutil.rmtree(os.path.join(runner.out_dir, SCRATCH_DIR), ignore_errors=True)
        done = len(runner.records)
        meta["interrupted"] = f"{e.name} during run {done + 1} of {len(runs)}"
        meta["finished"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            save_meta(out, meta)
        except OSError:
            pass
        sys.stdout.flush()
        print(f"pario: interrupted by {e.name}: stopped the MPI job and removed its scratch files; "
              f"{done} of {len(runs)} runs done, their results are in {out} "
              f"(`pario bench report {out}` draws them)", file=sys.stderr)
        return 128 + e.signum
    meta["finished"] = _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta["elapsed"] = fmt_duration(outcome.elapsed)
    save_meta(out, meta)

    from .report import build_report  # matplotlib loads only when a report is drawn
    report = build_report(out)
    print(f"\n{len(runs)} runs in {fmt_duration(outcome.elapsed)}: {outcome.count('ok')} ok, "
          f"{outcome.count('failed')} failed, {outcome.count('timeout')} timed out, "
          f"{outcome.count('skipped')} skipped")
    bad = [r for r in outcome.runs if r.status != "ok"]
    for r in bad[:15]:
        print(f"  [{r.index}] {r.suite} {r.mpi} {r.impl} np={r.ranks}: {r.status}: {r.message}"
              + (f" (log: {os.path.join(out, r.log)})" if r.log else ""))
    if len(bad) > 15:
        print(f"  ... and {len(bad) - 15} more (see the report)")
    _print_summary(out, report)

    native_bad = sum(r.unverified for r in outcome.runs if r.impl != "pario")
    pario_bad = sum(r.unverified for r in outcome.runs if r.impl == "pario")
    if native_bad:
        print(f"note: the native MPI-IO failed data verification in {native_bad} measurement(s): "
              "a finding about the MPI library, listed in the report")
    if pario_bad:
        print(f"pario: pario FAILED data verification in {pario_bad} measurement(s) (see the report)",
              file=sys.stderr)
        return EXIT_VERIFY
    if sum(r.measurements for r in outcome.runs) == 0:
        print("pario: error: no run wrote any measurement", file=sys.stderr)
        return EXIT_NOTHING
    return EXIT_OK


def cmd_report(args) -> int:
    directory = args.dir
    if not os.path.exists(directory):
        return _error(f"no {RESULTS_FILE} in {directory}: no such directory")
    if not os.path.isdir(directory):
        return _error(f"{directory}: not a directory (give the results directory, which holds {RESULTS_FILE})")
    results = os.path.join(directory, RESULTS_FILE)
    if not os.path.exists(results):
        return _error(f"no {RESULTS_FILE} in {directory}")
    try:
        ms, problems = load_results(directory)
    except OSError as e:
        return _error(f"cannot read {results}: {e.strerror or e}")
    for p in problems[:10]:
        print(f"pario: warning: skipped {p}", file=sys.stderr)
    from .report import build_report
    try:
        report = build_report(directory, ms, problems)
    except OSError as e:
        return _error(f"cannot write the report in {directory}: {e.strerror or e}"
                      + (f" ({e.filename})" if e.filename else ""))
    _print_summary(directory, report)
    return EXIT_OK


class _Signals:
    """SIGINT and SIGTERM raise Interrupted in the main thread, once: a second signal while the
    first is being handled (the MPI job being stopped) is ignored, so the clean-up completes."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.saved = {}
        self.fired = False

    def _handler(self, signum, frame):
        if self.fired:
            return
        self.fired = True
        raise Interrupted(signum)

    def __enter__(self):
        for sig in self.SIGNALS:
            try:
                self.saved[sig] = signal.signal(sig, self._handler)
            except (ValueError, OSError):  # not the main thread
                pass
        return self

    def __exit__(self, *exc):
        for sig, old in self.saved.items():
            signal.signal(sig, old)
        return False


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    with _Signals():
        try:
            try:
                args = _parser().parse_args(argv)
            except SystemExit as e:  # --help
                return e.code if isinstance(e.code, int) else EXIT_OK
            args.argv = argv
            if args.version:
                print("\n".join(version_lines(args.global_build_dir)))
                return EXIT_OK
            if not args.command:
                raise UsageError("a command is required: `pario bench run ...`, `pario bench report DIR` or "
                                 "`pario trace merge|stats|report DIR`, `pario trace experiment seed001` or `pario checksum FILE...` (see `pario --help`)")
            return _dispatch(args)
        except UsageError as e:
            return _error(str(e))
        except BrokenPipeError:  # output piped into head & co.
            try:
                sys.stdout = open(os.devnull, "w")
            except OSError:
                pass
            return EXIT_OK
        except KeyboardInterrupt as e:
            signum = e.signum if isinstance(e, Interrupted) else signal.SIGINT
            name = e.name if isinstance(e, Interrupted) else "SIGINT"
            print(f"pario: interrupted by {name}", file=sys.stderr)
            return 128 + signum
        except OSError as e:
            where = f" ({e.filename})" if getattr(e, "filename", None) else ""
            return _error(f"{e.strerror or e}{where}")
        except Exception as e:  # a bug: one line, the traceback on request
            if os.environ.get("PARIO_DEBUG"):
                raise
            print(f"pario: internal error: {type(e).__name__}: {e} (PARIO_DEBUG=1 shows the traceback)",
                  file=sys.stderr)
            return EXIT_INTERNAL


def _dispatch(args) -> int:
    if args.command == "trace":
        return cmd_trace(args)
    if args.command == "checksum":
        return cmd_checksum(args)
    if args.command == "bench":
        if args.bench_command == "run":
            return cmd_run(args)
        if args.bench_command == "remote":
            return cmd_remote(args)
        if args.bench_command == "report":
            return cmd_report(args)
    return EXIT_NOTHING  # pragma: no cover - argparse enforces a subcommand


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
