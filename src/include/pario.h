/* pario public header: what pario exports besides the MPI-IO API itself.
 * A program can test whether pario serves its MPI-IO with dlsym(RTLD_DEFAULT, "pario_version"). */
#ifndef PARIO_H
#define PARIO_H

#ifdef __cplusplus
extern "C" {
#endif

/* Version string of the pario library, e.g. "0.1.0". */
const char *pario_version(void);

/* Name of the MPI flavour pario was built against: "openmpi" or "mpich". */
const char *pario_mpi_flavour(void);

#ifdef __cplusplus
}
#endif
#endif
