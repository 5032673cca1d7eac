/* pario-bench shared declarations: the run context, measurement results (table row + JSON line),
 * MPI-IO error classification, option parsing helpers, the verification byte pattern and the
 * synthetic compute kernel. Every suite (overlap, cfs, noncontig, sharedfp, btio) builds on these. */
#ifndef PARIO_BENCH_H
#define PARIO_BENCH_H

#include <mpi.h>
#include <getopt.h>
#include <stddef.h>
#include <stdint.h>

/* ---- run context ------------------------------------------------------------------------- */

enum { ST_OK = 0, ST_UNSUPPORTED = 1, ST_FAILED = 2 };

typedef struct {
  int rank, size;
  char impl[16];            /* "native" or "pario" */
  char impl_version[64];
  char mpi[16];             /* "openmpi", "mpich" or "unknown" */
  char mpi_version[256];    /* first line of MPI_Get_library_version */
  const char *results;      /* JSON lines file (-o) */
  int keep;                 /* --keep: leave test files behind */
  int verify;               /* verification on (default) */
  int inject;               /* --inject-corruption: damage a byte before verifying */
  int failures;             /* measurements with status "failed" */
  const char *dir;          /* --dir: where test files are created (default ".") */
  struct hints_s *hints;    /* -H key=value hints for every measured MPI_File_open */
  const char *table_suite;  /* suite whose table header was printed last */
  int repeat;               /* --repeat N: timed runs per measurement inside one launch (1) */
} bench_ctx;

extern bench_ctx B;

/* Common options every subcommand accepts; suites append them to their getopt table. */
enum { OPT_RESULTS = 'o', OPT_HELP = 'h', OPT_HINT = 'H', OPT_KEEP = 1000, OPT_NOVERIFY,
       OPT_INJECT, OPT_DIR, OPT_REPEAT, OPT_SUITE0 = 1100 };
/* Short options every subcommand accepts (prefix of each suite's optstring). */
#define COMMON_SHORT "o:hH:"
#define COMMON_LONG_OPTS                                                                 \
  {"results", required_argument, 0, OPT_RESULTS}, {"help", no_argument, 0, OPT_HELP},   \
  {"hint", required_argument, 0, OPT_HINT}, {"dir", required_argument, 0, OPT_DIR},     \
  {"keep", no_argument, 0, OPT_KEEP}, {"no-verify", no_argument, 0, OPT_NOVERIFY},      \
  {"inject-corruption", no_argument, 0, OPT_INJECT}
#define COMMON_HELP                                                                      \
  "common options:\n"                                                                   \
  "  -o, --results FILE    append one JSON line per measurement\n"                      \
  "                        (default pario-bench-results.jsonl)\n"                       \
  "      --dir DIR         directory for the test files (default .)\n"                  \
  "  -H, --hint KEY=VALUE  MPI_Info hint for every measured MPI_File_open (repeatable)\n" \
  "      --keep            keep test files (default: remove them)\n"                    \
  "      --no-verify       skip data verification (default: verify)\n"                  \
  "  -h, --help            this help\n"

/* --repeat N for the suites whose figure is one timed run (overlap, noncontig, sharedfp, btio):
 * N timed runs inside the launch; metrics give the median, and <metric>_min / <metric>_max.
 * (cfs and remote have their own -r, --repeat: best of N, and median of N.) */
#define REPEAT_LONG_OPT {"repeat", required_argument, 0, OPT_REPEAT}
#define REPEAT_HELP                                                                      \
  "      --repeat N        timed runs per measurement; median reported, spread as\n"   \
  "                        <metric>_min and <metric>_max (default 1)\n"
#define MAX_REPEAT 1000

/* Handles a common option; returns 1 if c was one, 0 otherwise. */
int common_option(int c, const char *arg);
/* Runs getopt_long over argv with the suite's options; calls handle(c, optarg, ctx) for each
 * suite option (returns 0 ok, else a usage error already printed). Returns 0 or exit status 2. */
typedef int (*opt_handler)(int c, const char *arg, void *ctx);
int parse_options(const char *suite, int argc, char **argv, const char *shortopts,
                  const struct option *longopts, opt_handler handle, void *ctx);
/* DIR/pario-bench-<name> into buf (the default test file of a suite). */
const char *test_path(char *buf, size_t n, const char *name);
/* Prints a usage error (rank 0) and returns exit status 2. */
int usage_error(const char *suite, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints text on rank 0 only. */
void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- option values ----------------------------------------------------------------------- */

/* "4096", "4K", "4KiB", "1M", "2G" -> bytes; returns -1 on a malformed value. */
long long parse_size(const char *s);
/* Comma-separated sizes into out[max]; returns count or -1. */
int parse_size_list(const char *s, long long *out, int max);
/* Comma-separated words matched against names[n] into a bit mask; returns -1 on an unknown word. */
int parse_choice_list(const char *s, const char *const *names, int n);
/* Index of s in names[n], or -1. */
int choice_index(const char *s, const char *const *names, int n);
/* 4096 -> "4K", 1048576 -> "1M", 1000 -> "1000" (for table labels). */
const char *size_str(long long v, char *buf, size_t n);
/* Strict integer / double parsing; return 0 on success. */
int parse_int(const char *s, long long lo, long long hi, long long *out);
int parse_double(const char *s, double lo, double hi, double *out);

/* key=value hints collected from repeated -H options. */
#define MAX_HINTS 32
typedef struct hints_s { int n; char *key[MAX_HINTS], *val[MAX_HINTS]; } hints;
int hints_add(hints *h, const char *kv);      /* 0 ok, -1 malformed or too many */
MPI_Info hints_info(const hints *h);          /* MPI_INFO_NULL when empty; free with info_free */
void info_free(MPI_Info *info);

/* ---- JSON -------------------------------------------------------------------------------- */

typedef struct { char *s; size_t len, cap; int members; } jobj;
void jo_init(jobj *o);                    /* starts "{" */
void jo_str(jobj *o, const char *k, const char *v);  /* NULL v -> null */
void jo_int(jobj *o, const char *k, long long v);
void jo_num(jobj *o, const char *k, double v);       /* non-finite -> null */
void jo_bool(jobj *o, const char *k, int v);
void jo_raw(jobj *o, const char *k, const char *json);
const char *jo_close(jobj *o);            /* appends "}" once; returns the text */
void jo_free(jobj *o);
void jo_hints(jobj *o, const char *k, const hints *h);

/* ---- measurement results ----------------------------------------------------------------- */

typedef struct {
  const char *suite;
  char test[64];
  char label[160];      /* short parameter summary for the table */
  jobj params, metrics;
  int verified;         /* -1 nothing verified (null), 0 mismatch, 1 verified */
  int status;
  char error[512];
  double seconds, mbps; /* table columns; negative = not applicable */
  char note[160];       /* extra table text after the status (suite-specific metrics) */
  int borrowed;         /* status taken over from another rank (its message explains it) */
} result;

void res_init(result *r, const char *suite, const char *test);
/* Records an MPI error code from call `what`; returns 1 if rc was an error. */
int res_mpi(result *r, int rc, const char *what);
void res_fail(result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A verification mismatch: verified=false and status failed. */
void res_mismatch(result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void res_verified(result *r);             /* this rank verified its share successfully */
/* Collective: agrees status, verification and the first error message across ranks. */
void res_agree(result *r);
/* Collective agreement on a phase status alone (keeps ranks in step after a local error). */
int res_ok_everywhere(result *r);
/* Rank 0 prints the table row and appends the JSON line; frees the result. */
void res_emit(result *r);

/* ---- MPI-IO helpers ---------------------------------------------------------------------- */

double now(void);
/* MPI_File_open with MPI_ERRORS_RETURN on the handle. */
int file_open(MPI_Comm comm, const char *path, int amode, MPI_Info info, MPI_File *fh);
/* file_open with the -H hints (plus extra key/value, may be NULL). */
int file_open_hinted(MPI_Comm comm, const char *path, int amode, const char *xkey,
                     const char *xval, MPI_File *fh);
/* Closes fh if open; records a failure in r. */
void file_close(result *r, MPI_File *fh, const char *what);
/* Adds the common parameters (hints) to r's params. */
void res_common_params(result *r);
/* Collective over MPI_COMM_WORLD: rank 0 deletes path (errors ignored), then a barrier. */
void file_remove(const char *path);
void bench_settle(void); /* barrier, sync() on rank 0, barrier */
/* Collective: rank 0 flips one byte of path at off (the hidden --inject-corruption). */
int corrupt_byte(const char *path, MPI_Offset off);
/* MPI_Barrier on MPI_COMM_WORLD without busy-polling (result.c says why). */
void bench_barrier(void);
/* max over ranks of a double (MPI_MAX) and the average (sum / size). */
double max_all(double v);
double avg_all(double v);
/* Aligned allocation (4 KiB, suitable for O_DIRECT); aborts the run on failure. */
void *xalloc(size_t n);
/* Reads/writes exactly len bytes at off with explicit offsets in chunks that fit an int count. */
int read_full_at(MPI_File fh, MPI_Offset off, void *buf, size_t len);
int write_full_at(MPI_File fh, MPI_Offset off, const void *buf, size_t len);

/* ---- verification pattern ---------------------------------------------------------------- */

/* The expected content of a test file is a function of the byte offset alone: a fixed 4 KiB
 * pseudo-random page whose first 8 bytes are replaced by a stamp of the page's offset. */
void pat_fill(unsigned char *buf, MPI_Offset off, size_t len);
/* Rewrites only the stamps: valid when buf holds the content of an offset congruent mod 4096. */
void pat_stamp(unsigned char *buf, MPI_Offset off, size_t len);
/* Makes buf hold content(off..off+len), stamping when *prev (last offset, or -1) allows it. */
void pat_prepare(unsigned char *buf, MPI_Offset off, size_t len, MPI_Offset *prev);
/* -1 when buf matches content(off..), else the index of the first differing byte. */
long long pat_check(const unsigned char *buf, MPI_Offset off, size_t len);
/* Partitioned read-back of [0, size) by all ranks. span(off, len, ctx, &want) returns the length
 * of the run starting at off that is treated alike, and sets want: 0 skip, 1 expect the pattern,
 * 2 expect GAP_BYTE (a gap the measured writes must not touch). span NULL = pattern everywhere. */
enum { SPAN_SKIP = 0, SPAN_PATTERN = 1, SPAN_GAP = 2 };
#define GAP_BYTE 0xB6
/* Collective: creates path afresh holding the pattern for [0, size) (ranks write contiguous
 * shares in large calls); the untimed preparation of read tests. Records errors in r. */
void pat_write_file(result *r, const char *path, MPI_Offset size);
/* The same with every byte GAP_BYTE: the background that noncontiguous writes must preserve. */
void gap_write_file(result *r, const char *path, MPI_Offset size);
typedef size_t (*pat_span_fn)(MPI_Offset off, size_t len, const void *ctx, int *want);
void pat_verify_file(result *r, const char *path, MPI_Offset size, pat_span_fn span,
                     const void *ctx);

/* ---- synthetic compute ------------------------------------------------------------------- */

/* One unit is a short dependent chain of floating-point operations. */
double compute_units(long long units);
/* Units per second, measured on this rank (about 50 ms). */
double compute_rate(void);
/* Units per second agreed across ranks (the minimum, so no rank computes longer than asked). */
double compute_rate_all(void);

/* Trimmed mean of v[n]: excludes one highest and one lowest value when n >= 3 (HPIO). */
double trimmed_mean(const double *v, int n);
/* Median of v[n] (mean of the two middle values when n is even); min and max through lo, hi. */
double median_of(const double *v, int n, double *lo, double *hi);
void posix_xfer(result *r, int fd, MPI_Offset off, unsigned char *buf, size_t len, int write);
/* Cold reads: drop_cache(_fd) writes back and drops a file's pages from the page cache
 * (fsync + POSIX_FADV_DONTNEED; 0 or an errno); storage_read_bytes is /proc/self/io's
 * read_bytes (bytes fetched from storage by this process), -1 where that file is absent. */
int drop_cache_fd(int fd);
int drop_cache(const char *path);
long long storage_read_bytes(void);
/* Metric k = median of v[n], and k_min, k_max (the --repeat spread). Returns the median. */
double jo_spread(jobj *o, const char *k, const double *v, int n);

/* ---- suites ------------------------------------------------------------------------------ */

extern const char overlap_usage[], cfs_usage[], noncontig_usage[], sharedfp_usage[], btio_usage[],
    remote_usage[], datarep_usage[], viewswitch_usage[], metascale_usage[];
int overlap_main(int argc, char **argv);
int cfs_main(int argc, char **argv);
int noncontig_main(int argc, char **argv);
int sharedfp_main(int argc, char **argv);
int btio_main(int argc, char **argv);
int remote_main(int argc, char **argv);
int datarep_main(int argc, char **argv);
int viewswitch_main(int argc, char **argv);
int metascale_main(int argc, char **argv);

#endif
