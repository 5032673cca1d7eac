/* MPI_Init / MPI_Init_thread: ask the host MPI for MPI_THREAD_MULTIPLE so pario's I/O threads
 * may complete requests while the application computes, and report the level really
 * provided. PARIO_THREAD_LEVEL=asked keeps the application's own request (then nonblocking
 * I/O completes inside the call unless the application asked for MULTIPLE itself). */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include "core/file.h"

typedef int (*init_thread_fn)(int *, char ***, int, int *);

static int host_init_thread(int *argc, char ***argv, int required, int *provided) {
  init_thread_fn host = (init_thread_fn)dlsym(RTLD_NEXT, "PMPI_Init_thread");
  if (!host) return MPI_ERR_OTHER;
  const char *lvl = getenv("PARIO_THREAD_LEVEL");
  int want = lvl && !strcmp(lvl, "asked") ? required : MPI_THREAD_MULTIPLE;
  if (required > want) want = required;
  int rc = host(argc, argv, want, provided);
  /* pario's process-wide state (error strings of calls before any open too) ends with
   * MPI_Finalize; open arms it as well, for programs whose MPI_Init pario does not see. */
  if (rc == MPI_SUCCESS) pario_finalize_arm();
  return rc;
}

PARIO_EXPORT int PMPI_Init(int *argc, char ***argv) {
  int provided;
  return host_init_thread(argc, argv, MPI_THREAD_SINGLE, &provided);
}
PARIO_WEAK_ALIAS(MPI_Init)

PARIO_EXPORT int PMPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int dummy;
  return host_init_thread(argc, argv, required, provided ? provided : &dummy);
}
PARIO_WEAK_ALIAS(MPI_Init_thread)
