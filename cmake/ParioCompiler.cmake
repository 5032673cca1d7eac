# Included before project(): picks the C compiler, which is always an MPI compiler wrapper, so
# every target builds against one MPI without naming its flags.
#   PARIO_MPI=openmpi|mpich  Debian's side-by-side wrapper mpicc.<flavour>. Where that name does
#                            not exist (an MPI of one's own, e.g. from a module system), the
#                            plain mpicc, which ParioMPI.cmake then checks is that flavour.
#   PARIO_MPI=auto           MPI_C_COMPILER when given, else the plain mpicc on PATH; the flavour
#                            is detected (ParioMPI.cmake).
# A CMAKE_C_COMPILER given on the command line is used as it is; it must be an MPI wrapper.
if(NOT CMAKE_C_COMPILER)
  if(PARIO_MPI STREQUAL "abi")  # the MPI standard ABI's wrapper (MPICH 5's; cmake/ParioABI.cmake)
    find_program(PARIO_MPICC NAMES mpicc_abi)
  elseif(NOT PARIO_MPI STREQUAL "auto")
    find_program(PARIO_MPICC NAMES mpicc.${PARIO_MPI})
  endif()
  if(PARIO_MPICC AND NOT PARIO_MPI STREQUAL "auto")
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
