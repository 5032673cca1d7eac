/* Errors: errno -> MPI error class, and MPI error codes whose strings name the operation,
 * the file and the system error. Codes are recycled per class from a small ring so a long
 * run that fails often does not exhaust the MPI library's dynamic error codes. */
#include "core/common.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define RING 16
#define MAXCLASSES 64

static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
#define MSGLEN 512
#define SHORT_MSG 256 /* the shortest MPI_MAX_ERROR_STRING of the MPIs pario runs on */
static struct {
  int cls, n, next;
  int codes[RING];
  char (*msgs)[MSGLEN]; /* message of codes[i], for hosts whose error strings are unreliable */
} ring[MAXCLASSES];
static int nring;

/* A code of class cls for msg: a new one while the class's ring has room, else the oldest. */
static int code_for(int cls, const char *msg) {
  int i, k;
  for (i = 0; i < nring && ring[i].cls != cls; i++) {}
  if (i == nring) {
    if (nring == MAXCLASSES) return cls;
    ring[i].msgs = calloc(RING, MSGLEN);
    if (!ring[i].msgs) return cls;
    ring[i].cls = cls;
    nring++;
  }
  if (ring[i].n < RING) {
    int code;
    if (PMPI_Add_error_code(cls, &code) != MPI_SUCCESS) return cls;
    k = ring[i].n++;
    ring[i].codes[k] = code;
  } else {
    k = ring[i].next;
    ring[i].next = (ring[i].next + 1) % RING;
  }
  snprintf(ring[i].msgs[k], MSGLEN, "%s", msg);
  return ring[i].codes[k];
}

void pario_err_finalize(void) {
  pthread_mutex_lock(&err_lock);
  for (int i = 0; i < nring; i++) free(ring[i].msgs);
  memset(ring, 0, sizeof ring);
  nring = 0;
  pthread_mutex_unlock(&err_lock);
}

int pario_err_lookup(int code, char *buf, int *len) {
  int found = 0;
  pthread_mutex_lock(&err_lock);
  for (int i = 0; i < nring && !found; i++)
    for (int k = 0; k < ring[i].n && !found; k++)
      if (ring[i].codes[k] == code) {
        *len = snprintf(buf, MPI_MAX_ERROR_STRING, "%s", ring[i].msgs[k]);
        found = 1;
      }
  pthread_mutex_unlock(&err_lock);
  return found;
}

int pario_err(int errclass, const char *op, const char *path, int syserr, const char *fmt, ...) {
  char msg[MPI_MAX_ERROR_STRING], detail[MPI_MAX_ERROR_STRING - 32]; /* a driver's reason may be long */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof detail, fmt, ap);
  va_end(ap);
  /* The cause first and the file last, its middle elided to fit: Open MPI cuts error
   * strings at 256 characters, and the cause must survive a long path. */
  int head = syserr ? snprintf(msg, sizeof msg, "%s: %s: %s", op, detail, strerror(syserr))
                    : snprintf(msg, sizeof msg, "%s: %s", op, detail);
  if (path && head >= 0 && head < SHORT_MSG - 16) {
    int room = SHORT_MSG - 1 - head - 2, len = (int)strlen(path);
    if (len <= room)
      snprintf(msg + head, sizeof msg - (size_t)head, ": %s", path);
    else /* keep the start (where it is) and the end (the name), "..." between */
      snprintf(msg + head, sizeof msg - (size_t)head, ": %.*s...%s", (room - 3) / 2, path,
               path + len - (room - 3 - (room - 3) / 2));
  }
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (!initialized || finalized) return errclass;
  pthread_mutex_lock(&err_lock);
  int code = code_for(errclass, msg);
  if (code != errclass) PMPI_Add_error_string(code, msg);
  pthread_mutex_unlock(&err_lock);
  pario_log(1, "%s", msg);
  return code;
}

int pario_errno_class(int e) {
  switch (e) {
    case 0: return MPI_SUCCESS;
    case ENOENT:
    case ENOTDIR: return MPI_ERR_NO_SUCH_FILE;
    case EACCES:
    case EPERM: return MPI_ERR_ACCESS;
    case EEXIST: return MPI_ERR_FILE_EXISTS;
    case ENOSPC: return MPI_ERR_NO_SPACE;
#ifdef EDQUOT
    case EDQUOT: return MPI_ERR_QUOTA;
#endif
    case EROFS: return MPI_ERR_READ_ONLY;
    case ENAMETOOLONG:
    case EISDIR:
    case ELOOP: return MPI_ERR_BAD_FILE;
    case ETXTBSY:
    case EBUSY: return MPI_ERR_FILE_IN_USE;
    case ENOMEM: return MPI_ERR_NO_MEM;
    case EFBIG:
    case EOVERFLOW:
    case EINVAL: return MPI_ERR_ARG;
    default: return MPI_ERR_IO;
  }
}

int pario_err_class(int code) {
  int cls = code;
  if (code != MPI_SUCCESS) PMPI_Error_class(code, &cls);
  return cls;
}

/* Diagnostics level from PARIO_LOG (0 = silent, default). */
static int pario_log_level(void) {
  static int level = -1;
  if (level < 0) {
    const char *s = getenv("PARIO_LOG");
    level = s ? atoi(s) : 0;
  }
  return level;
}

/* One line, one write(2): stderr is unbuffered, so fputs + vfprintf + fputc were three writes,
 * and the ranks (and threads) sharing one stderr put their pieces between them ("pario:
 * pario: MPI_File_set_view: ..."). A pipe or an O_APPEND file keeps one write of up to
 * PIPE_BUF (at least 4096) bytes whole. */
void pario_log(int level, const char *fmt, ...) {
  if (pario_log_level() < level) return;
  char line[2048];
  int n = snprintf(line, sizeof line, "pario: ");
  va_list ap;
  va_start(ap, fmt);
  int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
  va_end(ap);
  n = m < 0 ? n : PARIO_MIN(n + m, (int)sizeof line - 2); /* cut long messages */
  line[n++] = '\n';
  for (int done = 0; done < n;) {
    ssize_t w = write(STDERR_FILENO, line + done, (size_t)(n - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) break;
    done += (int)w;
  }
}
