"""Launcher command lines: the defaults mirror scripts/mpirun.sh; templates for srun & co."""

import os

import pytest

from pario import FLAVOURS, MPIS
from pario.launch import Launcher, LauncherError, default_command

PROG = ["/b/pario-bench", "cfs", "--results", "/r.jsonl"]


def test_openmpi_native_and_pario():
    cmd = default_command("openmpi", 4, PROG, None, environ={})
    assert cmd[0] == "mpiexec.openmpi" and "--oversubscribe" in cmd
    assert cmd[-len(PROG) - 2:] == ["-n", "4"] + PROG
    assert not any("LD_PRELOAD" in c for c in cmd)
    cmd = default_command("openmpi", 2, PROG, "/l/libpario.so", environ={"PARIO_HINTS": "/h"})
    assert cmd[cmd.index("-x") + 1] == "LD_PRELOAD=/l/libpario.so"
    assert ["-x", "PARIO_HINTS"] == cmd[cmd.index("PARIO_HINTS") - 1:cmd.index("PARIO_HINTS") + 1]


def test_mpich_native_and_pario():
    assert default_command("mpich", 1, PROG, None, environ={}) == \
        ["mpiexec.mpich", "-launcher", "fork", "-bind-to", "none", "-n", "1"] + PROG
    cmd = default_command("mpich", 2, PROG, "/l/libpario.so", environ={"PARIO_ASAN_LIB": "/asan.so"})
    assert cmd[:8] == ["mpiexec.mpich", "-launcher", "fork", "-bind-to", "none",
                       "-genv", "LD_PRELOAD", "/asan.so /l/libpario.so"]


def test_unknown_flavour():
    with pytest.raises(LauncherError):
        default_command("lam", 1, PROG)


def test_flavours_are_the_table():
    """python/pario knows the flavours of cmake/flavours.txt, the one table of them."""
    table = os.path.join(os.path.dirname(__file__), "..", "..", "cmake", "flavours.txt")
    with open(table) as f:
        rows = [line.split()[0] for line in f if line[:1].isalpha()]
    assert list(FLAVOURS) == rows and set(MPIS) <= set(FLAVOURS)


def test_venv_flavour_uses_its_build_tree(tmp_path):
    """openmpi5, mpich5, impi: launched by BUILD/<flavour>/mpi-launcher/pario-mpirun beside the
    bench; a bench outside a build tree has no launcher (a clear error, not a wrong MPI)."""
    bench = tmp_path / "mpich5" / "bench" / "pario-bench"
    bench.parent.mkdir(parents=True)
    bench.write_text("")
    prog = [str(bench), "cfs"]
    with pytest.raises(LauncherError, match="no launcher for mpich5"):
        default_command("mpich5", 2, prog)
    wrapper = tmp_path / "mpich5" / "mpi-launcher" / "pario-mpirun"
    wrapper.parent.mkdir()
    wrapper.write_text("#!/bin/sh\n")
    wrapper.chmod(0o755)
    assert default_command("mpich5", 2, prog) == [str(wrapper), "2"] + prog
    assert default_command("impi", 3, prog, "/l/libpario.so") == \
        [str(wrapper), "3", "--pario", "/l/libpario.so"] + prog


def test_root_environment():
    env = Launcher().env({"PATH": "/bin"})
    assert env["OMPI_ALLOW_RUN_AS_ROOT"] == "1" and env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] == "1"
    assert env["PATH"] == "/bin"


def test_template_launcher():
    launcher = Launcher("srun -n {ranks} --mpi=pmix")
    assert launcher.custom
    assert launcher.command("mpich", 8, PROG, None, environ={}) == ["srun", "-n", "8", "--mpi=pmix"] + PROG
    cmd = launcher.command("mpich", 8, PROG, "/l/libpario.so", environ={})
    assert cmd == ["srun", "-n", "8", "--mpi=pmix", "env", "LD_PRELOAD=/l/libpario.so"] + PROG
    cmd = Launcher("mpiexec.{mpi} -np {np}").command("openmpi", 3, PROG, None, environ={})
    assert cmd[:3] == ["mpiexec.openmpi", "-np", "3"]


@pytest.mark.parametrize("bad", ["", "srun", "mpiexec -n {rank}", "srun -n {ranks", "srun -n {ranks} 'x",
                                 'srun -n {ranks} "x', "srun -n {ranks} x\\"])
def test_bad_templates(bad):
    with pytest.raises(LauncherError):
        Launcher(bad)
