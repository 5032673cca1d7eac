#!/usr/bin/env bash
# Launch an MPI program under one MPI flavour, natively or with pario preloaded.
# usage: mpirun.sh openmpi|mpich NP [--pario LIBPARIO] PROGRAM [ARGS...]
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
case "$flavour" in
  openmpi)
    args=(--oversubscribe --mca btl self,vader --mca rmaps_base_oversubscribe 1)
    [ -n "$preload" ] && args+=(-x "LD_PRELOAD=$preload")
    for v in PARIO_HINTS PARIO_LOG PARIO_TRACE PARIO_TRACE_FILTER ASAN_OPTIONS UBSAN_OPTIONS; do
      [ -n "${!v:-}" ] && args+=(-x "$v")
    done
    exec mpiexec.openmpi "${args[@]}" -n "$np" "$@" ;;
  mpich)
    # One machine: UCX needs only self and shared memory; probing network devices is slow.
    export UCX_TLS=${UCX_TLS:-self,sm} UCX_WARN_UNUSED_ENV_VARS=n
    args=(-launcher fork -bind-to none)
    [ -n "$preload" ] && args+=(-genv LD_PRELOAD "$preload")
    exec mpiexec.mpich "${args[@]}" -n "$np" "$@" ;;
  *) echo "mpirun.sh: unknown MPI flavour '$flavour' (openmpi or mpich)" >&2; exit 2 ;;
esac
