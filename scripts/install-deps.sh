#!/usr/bin/env bash
# Install what building, testing and benchmarking pario needs on Debian 12 (run as root).
# Idempotent: skips apt when everything is already there.
# Then the MPIs of cmake/flavours.txt that come from the Python package index (openmpi5,
# mpich5, impi), each pinned into its own venv BUILD/mpi/<flavour> (BUILD: $BUILD, default
# build; nothing system-wide, no root needed). Where the index cannot be reached, that flavour
# is skipped with one line and `make build` / `make test` go on without it.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libopenmpi-dev openmpi-bin libmpich-dev mpich
      python3 python3-venv python3-pip python3-mpi4py liburing-dev libssl-dev
      # tracing: OTF2 output (pario trace merge --otf2) and OTF2's own reader (otf2-print, the
      # test that the archive reads without warnings), the merged JSON's schema test, the
      # trace readers' own schema checks (for the system python3 of the ctest scripts), and the
      # headless browser that renders the trace report in the tests
      python3-otf2 otf2-tools python3-jsonschema python3-fastjsonschema chromium
      # real MPI-IO clients (tests/clients): parallel HDF5 for both MPIs, h5py, netCDF-4 and
      # PnetCDF with its ncvalidator (Debian builds those three for Open MPI only), Fortran;
      # dpkg-dev unpacks the sources of the test suites (HDF5, MPICH, PnetCDF), m4 expands
      # PnetCDF's generated tests
      gfortran libhdf5-openmpi-dev libhdf5-mpich-dev python3-h5py-mpi libnetcdf-mpi-dev
      libpnetcdf-dev pnetcdf-bin dpkg-dev m4
      # pario-server's libFuzzer target (clang with its fuzzer/sanitizer runtimes); the openssl
      # command makes the TLS test's self-signed certificate
      clang-14 libclang-rt-14-dev openssl
      # pario bench remote: the peer it measures pario-server against (XRootD's server, xrdcp,
      # its Python client) and the plain TCP copy that bounds the link (iperf3)
      xrootd-server xrootd-client python3-xrootd iperf3)
# npm installs the report's JavaScript library (d3) at `make venv`: Debian's npm, unless a
# Node.js with its own npm is there already (Debian's npm conflicts with such a nodejs).
command -v npm >/dev/null 2>&1 || pkgs+=(npm)
missing=()
for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}"
fi

build=${BUILD:-build}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
while read -r flavour _ where mpicc _ pip _; do
  [ "$where" = venv ] || continue
  root=$build/mpi/$flavour
  want=${pip//,/ }
  # the stamp names what was installed: a changed pin reinstalls
  if [ -x "$root/bin/$mpicc" ] && [ "$(cat "$root/.pario-pip" 2>/dev/null)" = "$want" ]; then continue; fi
  out=""
  echo "install-deps: $flavour: pip install $want into $root"
  rm -rf "$root"
  if python3 -m venv "$root" &&
     out=$("$root/bin/pip" install -q --disable-pip-version-check --timeout 20 --retries 1 $want 2>&1) &&
     [ -x "$root/bin/$mpicc" ]; then
    echo "$want" >"$root/.pario-pip"
  else
    echo "install-deps: skipping $flavour: pip install $want failed (is the package index reachable?): $(echo "$out" | tail -n 1)" >&2
    rm -rf "$root"
  fi
done < <(grep '^[a-z]' "$here/../cmake/flavours.txt")
