"""What every `pario` command shares: exit statuses, the usage error and the argument parser
that reports one (one line, not argparse's usage block), the seconds types, the error line.
"""

from __future__ import annotations

import argparse
import math
import os
import sys

from .locate import find_server
from .runner import build_dir_default

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


def _tool_args(p: argparse.ArgumentParser, timeout: float, timeout_help: str, out: str = "") -> None:
    """The arguments of the commands that start pario-bench or pario-server themselves (bench
    remote, checksum, trace experiment): one MPI flavour, its build tree, a time limit, and
    with `out` (the default directory's name) a results directory."""
    from . import FLAVOURS
    p.add_argument("--mpi", metavar="FLAVOUR", default="mpich", choices=FLAVOURS, help="MPI flavour (default mpich)")
    if out:
        p.add_argument("--out", metavar="DIR", help=f"results directory (default results/{out}-<UTC time>)")
    p.add_argument("--build-dir", metavar="DIR", default=None, help="build tree (default $PARIO_BUILD_DIR or ./build)")
    p.add_argument("--timeout", type=_seconds, metavar="SECONDS", default=timeout,
                   help=f"{timeout_help} (default {timeout:g})")


def _error(message: str) -> int:
    print(f"pario: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def _server_of(args):
    """The build tree and pario-server an experiment uses (None, with the error printed, when
    there is none)."""
    build_dir = args.build_dir or args.global_build_dir or build_dir_default()
    server = find_server(args.mpi, build_dir)
    if not server:
        _error(f"no pario-server (not at {os.path.join(build_dir, args.mpi, 'server', 'pario-server')}, "
               "nor in $PARIO_PREFIX or PATH); run `make build`, or give --build-dir")
    return build_dir, server
