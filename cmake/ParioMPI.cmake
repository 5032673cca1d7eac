# Included after project(): the MPI the build runs its tests with, and the flavour it records.
# Sets PARIO_MPIEXEC (the launcher), PARIO_MPICC_NAME and PARIO_MPIEXEC_NAME (what the installed
# package tells users to build and run with: names, not paths of this machine), PARIO_RUN
# (the launcher of every MPI test: PARIO_RUN NP [--pario LIB] PROGRAM ARGS..., see
# scripts/mpirun.sh) and, when the flavour was detected, PARIO_MPI itself (a normal variable
# over the cache entry "auto"), so the rest of the build only ever sees openmpi, mpich or abi.
#
# Two ways (see ParioCompiler.cmake for the compiler):
#  * Debian's side-by-side names: the compiler is mpicc.<flavour>, the launcher
#    mpiexec.<flavour>, the flavour is the one asked for.
#  * Any other MPI wrapper (PARIO_MPI=auto, or mpicc.<flavour> absent): CMake's FindMPI with
#    the plain mpicc/mpiexec; the flavour comes from mpi.h (Open MPI defines
#    OMPI_MAJOR_VERSION, MPICH and its derivatives MPICH_VERSION) and must match a flavour
#    asked for explicitly.
get_filename_component(PARIO_MPICC_NAME "${CMAKE_C_COMPILER}" NAME)
set(PARIO_MPI_ASKED "${PARIO_MPI}")
if(NOT PARIO_MPI STREQUAL "auto" AND PARIO_MPICC_NAME STREQUAL "mpicc.${PARIO_MPI}")
  find_program(PARIO_MPIEXEC NAMES mpiexec.${PARIO_MPI} REQUIRED)
  set(PARIO_RUN ${CMAKE_SOURCE_DIR}/scripts/mpirun.sh ${PARIO_MPI})
  set(PARIO_MPI_FINDMPI OFF)
else()
  set(PARIO_MPI_FINDMPI ON)
  include(CheckSymbolExists)
  check_symbol_exists(MPI_Init "mpi.h" PARIO_CC_IS_MPI_WRAPPER)
  if(NOT PARIO_CC_IS_MPI_WRAPPER)
    message(FATAL_ERROR "pario: the C compiler ${CMAKE_C_COMPILER} does not build MPI programs by "
                        "itself; pario builds with the MPI's compiler wrapper: configure a fresh "
                        "build directory with -DCMAKE_C_COMPILER=/path/to/mpicc")
  endif()
  # A wrapper named mpicc<suffix> comes with mpiexec<suffix> next to it (mpicc.mpich,
  # mpicc-4.1, ...): prefer that over whatever plain mpiexec FindMPI would meet first.
  string(REGEX REPLACE "^mpicc" "" _pario_suffix "${PARIO_MPICC_NAME}")
  if(NOT DEFINED MPIEXEC_EXECUTABLE AND _pario_suffix)
    get_filename_component(_pario_ccdir "${CMAKE_C_COMPILER}" DIRECTORY)
    set(_pario_names mpiexec${_pario_suffix})
    if(_pario_suffix STREQUAL "_abi")  # MPICH's mpicc_abi: its MPI's own launcher beside it
      list(APPEND _pario_names mpiexec)
    endif()
    find_program(MPIEXEC_EXECUTABLE NAMES ${_pario_names} HINTS ${_pario_ccdir} NO_DEFAULT_PATH)
    if(NOT MPIEXEC_EXECUTABLE)
      unset(MPIEXEC_EXECUTABLE CACHE)
    endif()
  endif()
  find_package(MPI REQUIRED COMPONENTS C)
  if(NOT MPIEXEC_EXECUTABLE)
    message(FATAL_ERROR "pario: FindMPI found no mpiexec for ${CMAKE_C_COMPILER}; give -DMPIEXEC_EXECUTABLE=...")
  endif()
  check_symbol_exists(OMPI_MAJOR_VERSION "mpi.h" PARIO_MPI_H_OPENMPI)
  check_symbol_exists(MPICH_VERSION "mpi.h" PARIO_MPI_H_MPICH)
  check_symbol_exists(MPI_ABI_VERSION "mpi.h" PARIO_MPI_H_ABI)  # the MPI standard ABI: ParioABI.cmake
  if(PARIO_MPI_H_ABI)
    set(_pario_found abi)
  elseif(PARIO_MPI_H_OPENMPI)
    set(_pario_found openmpi)
  elseif(PARIO_MPI_H_MPICH)
    set(_pario_found mpich)
  else()
    message(FATAL_ERROR "pario: ${CMAKE_C_COMPILER}'s mpi.h is neither Open MPI's nor MPICH's "
                        "(pario is built and tested with those two and their derivatives)")
  endif()
  if(NOT PARIO_MPI_ASKED STREQUAL "auto" AND NOT PARIO_MPI_ASKED STREQUAL _pario_found)
    message(FATAL_ERROR "pario: PARIO_MPI=${PARIO_MPI_ASKED}, but the compiler wrapper "
                        "${CMAKE_C_COMPILER} is ${_pario_found}'s "
                        "(use PARIO_MPI=auto or PARIO_MPI=${_pario_found})")
  endif()
  set(PARIO_MPI ${_pario_found})
  set(PARIO_MPIEXEC ${MPIEXEC_EXECUTABLE})
  set(_pario_launch ${PARIO_MPI})  # the scripts/mpirun.sh flavour; abi: its launcher's
  if(PARIO_MPI STREQUAL "abi")
    include(${CMAKE_CURRENT_LIST_DIR}/ParioABI.cmake)
  endif()
  message(STATUS "pario: ${PARIO_MPI} (MPI ${MPI_C_VERSION}) through FindMPI: ${CMAKE_C_COMPILER}, "
                 "${PARIO_MPIEXEC}")
  # scripts/mpirun.sh launches mpiexec.<flavour>: give it this MPI's launcher under that name.
  set(_pario_bin ${CMAKE_BINARY_DIR}/mpi-launcher)
  file(MAKE_DIRECTORY ${_pario_bin})
  # A script, not a symbolic link: MPICH's Hydra looks for hydra_pmi_proxy beside the path it
  # was started as, so it must be started under its own.
  file(CONFIGURE OUTPUT ${_pario_bin}/mpiexec.${_pario_launch} @ONLY CONTENT
"#!/bin/sh
exec \"${PARIO_MPIEXEC}\" \"\$@\"
")
  file(CONFIGURE OUTPUT ${_pario_bin}/pario-mpirun @ONLY CONTENT
"#!/bin/sh
# scripts/mpirun.sh ${_pario_launch} with this build's MPI launcher (${PARIO_MPIEXEC}).
PATH=\"${_pario_bin}:\$PATH\"; export PATH
exec \"${CMAKE_SOURCE_DIR}/scripts/mpirun.sh\" ${_pario_launch} \"\$@\"
")
  file(CHMOD ${_pario_bin}/pario-mpirun ${_pario_bin}/mpiexec.${_pario_launch} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
       GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  set(PARIO_RUN ${_pario_bin}/pario-mpirun)
endif()
get_filename_component(PARIO_MPIEXEC_NAME "${PARIO_MPIEXEC}" NAME)
