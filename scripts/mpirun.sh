#!/usr/bin/env bash
# Launch an MPI program under one MPI flavour, natively or with pario preloaded.
# usage: mpirun.sh FLAVOUR NP [--pario LIBPARIO] PROGRAM [ARGS...]
# FLAVOUR is a row of cmake/flavours.txt: a Debian flavour's launcher (mpiexec.openmpi) is
# looked up on PATH; a venv flavour's is in $PARIO_MPI_ROOT/bin, else $PARIO_MPI_VENVS/<flavour>/bin
# (the Makefile sets it to BUILD/mpi), else build/mpi/<flavour>/bin of this source tree, and
# runs with the variables the table gives it. The launcher's options follow the family.
# abi: a program built with the MPI standard ABI's mpicc_abi runs on the MPI whose
# libmpi_abi.so it loads, launched by that MPI's mpiexec (below).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
flavour=$1 np=$2; shift 2
preload=""
if [ "${1:-}" = "--pario" ]; then preload=$2; shift 2; fi
family= where= mpiexec= envs=-
if [ "$flavour" != abi ]; then # abi: below
  row=$(awk -v f="$flavour" '$1 == f' "$here/../cmake/flavours.txt")
  if [ -z "$row" ]; then
    echo "mpirun.sh: unknown MPI flavour '$flavour' ($(awk '/^[a-z]/ {printf "%s%s", s, $1; s=", "}' "$here/../cmake/flavours.txt"), or abi)" >&2
    exit 2
  fi
  read -r _ family where _ mpiexec _ envs <<<"$row"
  if [ "$where" = venv ]; then
    root=${PARIO_MPI_ROOT:-${PARIO_MPI_VENVS:-$here/../build/mpi}/$flavour}
    if [ ! -x "$root/bin/$mpiexec" ]; then
      echo "mpirun.sh: $flavour's MPI is not installed (no $root/bin/$mpiexec; scripts/install-deps.sh installs it)" >&2
      exit 2
    fi
    mpiexec=$root/bin/$mpiexec
    if [ "$envs" != - ]; then
      IFS=, read -ra kvs <<<"${envs//@ROOT@/$root}"
      for kv in "${kvs[@]}"; do export "${kv?}"; done
    fi
  fi
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Binding ranks and hwloc's x86 CPUID probe stall launches for minutes on small VMs
# (sched_setaffinity); one node needs neither.
export OMPI_MCA_hwloc_base_binding_policy=${OMPI_MCA_hwloc_base_binding_policy:-none}
export HWLOC_COMPONENTS=${HWLOC_COMPONENTS:--x86}
# ASan must come first in the preload list when the program is sanitized.
if [ -n "$preload" ] && [ -n "${PARIO_ASAN_LIB:-}" ]; then preload="$PARIO_ASAN_LIB $preload"; fi
# abi (a program built with the MPI standard ABI's mpicc_abi): it runs on the MPI whose
# libmpi_abi.so it loads (the wrapper's rpath, or LD_LIBRARY_PATH to run it on another MPI of
# the ABI), so it is launched by that MPI's mpiexec, in the bin directory beside that library's.
if [ "$flavour" = abi ]; then
  abilib=$(ldd "$1" 2>/dev/null | awk '$1 ~ /^libmpi_abi\.so/ { print $3; exit }' || true)
  abiroot=$(dirname "$(dirname "${abilib:-/none/lib/x}")") mpiexec=$abiroot/bin/mpiexec
  [ -x "$mpiexec" ] || { echo "mpirun.sh: abi: $1 loads no libmpi_abi.so with an mpiexec beside it" >&2; exit 2; }
  version=$("$mpiexec" --version 2>&1 || true)
  case "$version" in
    *HYDRA*) family=mpich ;;
    *"Intel(R) MPI"*) # Hydra too; Intel MPI finds itself through I_MPI_ROOT (shm: one machine)
      family=mpich; export I_MPI_ROOT=${I_MPI_ROOT:-$abiroot} I_MPI_FABRICS=${I_MPI_FABRICS:-shm} ;;
    *) family=openmpi ;;
  esac
fi
case "$family" in
  openmpi)
    args=(--oversubscribe --mca btl self,vader --mca rmaps_base_oversubscribe 1)
    [ -n "$preload" ] && args+=(-x "LD_PRELOAD=$preload")
    for v in PARIO_HINTS PARIO_LOG PARIO_TRACE PARIO_TRACE_FILTER ASAN_OPTIONS UBSAN_OPTIONS; do
      [ -n "${!v:-}" ] && args+=(-x "$v")
    done
    exec "$mpiexec" "${args[@]}" -n "$np" "$@" ;;
  mpich)
    # One machine: UCX needs only self and shared memory; probing network devices is slow.
    export UCX_TLS=${UCX_TLS:-self,sm} UCX_WARN_UNUSED_ENV_VARS=n
    args=(-launcher fork -bind-to none)
    [ -n "$preload" ] && args+=(-genv LD_PRELOAD "$preload")
    exec "$mpiexec" "${args[@]}" -n "$np" "$@" ;;
esac
