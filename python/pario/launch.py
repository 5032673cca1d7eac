"""How one pario-bench run is launched: the MPI launcher command line and its environment.

The default launchers mirror scripts/mpirun.sh: Open MPI's mpiexec with oversubscription
(allowed to run as root), pario preloaded with `-x LD_PRELOAD=...`; MPICH's hydra with
`-genv LD_PRELOAD ...`. The other flavours (cmake/flavours.txt: openmpi5, mpich5, impi, MPIs
from pip venvs) run through their build tree's BUILD/<flavour>/mpi-launcher/pario-mpirun, which
is scripts/mpirun.sh with that MPI's place and variables. A custom launcher is a template such as "srun -n {ranks}" or
"mpiexec.{mpi} -n {ranks}"; the program is then started through `env LD_PRELOAD=<lib>` so
the library reaches the ranks through their environment whatever the launcher forwards,
and the launcher itself is not preloaded.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Dict, List, Optional

from . import FLAVOURS

# Variables pario reads; forwarded to the ranks by the default Open MPI launcher (MPICH's
# hydra forwards the whole environment by default).
FORWARD_ENV = ("PARIO_HINTS", "PARIO_LOG", "PARIO_TRACE")

ROOT_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}

# As scripts/mpirun.sh: on one machine, rank binding and hwloc's x86 probe can stall a launch
# for minutes, and MPICH's UCX needs only self and shared memory. Set only where unset.
LOCAL_ENV = {"OMPI_MCA_hwloc_base_binding_policy": "none", "HWLOC_COMPONENTS": "-x86",
             "UCX_TLS": "self,sm", "UCX_WARN_UNUSED_ENV_VARS": "n"}

PLACEHOLDERS = ("ranks", "np", "mpi")


class LauncherError(ValueError):
    pass


@dataclass
class Launcher:
    """Either the default launcher of each MPI flavour (template None) or a user template."""

    template: Optional[str] = None

    def __post_init__(self) -> None:
        if self.template is not None:
            check_template(self.template)

    @property
    def custom(self) -> bool:
        return self.template is not None

    def command(self, mpi: str, ranks: int, program: List[str], preload: Optional[str] = None,
                environ: Optional[Dict[str, str]] = None) -> List[str]:
        """The full argv that runs `program` on `ranks` ranks of flavour `mpi`."""
        environ = os.environ if environ is None else environ
        if self.template is not None:
            head = [w.format(ranks=ranks, np=ranks, mpi=mpi) for w in split_template(self.template)]
            if preload:
                return head + ["env", f"LD_PRELOAD={_preload_list(preload, environ)}"] + program
            return head + program
        return default_command(mpi, ranks, program, preload, environ)

    def env(self, base: Optional[Dict[str, str]] = None) -> Dict[str, str]:
        """Environment for the launcher process."""
        env = dict(os.environ if base is None else base)
        env.update(ROOT_ENV)
        if self.template is None:
            for k, v in LOCAL_ENV.items():
                env.setdefault(k, v)
        return env

    def describe(self) -> str:
        return self.template if self.template is not None else "default (each flavour's, as scripts/mpirun.sh)"


def split_template(template: str) -> List[str]:
    """The words of a launcher template, as a shell would split them."""
    try:
        return shlex.split(template)
    except ValueError as e:  # unbalanced quotes, a trailing backslash
        raise LauncherError(f"bad launcher template {template!r}: {str(e).lower()}") from None


def check_template(template: str) -> None:
    words = split_template(template)
    if not words:
        raise LauncherError("empty launcher template")
    try:
        for w in words:
            w.format(ranks=1, np=1, mpi="openmpi")
    except (KeyError, IndexError, ValueError) as e:
        raise LauncherError(
            f"bad launcher template {template!r}: {e}; placeholders are "
            + ", ".join("{%s}" % p for p in PLACEHOLDERS)) from None
    if not any(("{ranks}" in w or "{np}" in w) for w in words):
        raise LauncherError(f"launcher template {template!r} must contain {{ranks}} (e.g. 'srun -n {{ranks}}')")


def _preload_list(preload: str, environ: Dict[str, str]) -> str:
    # A sanitized build needs the ASan runtime first in the preload list (see scripts/mpirun.sh).
    asan = environ.get("PARIO_ASAN_LIB")
    return f"{asan} {preload}" if asan else preload


def default_command(mpi: str, ranks: int, program: List[str], preload: Optional[str] = None,
                    environ: Optional[Dict[str, str]] = None) -> List[str]:
    environ = os.environ if environ is None else environ
    if mpi == "openmpi":
        args = ["mpiexec.openmpi", "--oversubscribe", "--mca", "btl", "self,vader",
                "--mca", "rmaps_base_oversubscribe", "1"]
        if preload:
            args += ["-x", f"LD_PRELOAD={_preload_list(preload, environ)}"]
        for v in FORWARD_ENV:
            if environ.get(v):
                args += ["-x", v]
        return args + ["-n", str(ranks)] + program
    if mpi == "mpich":
        args = ["mpiexec.mpich", "-launcher", "fork", "-bind-to", "none"]
        if preload:
            args += ["-genv", "LD_PRELOAD", _preload_list(preload, environ)]
        return args + ["-n", str(ranks)] + program
    if mpi in FLAVOURS:
        # pario-bench is BUILD/<flavour>/bench/pario-bench: the launcher is in the same tree.
        tree = os.path.dirname(os.path.dirname(os.path.abspath(program[0])))
        wrapper = os.path.join(tree, "mpi-launcher", "pario-mpirun")
        if not os.access(wrapper, os.X_OK):
            raise LauncherError(f"no launcher for {mpi}: {program[0]} is not in a build tree of "
                                f"make build (no {wrapper}); give --launcher")
        return [wrapper, str(ranks)] + (["--pario", preload] if preload else []) + program
    raise LauncherError(f"unknown MPI flavour {mpi!r} ({', '.join(FLAVOURS)})")
