"""h5py with the MPI-IO driver: collective writes and reads of a dataset from every rank.

    h5py_mpio.py pario|native FILE

Rank r writes rows [r*ROWS, (r+1)*ROWS) of a NP*ROWS x COLS float64 dataset (contiguous) and
columns [r*CW, ...) of a chunked int32 dataset, both inside ``dset.collective``; then the file
is reopened read-only with driver='mpio' and every rank reads both datasets whole
(collectively) and checks every value. pario check: a file opened with mpi4py's MPI.File in
the same process reports pario_sharedfp in Get_info only under pario (the HDF5 library's own
opens are checked from outside by the probe, see ../common/probe.c).
"""
import sys

import h5py
import numpy as np
from mpi4py import MPI

ROWS, COLS = 64, 96


def main():
    comm = MPI.COMM_WORLD
    rank, size = comm.Get_rank(), comm.Get_size()
    if len(sys.argv) != 3 or sys.argv[1] not in ("pario", "native"):
        if rank == 0:
            print("usage: h5py_mpio.py pario|native FILE", file=sys.stderr)
        comm.Abort(2)
    expect_pario = sys.argv[1] == "pario"
    path = sys.argv[2]
    if not h5py.get_config().mpi:
        print("h5py_mpio: this h5py was built without MPI", file=sys.stderr)
        comm.Abort(1)

    nrows = size * ROWS
    full = np.arange(nrows * COLS, dtype=np.float64).reshape(nrows, COLS) * 0.5
    ifull = (np.arange(nrows * COLS, dtype=np.int32) * 7).reshape(nrows, COLS)
    cw = COLS // size
    c0 = rank * cw
    c1 = COLS if rank == size - 1 else c0 + cw

    with h5py.File(path, "w", driver="mpio", comm=comm) as f:
        d = f.create_dataset("field", (nrows, COLS), dtype="f8")
        c = f.create_dataset("ints", (nrows, COLS), dtype="i4", chunks=(16, 32))
        f.attrs["ranks"] = size
        with d.collective:
            d[rank * ROWS:(rank + 1) * ROWS, :] = full[rank * ROWS:(rank + 1) * ROWS, :]
        with c.collective:
            c[:, c0:c1] = ifull[:, c0:c1]

    failures = []
    with h5py.File(path, "r", driver="mpio", comm=comm) as f:
        d, c = f["field"], f["ints"]
        with d.collective:
            got = d[...]
        with c.collective:
            igot = c[...]
        if not np.array_equal(got, full):
            failures.append("field: %d values wrong" % int(np.sum(got != full)))
        if not np.array_equal(igot, ifull):
            failures.append("ints: %d values wrong" % int(np.sum(igot != ifull)))
        if int(f.attrs["ranks"]) != size:
            failures.append("attribute ranks = %r" % (f.attrs["ranks"],))

    fh = MPI.File.Open(comm, path, MPI.MODE_RDONLY)
    info = fh.Get_info()
    has = info.Get("pario_sharedfp") is not None
    info.Free()
    fh.Close()
    if has != expect_pario:
        failures.append("MPI.File Get_info %s pario_sharedfp (expected %s)"
                        % ("reports" if has else "does not report", sys.argv[1]))

    for msg in failures:
        print("h5py_mpio rank %d: %s" % (rank, msg), file=sys.stderr)
    nfail = comm.allreduce(len(failures))
    if rank == 0:
        print("h5py_mpio: %s, %d ranks, h5py %s, HDF5 %s: %s"
              % (sys.argv[1], size, h5py.version.version, h5py.version.hdf5_version,
                 "FAILED" if nfail else "ok"))
    sys.exit(1 if nfail else 0)


if __name__ == "__main__":
    main()
