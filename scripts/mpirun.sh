#!/usr/bin/env bash
# Launch an MPI program under one MPI flavour, natively or with pario preloaded.
# usage: mpirun.sh openmpi|mpich|abi NP [--pario LIBPARIO] PROGRAM [ARGS...]
set -euo pipefail
flavour=$1 np=$2; shift 2
preload=""
if [ "${1:-}" = "--pario" ]; then preload=$2; shift 2; fi
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
launcher=
if [ "$flavour" = abi ]; then
  abilib=$(ldd "$1" 2>/dev/null | awk '$1 ~ /^libmpi_abi\.so/ { print $3; exit }' || true)
  abiroot=$(dirname "$(dirname "${abilib:-/none/lib/x}")") launcher=$abiroot/bin/mpiexec
  [ -x "$launcher" ] || { echo "mpirun.sh: abi: $1 loads no libmpi_abi.so with an mpiexec beside it" >&2; exit 2; }
  version=$("$launcher" --version 2>&1 || true)
  case "$version" in
    *HYDRA*) flavour=mpich ;;
    *"Intel(R) MPI"*) # Hydra too; Intel MPI finds itself through I_MPI_ROOT (shm: one machine)
      flavour=mpich; export I_MPI_ROOT=${I_MPI_ROOT:-$abiroot} I_MPI_FABRICS=${I_MPI_FABRICS:-shm} ;;
    *) flavour=openmpi ;;
  esac
fi
case "$flavour" in
  openmpi)
    args=(--oversubscribe --mca btl self,vader --mca rmaps_base_oversubscribe 1)
    [ -n "$preload" ] && args+=(-x "LD_PRELOAD=$preload")
    for v in PARIO_HINTS PARIO_LOG PARIO_TRACE PARIO_TRACE_FILTER ASAN_OPTIONS UBSAN_OPTIONS; do
      [ -n "${!v:-}" ] && args+=(-x "$v")
    done
    exec "${launcher:-mpiexec.openmpi}" "${args[@]}" -n "$np" "$@" ;;
  mpich)
    # One machine: UCX needs only self and shared memory; probing network devices is slow.
    export UCX_TLS=${UCX_TLS:-self,sm} UCX_WARN_UNUSED_ENV_VARS=n
    args=(-launcher fork -bind-to none)
    [ -n "$preload" ] && args+=(-genv LD_PRELOAD "$preload")
    exec "${launcher:-mpiexec.mpich}" "${args[@]}" -n "$np" "$@" ;;
  *) echo "mpirun.sh: unknown MPI flavour '$flavour' (openmpi, mpich or abi)" >&2; exit 2 ;;
esac
