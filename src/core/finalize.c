/* The finalize hook: an attribute on MPI_COMM_SELF whose delete callback runs at the start of
 * MPI_Finalize (the standard's guarantee; ROMIO ends its own state the same way). It runs the
 * layers' finalize hooks (the engine stops its worker threads) and frees core's process-wide
 * state, so nothing of pario outlives the MPI library it uses. */
#include "core/file.h"
#include "view/typemap.h"

static int keyval = MPI_KEYVAL_INVALID;
static pthread_once_t armed = PTHREAD_ONCE_INIT;

static int at_finalize(MPI_Comm comm, int key, void *value, void *extra) {
  (void)comm, (void)key, (void)value, (void)extra;
  pario_layers_finalize();
  pario_typemap_finalize();
  pario_eh_finalize();
  pario_err_finalize();
  PMPI_Comm_free_keyval(&keyval);
  return MPI_SUCCESS;
}

static void arm(void) {
  if (PMPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, at_finalize, &keyval, NULL) != MPI_SUCCESS) return;
  if (PMPI_Comm_set_attr(MPI_COMM_SELF, keyval, NULL) != MPI_SUCCESS) PMPI_Comm_free_keyval(&keyval);
}

void pario_finalize_arm(void) { pthread_once(&armed, arm); }
