# Included after project(): the MPI the build runs its tests with, and the flavour it records.
# Sets PARIO_MPIEXEC (the launcher), PARIO_MPICC_NAME and PARIO_MPIEXEC_NAME (what the installed
# package tells users to build and run with: names, not paths of this machine), PARIO_RUN
# (the launcher of every MPI test: PARIO_RUN NP [--pario LIB] PROGRAM ARGS..., see
# scripts/mpirun.sh), PARIO_MPI_FAMILY (openmpi or mpich: whose mpi.h and launcher) and, when
# the flavour was detected, PARIO_MPI itself (a normal variable over the cache entry "auto").
# PARIO_MPI is the flavour (a row of cmake/flavours.txt: openmpi, mpich, openmpi5, ...; or abi,
# the MPI standard ABI, cmake/ParioABI.cmake);
# what depends on the MPI's kind of mpi.h or launcher asks PARIO_MPI_FAMILY.
#
# Three ways (see ParioCompiler.cmake for the compiler):
#  * Debian's side-by-side names: the compiler is mpicc.<flavour>, the launcher
#    mpiexec.<flavour>, the flavour is the one asked for.
#  * A venv flavour (openmpi5, mpich5, impi): the wrapper and launcher in PARIO_MPI_ROOT/bin;
#    the family is checked from mpi.h as below.
#  * Any other MPI wrapper (PARIO_MPI=auto, or mpicc.<flavour> absent): CMake's FindMPI with
#    the plain mpicc/mpiexec; the family comes from mpi.h (Open MPI defines
#    OMPI_MAJOR_VERSION, MPICH and its derivatives MPICH_VERSION) and must match the flavour
#    asked for explicitly; with auto, the flavour is the family's Debian name.
get_filename_component(PARIO_MPICC_NAME "${CMAKE_C_COMPILER}" NAME)
set(PARIO_MPI_ASKED "${PARIO_MPI}")
if(PARIO_MPI_WHERE STREQUAL "debian" AND PARIO_MPICC_NAME STREQUAL PARIO_FLAVOUR_${PARIO_MPI}_MPICC)
  find_program(PARIO_MPIEXEC NAMES ${PARIO_FLAVOUR_${PARIO_MPI}_MPIEXEC} REQUIRED)
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
  # mpicc-4.1, a plain mpicc in a venv's bin): prefer that over whatever mpiexec FindMPI
  # would meet first on PATH.
  string(REGEX REPLACE "^mpicc" "" _pario_suffix "${PARIO_MPICC_NAME}")
  if(PARIO_MPI_WHERE STREQUAL "venv" AND NOT DEFINED MPIEXEC_EXECUTABLE)
    set(MPIEXEC_EXECUTABLE "${PARIO_MPI_ROOT}/bin/${PARIO_FLAVOUR_${PARIO_MPI}_MPIEXEC}" CACHE FILEPATH "")
  elseif(NOT DEFINED MPIEXEC_EXECUTABLE)
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
  if(PARIO_MPI_ASKED STREQUAL "auto")
    set(PARIO_MPI ${_pario_found})
    set(PARIO_MPI_FAMILY ${_pario_found})
  elseif(NOT PARIO_MPI_FAMILY STREQUAL _pario_found)
    message(FATAL_ERROR "pario: PARIO_MPI=${PARIO_MPI_ASKED} is of the ${PARIO_MPI_FAMILY} family, but the "
                        "compiler wrapper ${CMAKE_C_COMPILER} is ${_pario_found}'s "
                        "(use PARIO_MPI=auto or PARIO_MPI=${_pario_found})")
  endif()
  set(PARIO_MPIEXEC ${MPIEXEC_EXECUTABLE})
  set(_pario_launch ${PARIO_MPI})  # the scripts/mpirun.sh flavour; abi: its launcher's
  if(PARIO_MPI STREQUAL "abi")
    include(${CMAKE_CURRENT_LIST_DIR}/ParioABI.cmake)
  endif()
  message(STATUS "pario: ${PARIO_MPI} (MPI ${MPI_C_VERSION}) through FindMPI: ${CMAKE_C_COMPILER}, "
                 "${PARIO_MPIEXEC}")
  # scripts/mpirun.sh launches a Debian flavour's mpiexec.<flavour> from PATH: give it this
  # MPI's launcher under that name; a venv flavour's from PARIO_MPI_ROOT.
  set(_pario_bin ${CMAKE_BINARY_DIR}/mpi-launcher)
  file(MAKE_DIRECTORY ${_pario_bin})
  if(PARIO_MPI_WHERE STREQUAL "venv")
    set(_pario_how "PARIO_MPI_ROOT=\"${PARIO_MPI_ROOT}\"; export PARIO_MPI_ROOT")
  else()
    # mpiexec.<flavour> (abi: its launcher's family) on PATH. A script, not a symbolic link:
    # MPICH's Hydra looks for hydra_pmi_proxy beside the path it was started as, so it must be
    # started under its own.
    if(PARIO_MPI STREQUAL "abi")
      set(_pario_xname mpiexec.${_pario_launch})
    else()
      set(_pario_xname ${PARIO_FLAVOUR_${PARIO_MPI}_MPIEXEC})
    endif()
    file(CONFIGURE OUTPUT ${_pario_bin}/${_pario_xname} @ONLY CONTENT
"#!/bin/sh
exec \"${PARIO_MPIEXEC}\" \"\$@\"
")
    file(CHMOD ${_pario_bin}/${_pario_xname} PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
         GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
    set(_pario_how "PATH=\"${_pario_bin}:\$PATH\"; export PATH")
  endif()
  file(CONFIGURE OUTPUT ${_pario_bin}/pario-mpirun @ONLY CONTENT
"#!/bin/sh
# scripts/mpirun.sh ${_pario_launch} with this build's MPI launcher (${PARIO_MPIEXEC}).
${_pario_how}
exec \"${CMAKE_SOURCE_DIR}/scripts/mpirun.sh\" ${_pario_launch} \"\$@\"
")
  file(CHMOD ${_pario_bin}/pario-mpirun PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE
       GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
  set(PARIO_RUN ${_pario_bin}/pario-mpirun)
endif()
get_filename_component(PARIO_MPIEXEC_NAME "${PARIO_MPIEXEC}" NAME)
