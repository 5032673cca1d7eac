"""Where pario-bench and libpario.so are: a build tree, an installed prefix, or PATH.

`find_bench(mpi, build_dir)` is the one place that decides, in this order:

1. the build tree: BUILD_DIR/<flavour>/bench/pario-bench (and BUILD_DIR/<flavour>/src/libpario.so);
2. the prefix in $PARIO_PREFIX, with the layouts of PREFIX_BENCH / PREFIX_LIB below;
3. each directory D of $PATH: D/pario-bench-<flavour>, D/pario-bench.<flavour>,
   <D/..>/lib/pario/<flavour>/bin/pario-bench, and a plain D/pario-bench when the MPI library
   it is linked against is that flavour's; libpario.so is then looked for under D/.. .

A binary named plainly `pario-bench` (no flavour in its name or path) is taken for the flavour
whose MPI library it names (libmpich.so: mpich, libmpi.so: openmpi), so one installed for MPICH
is never launched with Open MPI's mpiexec. Adjust the tables when the install layout changes.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from typing import Dict, List, Mapping, Optional, Tuple

BENCH = "pario-bench"

# Inside a build tree (one per MPI flavour, see the Makefile).
BUILD_BENCH = os.path.join("{mpi}", "bench", BENCH)
BUILD_LIB = os.path.join("{mpi}", "src", "libpario.so")

# Inside an installed prefix, in order of preference. "{mpi}" is the flavour; a candidate
# without it is checked against the binary's MPI library (see binary_flavour).
PREFIX_BENCH: Tuple[str, ...] = (
    "bin/pario-bench-{mpi}",
    "bin/pario-bench.{mpi}",
    "lib/pario/{mpi}/bin/pario-bench",
    "bin/pario-bench",
)
PREFIX_LIB: Tuple[str, ...] = (
    "lib/pario/{mpi}/lib/libpario.so",
    "lib/pario/{mpi}/libpario.so",
    "lib/libpario-{mpi}.so",
    "lib/libpario.{mpi}.so",
    "lib/{mpi}/libpario.so",
    "lib/libpario.so",
)

# Names of the MPI libraries in a binary's dynamic section, per flavour.
MPI_LIBRARY_NAMES = (("mpich", b"libmpich.so"), ("openmpi", b"libmpi.so"))


@dataclass
class BenchInstall:
    """A pario-bench for one MPI flavour, and the libpario.so that goes with it (if any)."""

    mpi: str
    bench: str
    lib: Optional[str]
    source: str          # "build", "PARIO_PREFIX" or "PATH"


def _executable(path: str) -> bool:
    return os.path.isfile(path) and os.access(path, os.X_OK)


def binary_flavour(path: str, limit: int = 16 << 20) -> Optional[str]:
    """The MPI flavour an executable is linked against, from the library names it holds."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit)
    except OSError:
        return None
    for mpi, name in MPI_LIBRARY_NAMES:
        if name in data:
            return mpi
    return None


def _lib_under(prefix: str, mpi: str) -> Optional[str]:
    for pattern in PREFIX_LIB:
        path = os.path.join(prefix, pattern.format(mpi=mpi))
        if os.path.exists(path):
            return path
    return None


def _prefix_candidates(prefix: str, mpi: str) -> List[Tuple[str, bool]]:
    """(path, flavour is in the name) for every layout of PREFIX_BENCH under `prefix`."""
    return [(os.path.join(prefix, p.format(mpi=mpi)), "{mpi}" in p) for p in PREFIX_BENCH]


def _path_candidates(directory: str, mpi: str) -> List[Tuple[str, bool]]:
    prefix = os.path.dirname(os.path.abspath(directory))
    return [(os.path.join(directory, f"{BENCH}-{mpi}"), True),
            (os.path.join(directory, f"{BENCH}.{mpi}"), True),
            (os.path.join(prefix, "lib", "pario", mpi, "bin", BENCH), True),
            (os.path.join(directory, BENCH), False)]


def _prefix_of(bench: str) -> str:
    """The install prefix of a bench found in PREFIX/bin or PREFIX/lib/pario/<mpi>/bin."""
    d = os.path.dirname(os.path.abspath(bench))          # .../bin
    parts = d.split(os.sep)
    if len(parts) >= 5 and parts[-4:-2] == ["lib", "pario"] and parts[-1] == "bin":
        return os.sep.join(parts[:-4]) or os.sep
    return os.path.dirname(d)


def find_bench(mpi: str, build_dir: Optional[str] = None,
               environ: Optional[Mapping[str, str]] = None) -> Optional[BenchInstall]:
    """The pario-bench to run for flavour `mpi`, or None (see the module's docstring)."""
    environ = os.environ if environ is None else environ
    if build_dir:
        bench = os.path.join(build_dir, BUILD_BENCH.format(mpi=mpi))
        if _executable(bench):
            lib = os.path.join(build_dir, BUILD_LIB.format(mpi=mpi))
            return BenchInstall(mpi, os.path.abspath(bench),
                                os.path.abspath(lib) if os.path.exists(lib) else None, "build")
    searches: List[Tuple[str, List[Tuple[str, bool]]]] = []
    prefix = environ.get("PARIO_PREFIX")
    if prefix:
        searches.append(("PARIO_PREFIX", _prefix_candidates(prefix, mpi)))
    for d in (environ.get("PATH") or "").split(os.pathsep):
        if d:
            searches.append(("PATH", _path_candidates(d, mpi)))
    for source, candidates in searches:
        for path, named in candidates:
            if _executable(path) and (named or binary_flavour(path) == mpi):
                path = os.path.abspath(path)
                return BenchInstall(mpi, path, _lib_under(_prefix_of(path), mpi), source)
    return None


def bench_version(bench: str, timeout: float = 15.0, env: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """First line of `pario-bench --version` ("pario-bench 0.1.0 (built for MPICH 4.0.2)"), or
    None when this pario-bench has no such option (older builds) or does not answer."""
    try:
        p = subprocess.run([bench, "--version"], capture_output=True, text=True, timeout=timeout,
                           stdin=subprocess.DEVNULL, env=None if env is None else dict(env),
                           errors="replace")
    except (OSError, subprocess.SubprocessError):
        return None
    lines = [ln.strip() for ln in p.stdout.splitlines() if ln.strip()]
    if p.returncode != 0 or not lines or not lines[0].startswith(BENCH):
        return None
    return lines[0]


SERVER = "pario-server"


def find_server(mpi: str, build_dir: str, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """pario-server: BUILD_DIR/<flavour>/server/pario-server, else $PARIO_PREFIX/bin (with or
    without the flavour suffix), else PATH. The server needs no MPI: any flavour's will do."""
    environ = os.environ if environ is None else environ
    cands = [os.path.join(build_dir, mpi, "server", SERVER)]
    cands += [os.path.join(build_dir, m, "server", SERVER) for m in ("openmpi", "mpich") if m != mpi]
    prefix = environ.get("PARIO_PREFIX")
    if prefix:
        cands += [os.path.join(prefix, "bin", n) for n in (SERVER, f"{SERVER}.{mpi}", f"{SERVER}-{mpi}")]
    for d in environ.get("PATH", "").split(os.pathsep):
        if d:
            cands += [os.path.join(d, n) for n in (SERVER, f"{SERVER}.{mpi}")]
    for c in cands:
        if _executable(c):
            return os.path.abspath(c)
    return None


CHECKSUM = "pario-checksum"


def find_checksum(mpi: str, build_dir: str, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """pario-checksum (linked with libpario, so it needs no preload): the build tree's
    BUILD_DIR/<flavour>/bench/pario-checksum (`mpi` first, then the other flavour), else
    $PARIO_PREFIX/bin with or without the flavour suffix, else PATH."""
    environ = os.environ if environ is None else environ
    cands = [os.path.join(build_dir, m, "bench", CHECKSUM) for m in (mpi,) + tuple(x for x in ("mpich", "openmpi") if x != mpi)]
    prefix = environ.get("PARIO_PREFIX")
    if prefix:
        cands += [os.path.join(prefix, "bin", n) for n in (f"{CHECKSUM}-{mpi}", f"{CHECKSUM}.{mpi}", CHECKSUM)]
    for d in environ.get("PATH", "").split(os.pathsep):
        if d:
            cands += [os.path.join(d, n) for n in (f"{CHECKSUM}-{mpi}", f"{CHECKSUM}.{mpi}", CHECKSUM)]
    for c in cands:
        if _executable(c):
            return os.path.abspath(c)
    return None
