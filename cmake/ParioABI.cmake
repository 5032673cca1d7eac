# The MPI standard ABI (MPI-5's mpi_abi.h): PARIO_MPI=abi. Built with an ABI compiler wrapper
# (MPICH 5's mpicc_abi: -DMPI_ABI, mpi_abi.h, libmpi_abi.so), the one libpario.so serves every
# MPI that implements the ABI: it uses only the standard's handles, constants and functions
# (tests/abi checks its imports), and what differs between the MPIs below it is decided at
# run time (src/core/hostmpi.c). Included by ParioMPI.cmake once mpi.h was found to be the
# ABI's. mpi_abi.h names no implementation, so the launcher decides how tests are started:
# sets _pario_launch to the scripts/mpirun.sh flavour of PARIO_MPIEXEC (openmpi or mpich).
execute_process(COMMAND ${PARIO_MPIEXEC} --version OUTPUT_VARIABLE _pario_lv ERROR_VARIABLE _pario_lv
                TIMEOUT 30 RESULT_VARIABLE _pario_lrc)
if(_pario_lv MATCHES "HYDRA")
  set(_pario_launch mpich)
elseif(_pario_lv MATCHES "Open MPI|OpenRTE|PRRTE|prte")
  set(_pario_launch openmpi)
else()
  message(FATAL_ERROR "pario: PARIO_MPI=abi: ${PARIO_MPIEXEC} --version names neither MPICH's Hydra nor "
                      "Open MPI's launcher; give the launcher of an MPI that implements the ABI "
                      "with -DMPIEXEC_EXECUTABLE=...")
endif()
message(STATUS "pario: the MPI standard ABI (MPI_ABI_VERSION in mpi.h); tests run with "
               "${PARIO_MPIEXEC} (${_pario_launch}'s launcher)")
