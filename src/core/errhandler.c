/* File errhandlers. Handlers are host MPI errhandler objects (so MPI_Errhandler_free and
 * reference counting work); each file keeps its handler attached to a private MPI_COMM_SELF
 * duplicate, which holds the reference, and pario invokes the C function itself. */
#include "core/file.h"

#include <stdio.h>
#include <stdlib.h>

static pthread_mutex_t eh_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ehfn {
  MPI_Errhandler eh;
  MPI_File_errhandler_function *fn;
} *fns;
static int nfns, capfns;
static MPI_Errhandler default_eh = MPI_ERRHANDLER_NULL; /* NULL: MPI_ERRORS_RETURN */
static MPI_Comm default_holder = MPI_COMM_NULL;

int pario_eh_create(MPI_File_errhandler_function *fn, MPI_Errhandler *eh) {
  int rc = PMPI_Comm_create_errhandler((MPI_Comm_errhandler_function *)(void (*)(void))fn, eh);
  if (rc != MPI_SUCCESS) return rc;
  pthread_mutex_lock(&eh_lock);
  int i;
  for (i = 0; i < nfns && fns[i].eh != *eh; i++) {}
  if (i == nfns) {
    if (nfns == capfns) {
      int cap = capfns ? capfns * 2 : 8;
      struct ehfn *n = realloc(fns, sizeof *n * (size_t)cap);
      if (!n) { pthread_mutex_unlock(&eh_lock); return MPI_ERR_NO_MEM; }
      fns = n;
      capfns = cap;
    }
    nfns++;
  }
  fns[i].eh = *eh;
  fns[i].fn = fn;
  pthread_mutex_unlock(&eh_lock);
  return MPI_SUCCESS;
}

static MPI_File_errhandler_function *fn_of(MPI_Errhandler eh) {
  MPI_File_errhandler_function *fn = NULL;
  pthread_mutex_lock(&eh_lock);
  for (int i = 0; i < nfns; i++)
    if (fns[i].eh == eh) fn = fns[i].fn;
  pthread_mutex_unlock(&eh_lock);
  return fn;
}

static int holder_set(MPI_Comm *holder, MPI_Errhandler eh) {
  if (*holder == MPI_COMM_NULL) {
    int rc = PMPI_Comm_dup(MPI_COMM_SELF, holder);
    if (rc != MPI_SUCCESS) return rc;
  }
  return PMPI_Comm_set_errhandler(*holder, eh);
}

int pario_eh_set(pario_file *f, MPI_Errhandler eh) {
  int rc = holder_set(&f->ehcomm, eh);
  if (rc == MPI_SUCCESS) f->eh = eh;
  return rc;
}

int pario_eh_get(pario_file *f, MPI_Errhandler *eh) { return PMPI_Comm_get_errhandler(f->ehcomm, eh); }

int pario_eh_default_set(MPI_Errhandler eh) {
  pthread_mutex_lock(&eh_lock);
  int rc = holder_set(&default_holder, eh);
  if (rc == MPI_SUCCESS) default_eh = eh;
  pthread_mutex_unlock(&eh_lock);
  return rc;
}

int pario_eh_default_get(MPI_Errhandler *eh) {
  pthread_mutex_lock(&eh_lock);
  int rc = MPI_SUCCESS;
  if (default_holder == MPI_COMM_NULL) rc = holder_set(&default_holder, MPI_ERRORS_RETURN);
  if (rc == MPI_SUCCESS) rc = PMPI_Comm_get_errhandler(default_holder, eh);
  pthread_mutex_unlock(&eh_lock);
  return rc;
}

static MPI_Errhandler current_default(void) {
  pthread_mutex_lock(&eh_lock);
  MPI_Errhandler eh = default_eh == MPI_ERRHANDLER_NULL ? MPI_ERRORS_RETURN : default_eh;
  pthread_mutex_unlock(&eh_lock);
  return eh;
}

static int is_fatal(MPI_Errhandler eh) {
#if MPI_VERSION >= 4
  if (eh == MPI_ERRORS_ABORT) return 1;
#endif
  return eh == MPI_ERRORS_ARE_FATAL;
}

int pario_file_error(MPI_File fh, int code) {
  if (code == MPI_SUCCESS) return code;
  pario_file *f = fh != MPI_FILE_NULL && pario_registry_valid(fh) ? pario_file_of(fh) : NULL;
  MPI_Errhandler eh = f ? f->eh : current_default();
  if (eh == MPI_ERRORS_RETURN) return code;
  if (is_fatal(eh)) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    PMPI_Error_string(code, msg, &len);
    fprintf(stderr, "pario: fatal MPI-IO error (errhandler MPI_ERRORS_ARE_FATAL): %s\n", msg);
    PMPI_Abort(f ? f->comm : MPI_COMM_WORLD, code);
    return code;
  }
  MPI_File_errhandler_function *fn = fn_of(eh);
  if (fn) {
    MPI_File h = f ? fh : MPI_FILE_NULL;
    fn(&h, &code);
  }
  return code;
}

void pario_eh_finalize(void) {
  pthread_mutex_lock(&eh_lock);
  if (default_holder != MPI_COMM_NULL) PMPI_Comm_free(&default_holder);
  default_eh = MPI_ERRHANDLER_NULL;
  free(fns);
  fns = NULL;
  nfns = capfns = 0;
  pthread_mutex_unlock(&eh_lock);
}
