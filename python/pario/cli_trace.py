"""`pario trace`: its subcommands' arguments (merge, stats, report, experiment) and what they do
(trace.py, tracereport.py and pioviz.py do the work).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import sys

from .cliargs import EXIT_OK, EXIT_USAGE, UsageError, _error, _Parser, _pause, _server_of, _tool_args
from .launch import Launcher
from .locate import find_bench
from .runner import Interrupted


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
    m.add_argument("-j", "--jobs", type=int, metavar="N", default=None,
                   help="worker processes for -o, one process's file each at a time (default: the CPUs)")
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
                    "Writes OUT/seed001.html (the seed's Tables 2-4 beside ours, and a link per\n"
                    "configuration to the interactive timeline of its last iteration, as its Figure 2),\n"
                    "OUT/seed001.json and OUT/traces/. docs/tracing.md\n"
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
    _tool_args(ex, 900.0, "kill a pario-bench run after this long", out="seed001")


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
        # every command streams (two passes over the files, memory independent of their
        # length: python/pario/tracestream.py, tracesort.py; the first pass, and merge -o's
        # second, by one worker process per CPU: --jobs)
        jobs = tr.jobs_default() if getattr(args, "jobs", None) is None else args.jobs
        if jobs < 1:
            raise UsageError(f"--jobs {jobs}: must be at least 1")
        t = tr.scan(args.dir, jobs)
        for w in t.warnings:
            print(f"pario: warning: {w}", file=sys.stderr)
        if args.trace_command == "merge":
            if not args.output and not args.otf2:
                raise UsageError("merge needs -o FILE (JSON) and/or --otf2 OUT (see `pario trace merge --help`)")
            if args.output:
                n = tr.merge_json(t, args.output, jobs)
                print(f"{args.output}: {n} events from {len(t.procs)} process(es)")
            if args.otf2:
                n = tr.merge_otf2(t, args.otf2)
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


def cmd_experiment(args) -> int:
    from . import pioviz
    from .probes import BenchRunner
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
