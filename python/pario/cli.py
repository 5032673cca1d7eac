"""The `pario` command: `pario bench run` sweeps pario-bench, `pario bench report` redraws.

Exit status of `pario bench run`: 0 when the sweep ran (runs that crashed, timed out or
were unsupported are reported but do not fail the command, so one broken configuration
does not hide the rest); 1 when a pario measurement failed its data verification (wrong
bytes in the file); 2 on a usage error or when nothing ran at all (no pario-bench built,
or no run wrote a single measurement). A verification failure of the native MPI-IO is a
finding about that MPI library, not about this run: it is reported, not an error.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import shlex
import shutil
import socket
import sys
from typing import List, Optional

from . import IMPLS, MPIS, SUITES, __version__
from .launch import Launcher, LauncherError
from .plan import PlanError, parse_choice_list, parse_ranks, parse_suites, plan_sweep
from .results import META_FILE, REPORT_FILE, RESULTS_FILE, RUNS_FILE, load_results, save_meta
from .runner import LOG_DIR, Runner, bench_path, build_dir_default, fmt_duration, lib_path
from .tables import compare, group, summary_text

EXIT_OK, EXIT_VERIFY, EXIT_NOTHING = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pario",
        description="pario: run MPI-IO benchmark sweeps (native MPI-IO against pario) and report them.")
    p.add_argument("--version", action="version", version=f"pario {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    bench = sub.add_parser("bench", help="benchmark sweeps and reports",
                           description="Run pario-bench sweeps and build reports from their results.")
    bsub = bench.add_subparsers(dest="bench_command", metavar="SUBCOMMAND")
    bsub.required = True

    run = bsub.add_parser(
        "run", help="run a sweep and write DIR/report.html",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Run the benchmark suites over MPI flavours, implementations (native MPI-IO, "
                    "pario) and rank counts; store every result in DIR and write DIR/report.html.",
        epilog="suites: " + ", ".join(SUITES) + "\n\n"
               "exit status: 0 sweep ran (failed runs are listed, not fatal); 1 a pario\n"
               "measurement failed data verification; 2 usage error or nothing ran.\n"
               "(Native MPI-IO verification failures are reported as findings, exit 0.)\n\n"
               "examples:\n"
               "  pario bench run all --quick\n"
               "  pario bench run cfs,sharedfp --ranks 1,2,4,8 --mpi mpich\n"
               "  pario bench run noncontig --launcher 'srun -n {ranks}' --mpi openmpi")
    run.add_argument("suite", metavar="SUITE", help="a suite, a comma-separated list, or 'all'")
    run.add_argument("--quick", action="store_true", help="tiny sizes: `all --quick` takes a few minutes on 2 cores")
    run.add_argument("--ranks", metavar="LIST", help="rank counts, e.g. 1,2,4 (default 1,2,4)")
    run.add_argument("--mpi", metavar="LIST", default=",".join(MPIS),
                     help="MPI flavours (default %(default)s)")
    run.add_argument("--impl", metavar="LIST", default=",".join(IMPLS),
                     help="implementations (default %(default)s)")
    run.add_argument("--out", metavar="DIR", help="results directory (default results/bench-<UTC time>)")
    run.add_argument("--launcher", metavar="CMD",
                     help="launcher template with {ranks} (and optionally {mpi}), e.g. 'srun -n {ranks}'; "
                          "pario then reaches the ranks as LD_PRELOAD in their environment. "
                          "Default: mpiexec.openmpi / mpiexec.mpich as scripts/mpirun.sh")
    run.add_argument("--build-dir", metavar="DIR", default=None,
                     help="where <flavour>/bench/pario-bench and <flavour>/src/libpario.so are "
                          "(default $PARIO_BUILD_DIR or ./build)")
    run.add_argument("--timeout", type=float, metavar="SECONDS",
                     help="kill a run after this long (default 60 with --quick, else 1800)")
    run.add_argument("--append", action="store_true",
                     help="add to the results already in DIR instead of starting afresh")
    run.add_argument("--dry-run", action="store_true", help="print the planned commands and stop")

    rep = bsub.add_parser("report", help="rebuild DIR/report.html from stored results",
                          description="Rebuild DIR/report.html and its figures from DIR/results.jsonl.")
    rep.add_argument("dir", metavar="DIR")
    return p


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
    for name in (RESULTS_FILE, RUNS_FILE, META_FILE, REPORT_FILE):
        p = os.path.join(out, name)
        if os.path.exists(p):
            os.remove(p)
    shutil.rmtree(os.path.join(out, LOG_DIR), ignore_errors=True)
    for name in os.listdir(out):  # only the figures a report draws
        if name.endswith(".png") and name.split("-")[0] in SUITES:
            os.remove(os.path.join(out, name))


def _print_summary(directory: str, report: str, stream=None) -> None:
    stream = stream or sys.stdout
    ms, _ = load_results(directory)
    print("", file=stream)
    print(summary_text(compare(group(ms))), file=stream)
    print("pario/native: bandwidth ratio (above 1: pario faster); for overlap the ratio of "
          "nonblocking/blocking ratios (below 1: pario overlaps better). Geometric mean over configurations.",
          file=stream)
    print(f"\nreport: {report}", file=stream)


def cmd_run(args) -> int:
    try:
        suites = parse_suites(args.suite)
        mpis = parse_choice_list(args.mpi, MPIS, "MPI flavour")
        impls = parse_choice_list(args.impl, IMPLS, "implementation")
        ranks = parse_ranks(args.ranks) if args.ranks else None
        launcher = Launcher(args.launcher)
    except (PlanError, LauncherError) as e:
        print(f"pario: {e}", file=sys.stderr)
        return EXIT_NOTHING
    build_dir = args.build_dir or build_dir_default()
    out = args.out or _default_out()
    timeout = args.timeout if args.timeout else (60.0 if args.quick else 1800.0)
    runs = plan_sweep(suites, mpis, impls, ranks, quick=args.quick)
    runner = Runner(out, build_dir, launcher, timeout)

    if args.dry_run:
        for r in runs:
            cmd = runner.command(r, os.path.join(runner.out_dir, LOG_DIR, r.slug + ".jsonl"),
                                 os.path.join(runner.out_dir, "scratch", r.slug))
            print(f"[{r.index}/{len(runs)}] " + " ".join(shlex.quote(c) for c in cmd))
        return EXIT_OK

    built = [m for m in mpis if os.access(bench_path(build_dir, m), os.X_OK)]
    for m in mpis:
        if m not in built:
            print(f"pario: warning: no pario-bench for {m} at {bench_path(build_dir, m)}; its runs are skipped",
                  file=sys.stderr)
        elif "pario" in impls and not os.path.exists(lib_path(build_dir, m)):
            print(f"pario: warning: no libpario.so for {m} at {lib_path(build_dir, m)}; "
                  "its pario runs are skipped", file=sys.stderr)
    if not built:
        print(f"pario: nothing to run: pario-bench is not built under {os.path.abspath(build_dir)} "
              "(run `make build`, or give --build-dir)", file=sys.stderr)
        return EXIT_NOTHING

    os.makedirs(out, exist_ok=True)
    if not args.append and os.path.exists(os.path.join(out, RESULTS_FILE)):
        print(f"pario: replacing the results in {out} (use --append to add to them)")
        _clear(out)
    started = _dt.datetime.now(_dt.timezone.utc)
    meta = {
        "started": started.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "pario " + " ".join(shlex.quote(a) for a in args.argv),
        "host": socket.gethostname(), "cpus": os.cpu_count(),
        "system": f"{platform.system()} {platform.release()}, Python {platform.python_version()}",
        "storage": _storage(out), "launcher": launcher.describe(),
        "build_dir": os.path.abspath(build_dir), "quick": args.quick,
        "suites": suites, "mpis": mpis, "impls": impls, "ranks": ranks,
    }
    save_meta(out, meta)
    print(f"pario bench: {len(runs)} runs of {', '.join(suites)} on {', '.join(mpis)} "
          f"({', '.join(impls)}){' quick' if args.quick else ''}; results in {out}", flush=True)
    outcome = runner.run_all(runs)
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
        print(f"  [{r.index}] {r.suite} {r.mpi} {r.impl} n={r.ranks}: {r.status}: {r.message}"
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
        print("pario: no run wrote any measurement", file=sys.stderr)
        return EXIT_NOTHING
    return EXIT_OK


def cmd_report(args) -> int:
    directory = args.dir
    if not os.path.exists(os.path.join(directory, RESULTS_FILE)):
        print(f"pario: no {RESULTS_FILE} in {directory}", file=sys.stderr)
        return EXIT_NOTHING
    ms, problems = load_results(directory)
    for p in problems[:10]:
        print(f"pario: warning: skipped {p}", file=sys.stderr)
    from .report import build_report
    report = build_report(directory, ms, problems)
    _print_summary(directory, report)
    return EXIT_OK


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    try:
        return _dispatch(args)
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return EXIT_OK
    except KeyboardInterrupt:
        print("\npario: interrupted", file=sys.stderr)
        return 130


def _dispatch(args) -> int:
    if args.command == "bench":
        if args.bench_command == "run":
            return cmd_run(args)
        if args.bench_command == "report":
            return cmd_report(args)
    return EXIT_NOTHING  # pragma: no cover - argparse enforces a subcommand


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
