/* pario-bench measurement results and MPI-IO helpers: classifying MPI errors (unsupported vs
 * failed), agreeing a measurement's outcome across ranks, printing the table row and appending
 * the JSON line of the results contract (bench/README.md), file open/remove/corrupt helpers. */
#include "bench.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

void res_init(result *r, const char *suite, const char *test) {
  memset(r, 0, sizeof *r);
  r->suite = suite;
  snprintf(r->test, sizeof r->test, "%s", test);
  jo_init(&r->params);
  jo_init(&r->metrics);
  r->verified = -1;
  r->seconds = r->mbps = -1;
}

static void res_set_error(result *r, int status, const char *msg) {
  if (r->status != ST_OK) return; /* the first error is the one that explains the rest */
  r->status = status;
  snprintf(r->error, sizeof r->error, "%s", msg);
}

int res_mpi(result *r, int rc, const char *what) {
  if (rc == MPI_SUCCESS) return 0;
  int cls = rc, len = 0;
  char text[MPI_MAX_ERROR_STRING], msg[sizeof r->error];
  MPI_Error_class(rc, &cls);
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) snprintf(text, sizeof text, "error %d", rc);
  snprintf(msg, sizeof msg, "%.150s: %.350s", what, text);
  res_set_error(r, cls == MPI_ERR_UNSUPPORTED_OPERATION ? ST_UNSUPPORTED : ST_FAILED, msg);
  return 1;
}

void res_fail(result *r, const char *fmt, ...) {
  char msg[sizeof r->error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  res_set_error(r, ST_FAILED, msg);
}

void res_mismatch(result *r, const char *fmt, ...) {
  char msg[sizeof r->error], full[sizeof r->error];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(full, sizeof full, "verification failed: %.480s", msg);
  r->verified = 0;
  res_set_error(r, ST_FAILED, full);
}

void res_verified(result *r) {
  if (r->verified != 0) r->verified = 1;
}

/* Brings the error message of the lowest rank with the worst status to rank 0. */
static void res_fetch_error(result *r, int worst) {
  int cand = r->status == worst && !r->borrowed ? B.rank : B.size, who = 0;
  MPI_Allreduce(&cand, &who, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (who == 0 || who == B.size) return;
  if (B.rank == who) MPI_Send(r->error, (int)sizeof r->error, MPI_CHAR, 0, 77, MPI_COMM_WORLD);
  if (B.rank == 0) {
    char msg[sizeof r->error];
    MPI_Recv(msg, (int)sizeof msg, MPI_CHAR, who, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    snprintf(r->error, sizeof r->error, "rank %d: %.480s", who, msg);
  }
}

int res_ok_everywhere(result *r) {
  int worst = 0;
  MPI_Allreduce(&r->status, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst != ST_OK && r->status != worst) {
    r->status = worst;
    r->borrowed = 1;
    snprintf(r->error, sizeof r->error, "failed on another rank");
  }
  return worst == ST_OK;
}

void res_agree(result *r) {
  /* verified: false (0) < true (1) < nothing verified (2) */
  int v = r->verified < 0 ? 2 : r->verified, vmin = 2, mine = r->status, worst = 0;
  MPI_Allreduce(&v, &vmin, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  r->verified = vmin == 2 ? -1 : vmin;
  MPI_Allreduce(&mine, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst == ST_OK) return;
  res_fetch_error(r, worst);
  r->status = worst;
}

static void iso_time(char *buf, size_t n) {
  time_t t = time(NULL);
  struct tm tm;
  gmtime_r(&t, &tm);
  strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void res_write_json(result *r) {
  static const char *const st[] = {"ok", "unsupported", "failed"};
  char when[32];
  iso_time(when, sizeof when);
  jobj o;
  jo_init(&o);
  jo_str(&o, "suite", r->suite);
  jo_str(&o, "test", r->test);
  jo_str(&o, "impl", B.impl);
  jo_str(&o, "impl_version", B.impl_version);
  jo_str(&o, "mpi", B.mpi);
  jo_str(&o, "mpi_version", B.mpi_version);
  jo_int(&o, "ranks", B.size);
  jo_raw(&o, "params", jo_close(&r->params));
  jo_raw(&o, "metrics", jo_close(&r->metrics));
  if (r->verified < 0) jo_raw(&o, "verified", "null");
  else jo_bool(&o, "verified", r->verified);
  jo_str(&o, "status", st[r->status]);
  jo_str(&o, "error", r->status == ST_OK ? NULL : r->error);
  jo_str(&o, "time", when);
  FILE *f = fopen(B.results, "a");
  if (!f) {
    perror(B.results);
    B.failures++;
  } else {
    fprintf(f, "%s\n", jo_close(&o));
    fclose(f);
  }
  jo_free(&o);
}

static void res_print_row(result *r) {
  static const char *const st[] = {"ok", "UNSUPPORTED", "FAILED"};
  static const char *const ver[] = {"NO", "yes"};
  if (!B.table_suite || strcmp(B.table_suite, r->suite) != 0) {
    printf("\n== %s  (impl %s %s, %s, %d ranks)\n", r->suite, B.impl, B.impl_version, B.mpi,
           B.size);
    printf("%-24s %-46s %10s %10s %-8s %-11s %s\n", "test", "parameters", "seconds", "MB/s",
           "verified", "status", "notes");
    B.table_suite = r->suite;
  }
  char secs[24] = "-", mbps[24] = "-";
  if (r->status == ST_OK && r->seconds >= 0) snprintf(secs, sizeof secs, "%.6f", r->seconds);
  if (r->status == ST_OK && r->mbps >= 0) snprintf(mbps, sizeof mbps, "%.1f", r->mbps);
  printf("%-24s %-46s %10s %10s %-8s %-11s %s\n", r->test, r->label, secs, mbps,
         r->verified < 0 ? "-" : ver[r->verified], st[r->status],
         r->status == ST_OK ? r->note : "");
  fflush(stdout);
}

void res_emit(result *r) {
  if (r->status == ST_FAILED) B.failures++;
  if (B.rank == 0) {
    res_print_row(r);
    res_write_json(r);
    if (r->status != ST_OK)
      fprintf(stderr, "pario-bench %s %s: %s: %s\n", r->suite, r->test,
              r->status == ST_FAILED ? "FAILED" : "unsupported", r->error);
  }
  jo_free(&r->params);
  jo_free(&r->metrics);
}

/* ---- MPI-IO helpers ---- */

double now(void) { return MPI_Wtime(); }

int file_open(MPI_Comm comm, const char *path, int amode, MPI_Info info, MPI_File *fh) {
  *fh = MPI_FILE_NULL;
  int rc = MPI_File_open(comm, path, amode, info, fh);
  if (rc == MPI_SUCCESS) MPI_File_set_errhandler(*fh, MPI_ERRORS_RETURN);
  else *fh = MPI_FILE_NULL;
  return rc;
}

int file_open_hinted(MPI_Comm comm, const char *path, int amode, const char *xkey,
                     const char *xval, MPI_File *fh) {
  MPI_Info info = hints_info(B.hints);
  if (xkey) {
    if (info == MPI_INFO_NULL) MPI_Info_create(&info);
    MPI_Info_set(info, xkey, xval);
  }
  int rc = file_open(comm, path, amode, info, fh);
  info_free(&info);
  return rc;
}

void file_close(result *r, MPI_File *fh, const char *what) {
  if (*fh == MPI_FILE_NULL) return;
  res_mpi(r, MPI_File_close(fh), what);
  *fh = MPI_FILE_NULL;
}

void res_common_params(result *r) { jo_hints(&r->params, "hints", B.hints); }

void file_remove(const char *path) {
  bench_barrier();
  if (B.rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  bench_barrier();
}

/* Waits until the machine has absorbed what ran before: rank 0 runs sync(), which writes back
 * what is dirty and, on a file system mounted with online discard, lets the journal commit
 * issue the discards of blocks just freed (gigabytes after removing a long phase's file);
 * otherwise those run on the device during the next measured phase. */
void bench_settle(void) {
  bench_barrier();
  if (B.rank == 0) sync();
  bench_barrier();
}

int corrupt_byte(const char *path, MPI_Offset off) {
  int rc = MPI_SUCCESS;
  bench_barrier();
  if (B.rank == 0) {
    MPI_File fh;
    unsigned char c = 0;
    rc = file_open(MPI_COMM_SELF, path, MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
    if (rc == MPI_SUCCESS) {
      rc = MPI_File_read_at(fh, off, &c, 1, MPI_BYTE, MPI_STATUS_IGNORE);
      c ^= 0x5a;
      if (rc == MPI_SUCCESS) rc = MPI_File_write_at(fh, off, &c, 1, MPI_BYTE, MPI_STATUS_IGNORE);
      int rc2 = MPI_File_close(&fh);
      if (rc == MPI_SUCCESS) rc = rc2;
    }
    fprintf(stderr, "pario-bench: injected corruption into %s at offset %lld\n", path,
            (long long)off);
  }
  MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return rc;
}

/* MPI_Barrier, politely: MPI libraries busy-poll in a barrier, and with more ranks than cores
 * (MPICH 4.0: 8 ms per MPI_Barrier at 4 ranks on 2 cores, Open MPI 5 us) the barrier that
 * closes a timed access then measures the MPI's spinning, and spinning ranks that finished
 * take the cores from those still at work. Here a rank that arrived polls, then gives its
 * core away (sched_yield for 200 us, then naps of at most 100 us, so a rank leaves at most
 * that late). The same for native and pario runs: it is the benchmark's, not the library's. */
void bench_barrier(void) {
  MPI_Request rq;
  int done = 0;
  double t0 = 0;
  long nap = 0;
  MPI_Ibarrier(MPI_COMM_WORLD, &rq);
  for (int spin = 0;; spin++) {
    MPI_Test(&rq, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (spin < 64) continue;
    if (t0 == 0) t0 = MPI_Wtime();
    if (MPI_Wtime() - t0 < 200e-6) {
      sched_yield();
      continue;
    }
    nap = nap ? (nap * 2 > 100000 ? 100000 : nap * 2) : 5000;
    nanosleep(&(struct timespec){0, nap}, NULL);
  }
}

double max_all(double v) {
  double m = 0;
  MPI_Allreduce(&v, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return m;
}

double avg_all(double v) {
  double s = 0;
  MPI_Allreduce(&v, &s, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return s / B.size;
}

void *xalloc(size_t n) {
  void *p = NULL;
  if (posix_memalign(&p, 4096, n ? n : 1) != 0) {
    fprintf(stderr, "pario-bench: out of memory allocating %zu bytes\n", n);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
  return p;
}

#define IO_CHUNK ((size_t)1 << 30)

int read_full_at(MPI_File fh, MPI_Offset off, void *buf, size_t len) {
  for (size_t done = 0; done < len;) {
    size_t n = len - done < IO_CHUNK ? len - done : IO_CHUNK;
    MPI_Status st;
    int rc = MPI_File_read_at(fh, off + (MPI_Offset)done, (char *)buf + done, (int)n, MPI_BYTE, &st);
    if (rc != MPI_SUCCESS) return rc;
    int got = 0;
    MPI_Get_count(&st, MPI_BYTE, &got);
    if (got <= 0) { memset((char *)buf + done, 0, len - done); return MPI_SUCCESS; } /* EOF */
    done += (size_t)got;
  }
  return MPI_SUCCESS;
}

int write_full_at(MPI_File fh, MPI_Offset off, const void *buf, size_t len) {
  for (size_t done = 0; done < len;) {
    size_t n = len - done < IO_CHUNK ? len - done : IO_CHUNK;
    int rc = MPI_File_write_at(fh, off + (MPI_Offset)done, (const char *)buf + done, (int)n,
                               MPI_BYTE, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    done += n;
  }
  return MPI_SUCCESS;
}
