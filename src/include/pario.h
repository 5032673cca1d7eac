/* pario public header: what pario exports besides the MPI-IO API itself.
 * A program can test whether pario serves its MPI-IO with dlsym(RTLD_DEFAULT, "pario_version"). */
#ifndef PARIO_H
#define PARIO_H

#ifdef __cplusplus
extern "C" {
#endif

/* Version string of the pario library, e.g. "0.1.0". */
const char *pario_version(void);

/* Name of the MPI flavour pario was built against: "openmpi" or "mpich", or "abi" for a
 * build against the MPI standard ABI (mpi_abi.h), which serves any MPI implementing it. */
const char *pario_mpi_flavour(void);

/* The MPI implementation serving this process, asked at run time (MPI_Get_library_version;
 * callable before MPI_Init): "openmpi", "mpich", "impi" (Intel MPI) or "other". */
const char *pario_mpi_host(void);

/* The Adler-32 ("adler32") or CRC32C ("crc32c") checksum of len bytes of an open file from
 * offset (len 0: to the end of file), in *value; *bytes says how many bytes it covers (fewer
 * than len only at the end of file). For an x-rio:// file the server computes it (no data
 * travels); for a local file pario reads and sums it. It sums what the storage holds: writes
 * still buffered by pario reach it at MPI_File_sync. Not collective; the file must not be
 * opened MPI_MODE_WRONLY. Returns MPI_SUCCESS or an MPI error code (through the file's
 * error handler). Declared only where mpi.h was included first. */
#ifdef MPI_VERSION
int pario_file_checksum(MPI_File fh, const char *algo, MPI_Offset offset, MPI_Offset len, unsigned long *value,
                        MPI_Offset *bytes);
#endif

#ifdef __cplusplus
}
#endif
#endif
