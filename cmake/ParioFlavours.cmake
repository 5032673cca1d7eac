# Included before project() (by ParioCompiler.cmake): the table of MPI flavours,
# cmake/flavours.txt (its header says what each column means). Sets PARIO_FLAVOURS (every
# flavour's name) and, per flavour F, PARIO_FLAVOUR_F_FAMILY, _WHERE, _MPICC, _MPIEXEC, _PIP and
# _ENV (lists; "-" in the table is empty here). Then, for the flavour PARIO_MPI asks for:
# PARIO_MPI_FAMILY, PARIO_MPI_WHERE and, for a venv flavour, PARIO_MPI_ROOT (cache: the venv,
# BUILD/mpi/<flavour> beside this build tree by default) and its environment applied to this
# configure run (ENV{...}); PARIO_MPI naming no flavour is a one-line error.
file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/flavours.txt _pario_rows REGEX "^[a-z]")
set(PARIO_FLAVOURS "")
foreach(_pario_row IN LISTS _pario_rows)
  string(REGEX REPLACE "[ \t]+" ";" _pario_row "${_pario_row}")
  list(GET _pario_row 0 _pario_f)
  list(APPEND PARIO_FLAVOURS ${_pario_f})
  set(_pario_i 1)
  foreach(_pario_col FAMILY WHERE MPICC MPIEXEC PIP ENV)
    list(GET _pario_row ${_pario_i} _pario_v)
    if(_pario_v STREQUAL "-")
      set(_pario_v "")
    endif()
    string(REPLACE "," ";" _pario_v "${_pario_v}")
    set(PARIO_FLAVOUR_${_pario_f}_${_pario_col} "${_pario_v}")
    math(EXPR _pario_i "${_pario_i} + 1")
  endforeach()
endforeach()

if(PARIO_MPI STREQUAL "auto")
  set(PARIO_MPI_WHERE auto)
elseif(PARIO_MPI STREQUAL "abi")  # the MPI standard ABI, any MPI that implements it (ParioABI.cmake)
  set(PARIO_MPI_WHERE abi)
  set(PARIO_MPI_FAMILY abi)
elseif(NOT PARIO_MPI IN_LIST PARIO_FLAVOURS)
  string(REPLACE ";" ", " _pario_known "${PARIO_FLAVOURS}")
  message(FATAL_ERROR "pario: PARIO_MPI=${PARIO_MPI} names no known MPI (${_pario_known}, abi or auto; "
                      "see cmake/flavours.txt)")
else()
  set(PARIO_MPI_FAMILY ${PARIO_FLAVOUR_${PARIO_MPI}_FAMILY})
  set(PARIO_MPI_WHERE ${PARIO_FLAVOUR_${PARIO_MPI}_WHERE})
endif()
if(PARIO_MPI_WHERE STREQUAL "venv")
  get_filename_component(_pario_root "${CMAKE_BINARY_DIR}/../mpi/${PARIO_MPI}" ABSOLUTE)
  set(PARIO_MPI_ROOT "${_pario_root}" CACHE PATH "Where ${PARIO_MPI}'s MPI is (a venv of scripts/install-deps.sh)")
  if(NOT EXISTS "${PARIO_MPI_ROOT}/bin/${PARIO_FLAVOUR_${PARIO_MPI}_MPICC}")
    message(FATAL_ERROR "pario: ${PARIO_MPI}'s MPI is not installed: no ${PARIO_MPI_ROOT}/bin/"
                        "${PARIO_FLAVOUR_${PARIO_MPI}_MPICC} (scripts/install-deps.sh installs it, "
                        "or give -DPARIO_MPI_ROOT=<its prefix>)")
  endif()
  # NAME=VALUE pairs the wrapper and the launcher need (@ROOT@: the venv).
  set(PARIO_MPI_ENV "")
  foreach(_pario_kv IN LISTS PARIO_FLAVOUR_${PARIO_MPI}_ENV)
    string(REPLACE "@ROOT@" "${PARIO_MPI_ROOT}" _pario_kv "${_pario_kv}")
    string(REGEX MATCH "^[^=]+" _pario_k "${_pario_kv}")
    string(REGEX REPLACE "^[^=]+=" "" _pario_v "${_pario_kv}")
    set(ENV{${_pario_k}} "${_pario_v}")
    list(APPEND PARIO_MPI_ENV "${_pario_kv}")
  endforeach()
endif()
