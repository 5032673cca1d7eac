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
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from typing import List, Optional

from . import FLAVOURS, IMPLS, MPIS, SUITES, __version__
from .launch import Launcher, LauncherError
from .locate import bench_version, find_bench, find_checksum, find_server
from .plan import PlanError, default_repeat, parse_choice_list, parse_ranks, parse_suites, plan_sweep
from .results import META_FILE, REPORT_FILE, RESULTS_FILE, RUNS_FILE, load_results, save_meta
from .runner import (LOG_DIR, SCRATCH_DIR, Interrupted, Runner, bench_path, build_dir_default, fmt_duration,
                     lib_path)
from . import settle
from .settle import SETTLE_METHODS, SettleError, Settler
from .summary import SUMMARY_CSV, SUMMARY_JSON
from .tables import compare, group, headline_text, summary_text

EXIT_OK, EXIT_VERIFY, EXIT_NOTHING, EXIT_INTERNAL = 0, 1, 2, 3
EXIT_USAGE = EXIT_NOTHING


class UsageError(Exception):
    """Bad input: printed as `pario: error: ...`, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, instead of argparse's usage block
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def _number_of_seconds(text: str, positive: bool) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        raise argparse.ArgumentTypeError(f"must be {'a positive number of' if positive else '0 or more'} seconds, "
                                         f"not {text}")
    return v


def _seconds(text: str) -> float:
    return _number_of_seconds(text, True)


def _pause(text: str) -> float:
    return _number_of_seconds(text, False)


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
    rem.add_argument("--mpi", metavar="FLAVOUR", default="mpich", choices=FLAVOURS, help="MPI flavour (default mpich)")
    rem.add_argument("--out", metavar="DIR", help="results directory (default results/remote-<UTC time>)")
    rem.add_argument("--build-dir", metavar="DIR", default=None, help="build tree (default $PARIO_BUILD_DIR or ./build)")
    rem.add_argument("--timeout", type=_seconds, metavar="SECONDS", default=900.0,
                     help="kill a pario-bench run after this long (default 900)")
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
    ck.add_argument("--mpi", metavar="FLAVOUR", default="mpich", choices=FLAVOURS, help="MPI flavour (default mpich)")
    ck.add_argument("--build-dir", metavar="DIR", default=None, help="build tree (default $PARIO_BUILD_DIR or ./build)")
    ck.add_argument("--timeout", type=_seconds, metavar="SECONDS", default=3600.0,
                    help="give up after this long (default 3600)")

    rep = bsub.add_parser("report", help="rebuild DIR/report.html from stored results",
                          description="Rebuild DIR/report.html, its figures (PNG and SVG), DIR/summary.csv "
                                      "and DIR/summary.json from DIR/results.jsonl.")
    rep.add_argument("dir", metavar="DIR")
    return p


def _trace_parsers(sub) -> None:
    tr = sub.add_parser("trace", help="merge, summarize and report a trace directory (PARIO_TRACE=DIR)",
                        description="Work on a trace directory written by a run with PARIO_TRACE=DIR (or the "
                                    "hint pario_trace=DIR): client-<rank>-<pid>.jsonl from libpario, "
                                    "server-<port>-<pid>.jsonl from pario-server (docs/trace-format.md).")
    tsub = tr.add_subparsers(dest="trace_command", metavar="SUBCOMMAND", parser_class=_Parser)
    tsub.required = True
    m = tsub.add_parser("merge", help="one timeline: Chrome/Perfetto JSON (-o) or OTF2 (--otf2)",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        description="Merge every process's trace onto rank 0's clock.",
                        epilog="examples:\n"
                               "  pario trace merge tr -o trace.json     # open in https://ui.perfetto.dev\n"
                               "  pario trace merge tr --otf2 tr-otf2    # open tr-otf2/traces.otf2 in Vampir")
    m.add_argument("dir", metavar="DIR")
    m.add_argument("-o", "--output", metavar="FILE", help="Chrome trace-event JSON file")
    m.add_argument("--otf2", metavar="OUT", help="OTF2 archive directory (OUT/traces.otf2)")
    st = tsub.add_parser("stats", help="per-server table (seed 001, Table 2) and per-rank I/O times",
                         description="Print the servers' statistics (network and storage load, operations per "
                                     "second, storage accesses, bytes per storage operation, CPU usage, "
                                     "throughput) over each server's active interval and, per rank, time in "
                                     "I/O calls and in waits on pario's requests, data calls apart from opens "
                                     "and closes, bytes (nonblocking calls' from their background jobs), and "
                                     "the split of collective calls into exchange, file access and waiting.")
    st.add_argument("dir", metavar="DIR")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    _window_args(st)
    rp = tsub.add_parser("report", help="HTML page: timeline picture and the tables",
                         description="Write DIR/report.html (or -o FILE): client timelines above server "
                                     "timelines, as the seed's Figure 2, and the stats tables.")
    rp.add_argument("dir", metavar="DIR")
    rp.add_argument("-o", "--output", metavar="FILE", help="where to write (default DIR/report.html)")
    _window_args(rp)
    from .pioviz import DEFAULT_EMULATE
    ex = tsub.add_parser(
        "experiment", help="run seed 001's (PIOviz) experiments traced on pario-server and report them",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Per configuration, start a traced pario-server with emulated storage (--trace,\n"
                    "--emulate) and run pario-bench noncontig (HPIO: 32 B and 1024 B regions, 128 B gaps)\n"
                    "traced against it: independent and collective, collective buffer 0.5/4/16/64 MiB.\n"
                    "Writes OUT/seed001.html (the seed's Tables 2-4 beside ours, and a timeline per\n"
                    "configuration as its Figure 2), OUT/seed001.json and OUT/traces/. docs/tracing.md\n"
                    "says how to read them. Ctrl-C stops the MPI job and the server (exit 130).",
        epilog="examples:\n  pario trace experiment seed001 --quick --out results/seed001-quick\n"
               "  pario trace experiment seed001 --mpi openmpi --iterations 5 --out results/seed001")
    ex.add_argument("name", metavar="NAME", choices=["seed001"], help="the experiment: seed001")
    ex.add_argument("--quick", action="store_true",
                    help="1024 regions per rank, CB sizes scaled by the same factor, 1 iteration: under a minute")
    ex.add_argument("--ranks", type=int, default=4, metavar="N", help="MPI ranks (default 4, as the seed)")
    ex.add_argument("--region-count", type=int, metavar="N", help="regions per rank (default 32768; --quick 1024)")
    ex.add_argument("--iterations", type=int, metavar="N", help="measured calls per configuration (default 3; --quick 1)")
    ex.add_argument("--emulate", metavar="SPEC", default=DEFAULT_EMULATE,
                    help="pario-server --emulate (default %(default)s)")
    ex.add_argument("--mpi", metavar="FLAVOUR", default="mpich", choices=FLAVOURS, help="MPI flavour (default mpich)")
    ex.add_argument("--out", metavar="DIR", help="results directory (default results/seed001-<UTC time>)")
    ex.add_argument("--build-dir", metavar="DIR", default=None, help="build tree (default $PARIO_BUILD_DIR or ./build)")
    ex.add_argument("--timeout", type=_seconds, metavar="SECONDS", default=900.0,
                    help="kill a pario-bench run after this long (default 900)")


def _window_args(p) -> None:
    p.add_argument("--from", dest="t_from", type=_pause, metavar="S", default=None,
                   help="only what starts at or after S seconds from the trace's first event")
    p.add_argument("--to", dest="t_to", type=_pause, metavar="S", default=None,
                   help="only what starts before S seconds from the trace's first event")


def _window(tr, t, args):
    if args.t_from is not None and args.t_to is not None and args.t_to <= args.t_from:
        raise UsageError(f"--to {args.t_to} must be after --from {args.t_from}")
    return tr.window_of(t, args.t_from, args.t_to)


def cmd_trace(args) -> int:
    from dataclasses import asdict

    from . import trace as tr
    if args.trace_command == "experiment":
        return cmd_experiment(args)
    try:
        # merge -o and stats stream (two passes over the files, memory independent of their
        # length: python/pario/tracestream.py); OTF2 and the report read the trace into memory
        t = tr.scan(args.dir) if args.trace_command in ("merge", "stats") else tr.load(args.dir)
        for w in t.warnings:
            print(f"pario: warning: {w}", file=sys.stderr)
        if args.trace_command == "merge":
            if not args.output and not args.otf2:
                raise UsageError("merge needs -o FILE (JSON) and/or --otf2 OUT (see `pario trace merge --help`)")
            if args.output:
                n = tr.merge_json(t, args.output)
                print(f"{args.output}: {n} events from {len(t.procs)} process(es)")
            if args.otf2:
                n = tr.merge_otf2(tr.load(args.dir), args.otf2)
                print(f"{os.path.join(args.otf2, 'traces.otf2')}: {n} events from {len(t.procs)} process(es)")
        elif args.trace_command == "stats":
            w = _window(tr, t, args)
            if args.json:
                print(json.dumps({"window_ns": w, "servers": [asdict(s) for s in tr.server_stats(t, window=w)],
                                  "ranks": [asdict(r) for r in tr.rank_stats(t, w)]}, indent=1))
            else:
                print(tr.stats_text(t, w))
        else:
            from .tracereport import write_report
            print(f"report: {write_report(t, args.dir, args.output, _window(tr, t, args))}")
    except tr.TraceError as e:
        return _error(str(e))
    return EXIT_OK


def _server_of(args):
    """The build tree and pario-server an experiment uses (None, with the error printed, when
    there is none)."""
    build_dir = args.build_dir or args.global_build_dir or build_dir_default()
    server = find_server(args.mpi, build_dir)
    if not server:
        _error(f"no pario-server (not at {os.path.join(build_dir, args.mpi, 'server', 'pario-server')}, "
               "nor in $PARIO_PREFIX or PATH); run `make build`, or give --build-dir")
    return build_dir, server


def cmd_experiment(args) -> int:
    from . import pioviz
    from .remote import BenchRunner
    quick = args.quick
    count = args.region_count or (1024 if quick else pioviz.SEED_COUNT)
    iters = args.iterations or (1 if quick else 3)
    if not 1 <= args.ranks <= 256 or not 1 <= count <= 1 << 24 or not 1 <= iters <= 1000:
        return _error("--ranks 1..256, --region-count 1..16777216 and --iterations 1..1000")
    build_dir, server = _server_of(args)
    if not server:
        return EXIT_USAGE
    found = find_bench(args.mpi, build_dir)
    if not found or not found.lib:
        return _error(f"no pario-bench and libpario.so for {args.mpi} under {os.path.abspath(build_dir)} "
                      "(nor in $PARIO_PREFIX or PATH); run `make build`, or give --build-dir")
    out = args.out or os.path.join("results", "seed001-" + _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S"))
    bench = BenchRunner(args.mpi, found.bench, found.lib, Launcher(), os.path.join(out, "bench.log"), args.timeout, "")
    setup = pioviz.Setup(server, bench, ranks=args.ranks, count=count, iterations=iters, emulate=args.emulate,
                         quick=quick)
    try:
        stats = pioviz.run(out, setup)
    except pioviz.ExperimentError as e:
        return _error(str(e))
    except Interrupted as e:  # the MPI job and the server were stopped on the way out
        print(f"pario: interrupted by {e.name}: stopped the MPI job and pario-server; the traces of the "
              f"configurations run so far are in {os.path.join(out, 'traces')}", file=sys.stderr)
        return 128 + e.signum
    print(pioviz.text_tables(stats))
    print(f"\nreport: {os.path.join(out, pioviz.REPORT)}\nresults: {os.path.join(out, pioviz.RESULTS)}")
    return EXIT_OK


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


def _error(message: str) -> int:
    print(f"pario: error: {message}", file=sys.stderr)
    return EXIT_USAGE


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
    runner = Runner(out, build_dir, launcher, timeout, installs=installs, settle=settler)

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


def cmd_remote(args) -> int:
    from .remote import EXPERIMENTS, BenchRunner, RemoteError, run_sweep, summary_text
    exps = list(EXPERIMENTS) if args.experiments == "all" else [e.strip() for e in args.experiments.split(",") if e.strip()]
    unknown = [e for e in exps if e not in EXPERIMENTS]
    if unknown or not exps:
        return _error(f"unknown experiment {', '.join(unknown) or '(none)'}; choose from {', '.join(EXPERIMENTS)}")
    if not 1 <= args.repeat <= 100:
        return _error(f"--repeat {args.repeat}: give 1 to 100 runs")
    build_dir, server = _server_of(args)
    if not server:
        return EXIT_USAGE
    found = find_bench(args.mpi, build_dir)
    out = args.out or os.path.join("results", "remote-" + _dt.datetime.now(_dt.timezone.utc).strftime("%Y%m%d-%H%M%S"))
    os.makedirs(out, exist_ok=True)
    bench = None
    if found and found.lib:
        bench = BenchRunner(args.mpi, found.bench, found.lib, Launcher(), os.path.join(out, "remote.log"),
                            args.timeout, "")
    print(f"pario bench remote: {', '.join(exps)} ({'quick, ' if args.quick else ''}{args.repeat} runs each, "
          f"{args.mpi}); results in {out}", flush=True)
    try:
        rows, skipped = run_sweep(out, server, bench, exps, args.quick, args.repeat)
    except RemoteError as e:
        return _error(str(e))
    from .remote_report import build_remote_report
    report = build_remote_report(out)
    print(summary_text(rows, skipped))
    print(f"\nreport: {report}")
    return EXIT_OK if rows else EXIT_NOTHING


def cmd_checksum(args) -> int:
    """Run pario-checksum (an MPI singleton linked with libpario) and pass its lines on; its
    errors become one `pario: error:` line each."""
    build_dir = args.build_dir or args.global_build_dir or build_dir_default()
    tool = find_checksum(args.mpi, build_dir)
    if not tool:
        return _error(f"pario-checksum not found (looked in {build_dir}/{args.mpi}/bench, $PARIO_PREFIX/bin and "
                      "PATH): build pario (make build) or set PARIO_PREFIX to its install")
    env = dict(os.environ)
    if args.secret_file:
        if not os.path.isfile(args.secret_file):
            return _error(f"--secret-file {args.secret_file}: no such file")
        env["PARIO_RIO_SECRET_FILE"] = os.path.abspath(args.secret_file)
    try:
        p = subprocess.run([tool, "--algo", args.algo, "--", *args.files], capture_output=True, text=True,
                           errors="replace", env=env, stdin=subprocess.DEVNULL, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return _error(f"checksum: no answer within {args.timeout:g} s (--timeout)")
    sys.stdout.write(p.stdout)
    errs = [ln.strip() for ln in p.stderr.splitlines() if ln.strip().startswith(CHECKSUM_PREFIX)]
    for ln in errs:
        print(f"pario: error: {ln[len(CHECKSUM_PREFIX):].strip()}", file=sys.stderr)
    if p.returncode and not errs:
        last = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        print(f"pario: error: pario-checksum failed: {last}", file=sys.stderr)
    return EXIT_OK if p.returncode == 0 else EXIT_VERIFY


CHECKSUM_PREFIX = "pario-checksum:"


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
