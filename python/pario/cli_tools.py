"""`pario bench remote` (seed 004's experiments against pario-server: remote.py does the work)
and `pario checksum` (pario-checksum, an MPI singleton linked with libpario).
"""

from __future__ import annotations

import datetime as _dt
import os
import subprocess
import sys

from .cliargs import EXIT_NOTHING, EXIT_OK, EXIT_USAGE, EXIT_VERIFY, _error, _server_of
from .launch import Launcher
from .locate import find_bench, find_checksum
from .runner import build_dir_default


def cmd_remote(args) -> int:
    from .probes import BenchRunner
    from .remote import run_sweep
    from .remote_summary import EXPERIMENTS, summary_text
    from .services import RemoteError
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
