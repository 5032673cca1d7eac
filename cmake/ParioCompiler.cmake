# Included before project(): picks the C compiler, which is always an MPI compiler wrapper, so
# every target builds against one MPI without naming its flags. The flavours are the rows of
# cmake/flavours.txt (ParioFlavours.cmake).
#   PARIO_MPI=<debian flavour>  Debian's side-by-side wrapper mpicc.<flavour> (openmpi, mpich).
#                            Where that name does not exist (an MPI of one's own, e.g. from a
#                            module system), the plain mpicc, which ParioMPI.cmake then checks is
#                            that flavour's family.
#   PARIO_MPI=<venv flavour> the wrapper in PARIO_MPI_ROOT/bin (openmpi5, mpich5, impi); where
#                            the MPI needs variables set (Intel MPI's I_MPI_ROOT), a script in
#                            the build tree that sets them and runs it, so the build needs none.
#   PARIO_MPI=abi            MPICH 5's mpicc_abi (MPI_C_COMPILER, or on PATH): the MPI standard ABI.
#   PARIO_MPI=auto           MPI_C_COMPILER when given, else the plain mpicc on PATH; the flavour
#                            is detected (ParioMPI.cmake).
# A CMAKE_C_COMPILER given on the command line is used as it is; it must be an MPI wrapper.
include(${CMAKE_CURRENT_LIST_DIR}/ParioFlavours.cmake)
if(NOT CMAKE_C_COMPILER)
  if(PARIO_MPI STREQUAL "abi")  # the MPI standard ABI's wrapper (MPICH 5's; cmake/ParioABI.cmake)
    find_program(PARIO_MPICC NAMES mpicc_abi)
  elseif(PARIO_MPI_WHERE STREQUAL "debian")
    find_program(PARIO_MPICC NAMES ${PARIO_FLAVOUR_${PARIO_MPI}_MPICC})
  elseif(PARIO_MPI_WHERE STREQUAL "venv")
    set(PARIO_MPICC "${PARIO_MPI_ROOT}/bin/${PARIO_FLAVOUR_${PARIO_MPI}_MPICC}")
    if(PARIO_MPI_ENV)
      set(_pario_cc "${CMAKE_BINARY_DIR}/mpi-launcher/${PARIO_FLAVOUR_${PARIO_MPI}_MPICC}")
      list(TRANSFORM PARIO_MPI_ENV PREPEND "export " OUTPUT_VARIABLE _pario_exports)
      list(JOIN _pario_exports "\n" _pario_exports)
      file(WRITE "${_pario_cc}" "#!/bin/sh\n# ${PARIO_MPICC} with the variables it needs\n"
                                "${_pario_exports}\nexec \"${PARIO_MPICC}\" \"$@\"\n")
      file(CHMOD "${_pario_cc}" PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ
           GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)
      set(PARIO_MPICC "${_pario_cc}")
    endif()
  endif()
  if(PARIO_MPICC)
    set(CMAKE_C_COMPILER ${PARIO_MPICC})
  elseif(MPI_C_COMPILER)
    set(CMAKE_C_COMPILER ${MPI_C_COMPILER})
  else()
    find_program(PARIO_MPICC_PLAIN NAMES mpicc)
    if(NOT PARIO_MPICC_PLAIN)
      message(FATAL_ERROR "pario: no MPI compiler wrapper: neither mpicc.${PARIO_MPI} nor mpicc "
                          "is on PATH (load your MPI, or give -DMPI_C_COMPILER=/path/to/mpicc)")
    endif()
    set(CMAKE_C_COMPILER ${PARIO_MPICC_PLAIN})
  endif()
endif()
