"""pario: benchmark sweeps, result parsing and reports for the pario MPI-IO library.

The C library and the `pario-bench` program live in the same source tree; this package
drives `pario-bench` over MPI flavours, implementations and rank counts and turns the
JSON lines it writes into tables and a report with figures.
"""

__version__ = "0.1.0"

SUITES = ("overlap", "cfs", "noncontig", "sharedfp", "btio")
IMPLS = ("native", "pario")
# The MPI flavours a default sweep covers (Debian's two), and every flavour pario knows: the
# rows of cmake/flavours.txt (tests/python/test_launch.py checks they agree).
MPIS = ("openmpi", "mpich")
FLAVOURS = MPIS + ("openmpi5", "mpich5", "impi")
