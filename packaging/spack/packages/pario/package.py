# Spack recipe for pario (docs/install.md, "Spack").
#
# No download location is named here: a site sets one where it uses the recipe, e.g.
#   spack repo add <checkout>/packaging/spack          (Spack 0.x layout: repo.yaml + packages/)
#   spack develop --path <checkout> pario@main && spack install pario ^mpich
# or a `git = ...` attribute (and versions) in its own repository overlay. Spack 1.x expects
# the spack_repo/<namespace>/ layout: copy packages/pario into a repository made with
# `spack repo create`. Needs Spack 0.23 or later (the "c" language dependency).
import os

from spack.package import *  # noqa: F401,F403

try:  # Spack >= 1.0: the build systems live in the builtin package repository
    from spack_repo.builtin.build_systems.cmake import CMakePackage
except ImportError:  # Spack 0.x: exported by spack.package
    pass


class Pario(CMakePackage):
    """pario: a portable implementation of MPI-IO that runs on top of any MPI through its
    public API and replaces the MPI's own MPI-IO (ROMIO, OMPIO) for unmodified programs."""

    license("BSD-3-Clause")

    # Sources come from the site (see above); "main" is a development version and 0.1.0 the
    # tag v0.1.0 of whatever `git` the site sets.
    version("main", branch="main")
    version("0.1.0", tag="v0.1.0")

    depends_on("c", type="build")
    depends_on("cmake@3.20:", type="build")
    depends_on("mpi")

    # pario's flavours: Open MPI and its derivatives, MPICH and its derivatives. Any other MPI
    # is built with PARIO_MPI=auto, which detects the flavour from mpi.h.
    _openmpi_like = ("openmpi", "spectrum-mpi", "fujitsu-mpi", "hpcx-mpi")
    _mpich_like = ("mpich", "mvapich", "mvapich2", "mvapich2-gdr", "intel-mpi",
                   "intel-oneapi-mpi", "cray-mpich")

    @property
    def mpi_flavour(self):
        """The flavour pario is built for: "openmpi", "mpich" or "auto" (detected)."""
        name = self.spec["mpi"].name
        if name in self._openmpi_like:
            return "openmpi"
        if name in self._mpich_like:
            return "mpich"
        return "auto"

    def cmake_args(self):
        mpi = self.spec["mpi"]
        args = [
            # The MPI's own wrapper, not Spack's compiler wrapper: pario builds every target with
            # it; with any name other than mpicc.<flavour> the build goes through FindMPI.
            self.define("CMAKE_C_COMPILER", mpi.mpicc),
            self.define("MPI_C_COMPILER", mpi.mpicc),
            self.define("PARIO_MPI", self.mpi_flavour),
        ]
        mpiexec = join_path(mpi.prefix.bin, "mpiexec")
        if os.path.exists(mpiexec):
            args.append(self.define("MPIEXEC_EXECUTABLE", mpiexec))
        return args

    def _flavour_dirs(self):
        # lib*/pario/<flavour>/ of this prefix (Spack installs one flavour per prefix).
        return [os.path.dirname(p) for p in find(self.prefix, "libpario.so", recursive=True)]

    @property
    def libs(self):
        return find_libraries("libpario", root=self.prefix, shared=True, recursive=True)

    @property
    def headers(self):
        return find_headers("pario", root=self.prefix.include, recursive=True)

    def setup_run_environment(self, env):
        # The programs under their plain names, as a module of this flavour would offer them.
        for d in self._flavour_dirs():
            if os.path.isdir(join_path(d, "bin")):
                env.prepend_path("PATH", join_path(d, "bin"))
