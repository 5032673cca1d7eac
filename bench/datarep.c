/* pario-bench datarep: the cost of a data representation (seed 004: MPI-IO converts data
 * between machines that store numbers differently). Each rank writes, then reads back, its
 * share of a file of doubles through a view in each representation asked for (native,
 * external32, internal); the rate is that of the data call alone, file in the page cache. */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const rep_names[] = {"native", "external32", "internal"};
static const char *const op_names[] = {"write", "read"};
static const char *const access_names[] = {"independent", "collective"};

typedef struct {
  long long size;
  int reps, ops, access;
} dr_opts;

const char datarep_usage[] =
    "usage: pario-bench datarep [OPTIONS]\n"
    "Write and read a file of doubles through a view in each data representation (seed 004):\n"
    "each rank its contiguous share, the data call timed alone (page cache, no sync).\n\n"
    "  -s, --size BYTES     file size, all ranks together (default 64M)\n"
    "      --rep LIST       native,external32,internal (default native,external32)\n"
    "      --op LIST        write,read (default both; read reads what write wrote)\n"
    "      --access A       independent (MPI_File_write_at, default) or collective (_all)\n" COMMON_HELP;

enum { O_REP = OPT_SUITE0, O_OP, O_ACCESS };

static int dr_option(int c, const char *arg, void *ctx) {
  dr_opts *o = ctx;
  switch (c) {
    case 's':
      if ((o->size = parse_size(arg)) < 8) return usage_error("datarep", "bad size '%s'", arg);
      return 0;
    case O_REP:
      if ((o->reps = parse_choice_list(arg, rep_names, 3)) <= 0) return usage_error("datarep", "bad representation list '%s'", arg);
      return 0;
    case O_OP:
      if ((o->ops = parse_choice_list(arg, op_names, 2)) <= 0) return usage_error("datarep", "bad operation list '%s'", arg);
      return 0;
    case O_ACCESS:
      if ((o->access = choice_index(arg, access_names, 2)) < 0) return usage_error("datarep", "bad access '%s'", arg);
      return 0;
    default: return usage_error("datarep", "unknown option");
  }
}

static double value(long long i) { return (double)i + 0.5; }

/* The file's bytes for double i: native, or external32 (big-endian IEEE). */
static void file_form(double v, int ext, unsigned char *out) {
  uint64_t u;
  memcpy(&u, &v, 8);
  if (ext) u = __builtin_bswap64(u);
  memcpy(out, &u, 8);
}

typedef struct {
  const dr_opts *o;
  const char *path;
  long long lo, n; /* this rank's doubles */
  double *buf;
} dr_run;

static int data_call(const dr_run *c, MPI_File fh, int op) {
  MPI_Offset off = c->lo;
  int n = (int)c->n;
  if (op == 0)
    return c->o->access ? MPI_File_write_at_all(fh, off, c->buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE)
                        : MPI_File_write_at(fh, off, c->buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE);
  return c->o->access ? MPI_File_read_at_all(fh, off, c->buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE)
                      : MPI_File_read_at(fh, off, c->buf, n, MPI_DOUBLE, MPI_STATUS_IGNORE);
}

/* Writes: the file's bytes, read back through a native view of bytes. Reads: the values. */
static void verify(result *r, const dr_run *c, int rep, int op) {
  if (op == 1) {
    for (long long k = 0; k < c->n; k++)
      if (c->buf[k] != value(c->lo + k)) {
        res_mismatch(r, "read: double %lld is %g, want %g", c->lo + k, c->buf[k], value(c->lo + k));
        return;
      }
    res_verified(r);
    return;
  }
  MPI_File fh;
  unsigned char *got = xalloc((size_t)c->n * 8), want[8];
  if (B.inject) corrupt_byte(c->path, 5);
  if (!res_mpi(r, file_open(MPI_COMM_WORLD, c->path, MPI_MODE_RDONLY, MPI_INFO_NULL, &fh), "MPI_File_open (verify)")) {
    if (!res_mpi(r, read_full_at(fh, c->lo * 8, got, (size_t)c->n * 8), "MPI_File_read_at (verify)"))
      for (long long k = 0; k < c->n; k++) {
        file_form(value(c->lo + k), rep == 1, want);
        if (memcmp(got + 8 * k, want, 8)) {
          res_mismatch(r, "%s: wrong bytes for double %lld (%s)", c->path, c->lo + k, rep_names[rep]);
          break;
        }
      }
    file_close(r, &fh, "MPI_File_close (verify)");
  }
  free(got);
  if (r->status == ST_OK) res_verified(r);
}

static void measure(dr_run *c, int rep, int op) {
  result r;
  MPI_File fh = MPI_FILE_NULL;
  res_init(&r, "datarep", op_names[op]);
  jo_str(&r.params, "datarep", rep_names[rep]);
  jo_str(&r.params, "access", access_names[c->o->access]);
  jo_int(&r.params, "size", c->o->size);
  res_common_params(&r);
  char sz[32];
  snprintf(r.label, sizeof r.label, "%-10s %s %s", rep_names[rep], access_names[c->o->access],
           size_str(c->o->size, sz, sizeof sz));
  for (long long k = 0; k < c->n; k++) c->buf[k] = op == 0 ? value(c->lo + k) : 0;
  if (op == 0) file_remove(c->path);
  int amode = op == 0 ? MPI_MODE_CREATE | MPI_MODE_WRONLY : MPI_MODE_RDONLY;
  double t = 0;
  if (!res_mpi(&r, file_open_hinted(MPI_COMM_WORLD, c->path, amode, NULL, NULL, &fh), "MPI_File_open") &&
      !res_mpi(&r, MPI_File_set_view(fh, 0, MPI_DOUBLE, MPI_DOUBLE, rep_names[rep], MPI_INFO_NULL),
               "MPI_File_set_view")) {
    bench_barrier();
    double t0 = now();
    res_mpi(&r, data_call(c, fh, op), op ? "MPI_File_read_at" : "MPI_File_write_at");
    t = max_all(now() - t0);
  }
  file_close(&r, &fh, "MPI_File_close");
  if (res_ok_everywhere(&r) && B.verify) verify(&r, c, rep, op);
  res_agree(&r);
  if (r.status == ST_OK) {
    r.seconds = t;
    r.mbps = (double)c->o->size / t / 1e6;
    jo_num(&r.metrics, "seconds", t);
    jo_num(&r.metrics, "mb_per_s", r.mbps);
  }
  res_emit(&r);
}

int datarep_main(int argc, char **argv) {
  dr_opts o = {.size = 64LL << 20, .reps = 3, .ops = 3};
  static const struct option longopts[] = {
      {"size", required_argument, 0, 's'}, {"rep", required_argument, 0, O_REP},
      {"op", required_argument, 0, O_OP},  {"access", required_argument, 0, O_ACCESS},
      COMMON_LONG_OPTS, {0, 0, 0, 0}};
  int rc = parse_options("datarep", argc, argv, COMMON_SHORT "s:", longopts, dr_option, &o);
  if (rc) return rc;
  long long total = o.size / 8;
  if (total / B.size > (1LL << 30)) return usage_error("datarep", "size too large");
  char path[4096];
  dr_run c = {.o = &o, .path = test_path(path, sizeof path, "datarep.dat")};
  c.lo = total * B.rank / B.size;
  c.n = total * (B.rank + 1) / B.size - c.lo;
  c.buf = xalloc(sizeof(double) * (size_t)(c.n ? c.n : 1));
  for (int rep = 0; rep < 3; rep++)
    for (int op = 0; op < 2; op++)
      if ((o.reps & (1 << rep)) && (o.ops & (1 << op))) measure(&c, rep, op);
  free(c.buf);
  if (!B.keep) file_remove(c.path);
  return 0;
}
