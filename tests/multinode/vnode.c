/* libpario-vnode.so, a test shim preloaded ahead of libpario: makes MPICH's virtual nodes
 * (MPIR_CVAR_NUM_CLIQUES) visible in MPI_Get_processor_name. pario takes equal processor
 * names for one host and then never asks MPI_Comm_split_type (core/open.c), so on one
 * machine it would see one node whatever the cliques. Here every process's name becomes
 * "HOST-vnodeL", L the lowest MPI_COMM_WORLD rank of its MPI_COMM_TYPE_SHARED communicator,
 * found once inside MPI_Init / MPI_Init_thread (every rank is there). See README.md. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int vnode = -1; /* lowest world rank of this process's shared-memory communicator */

static void find_vnode(void) {
  int me = 0, lead;
  MPI_Comm node;
  PMPI_Comm_rank(MPI_COMM_WORLD, &me);
  lead = me;
  if (PMPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
    PMPI_Allreduce(&me, &lead, 1, MPI_INT, MPI_MIN, node);
    PMPI_Comm_free(&node);
  }
  vnode = lead;
}

/* The next definition in the lookup order: libpario's when it is preloaded after this
 * shim, else the MPI library's. */
static void *next(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) fprintf(stderr, "libpario-vnode: %s not found\n", name);
  return f;
}

int MPI_Init(int *argc, char ***argv) {
  int (*init)(int *, char ***);
  *(void **)&init = next("MPI_Init");
  int rc = init ? init(argc, argv) : MPI_ERR_OTHER;
  if (rc == MPI_SUCCESS) find_vnode();
  return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided) {
  int (*init)(int *, char ***, int, int *);
  *(void **)&init = next("MPI_Init_thread");
  int rc = init ? init(argc, argv, required, provided) : MPI_ERR_OTHER;
  if (rc == MPI_SUCCESS) find_vnode();
  return rc;
}

int PMPI_Get_processor_name(char *name, int *resultlen) {
  char host[MPI_MAX_PROCESSOR_NAME];
  if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "localhost");
  host[sizeof host - 1] = 0;
  if (vnode < 0) snprintf(name, MPI_MAX_PROCESSOR_NAME, "%s", host);
  else snprintf(name, MPI_MAX_PROCESSOR_NAME, "%.*s-vnode%d", MPI_MAX_PROCESSOR_NAME - 24, host, vnode);
  *resultlen = (int)strlen(name);
  return MPI_SUCCESS;
}

int MPI_Get_processor_name(char *name, int *resultlen) { return PMPI_Get_processor_name(name, resultlen); }
