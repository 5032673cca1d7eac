/* Shared file pointers, per component (argv[1]: sm | lockedfile | auto): a 10^6-record
 * write_shared stress with every record checked exactly once; a work queue served with
 * read_shared; seek_shared/get_position_shared agreeing across ranks and with the data;
 * set_view resetting the pointer; get_info naming the component; and no storage left
 * behind (nor created by a program that never uses shared pointers). */
#include <dirent.h>

#include "harness.h"

static int rank, np;
static char path[512], dir[600];

typedef struct { int rank, seq; long long check; } rec;

static int count_hidden(void) { /* files of pario's lockedfile component beside the data file */
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *e;
  const char *base = strrchr(path, '/') + 1; /* only this test's file: tests run in parallel */
  while (d && (e = readdir(d)))
    if (strstr(e->d_name, "pario-sfp") && strstr(e->d_name, base)) n++;
  if (d) closedir(d);
  return n;
}

static MPI_File open_with(const char *comp, int amode) {
  MPI_Info info;
  MPI_File fh;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_sharedfp", comp);
  int rc = MPI_File_open(MPI_COMM_WORLD, path, amode, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open: %s", err_text(rc));
  MPI_Info_free(&info);
  return fh;
}

static void stress(const char *comp, int total) {
  MPI_File fh = open_with(comp, MPI_MODE_CREATE | MPI_MODE_RDWR);
  MPI_File_set_size(fh, 0);
  MPI_Datatype rt;
  MPI_Type_contiguous(sizeof(rec), MPI_BYTE, &rt);
  MPI_Type_commit(&rt);
  MPI_File_set_view(fh, 0, rt, rt, "native", MPI_INFO_NULL);
  int mine = total / np + (rank < total % np);
  for (int i = 0; i < mine; i++) {
    rec r = {rank, i, (long long)rank * 1000003 + i};
    if (MPI_File_write_shared(fh, &r, 1, rt, MPI_STATUS_IGNORE) != MPI_SUCCESS) { CHECK(0, "write_shared"); break; }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Offset pos;
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == total, "shared pointer after %d records: %lld", total, (long long)pos);
  MPI_Info used;
  char v[64] = "";
  int flag;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, "pario_sharedfp", 63, v, &flag);
  CHECK(strcmp(comp, "auto") ? !strcmp(v, comp) : !strcmp(v, "sm"), "get_info pario_sharedfp=%s", v);
  MPI_Info_free(&used);
  if (rank == 0) { /* every record present exactly once, intact */
    rec *all = malloc(sizeof(rec) * (size_t)total);
    MPI_File_read_at(fh, 0, all, total, rt, MPI_STATUS_IGNORE);
    char *seen = calloc((size_t)total, 1);
    long bad = 0;
    for (int i = 0; i < total; i++) {
      rec *r = &all[i];
      int owner_n = total / np + (r->rank < total % np), idx = 0;
      for (int q = 0; q < r->rank; q++) idx += total / np + (q < total % np);
      if (r->rank < 0 || r->rank >= np || r->seq < 0 || r->seq >= owner_n ||
          r->check != (long long)r->rank * 1000003 + r->seq || seen[idx + r->seq]++) bad++;
    }
    CHECK(bad == 0, "%s: %ld of %d records lost, duplicated or torn", comp, bad, total);
    free(all);
    free(seen);
  }
  MPI_Type_free(&rt);
  MPI_File_close(&fh);
}

static void work_queue(const char *comp) {
  enum { ITEMS = 997 };
  MPI_File fh = open_with(comp, MPI_MODE_CREATE | MPI_MODE_RDWR);
  if (rank == 0) {
    int items[ITEMS];
    for (int i = 0; i < ITEMS; i++) items[i] = i;
    MPI_File_write_at(fh, 0, items, ITEMS, MPI_INT, MPI_STATUS_IGNORE);
  }
  MPI_File_set_size(fh, ITEMS * sizeof(int));
  MPI_File_set_view(fh, 0, MPI_INT, MPI_INT, "native", MPI_INFO_NULL); /* pointer back to 0 */
  int got = 0, item, n;
  long long sum = 0;
  MPI_Status st;
  for (;;) {
    MPI_File_read_shared(fh, &item, 1, MPI_INT, &st);
    MPI_Get_count(&st, MPI_INT, &n);
    if (n == 0) break;
    got++;
    sum += item;
  }
  long long tot[2] = {got, sum}, all[2];
  MPI_Allreduce(tot, all, 2, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  CHECK(all[0] == ITEMS && all[1] == (long long)ITEMS * (ITEMS - 1) / 2, "%s work queue: %lld items, sum %lld", comp, all[0], all[1]);
  /* seek_shared is collective and everyone agrees; the data at the pointer is right */
  MPI_File_seek_shared(fh, 10, MPI_SEEK_SET);
  MPI_Offset pos;
  MPI_File_get_position_shared(fh, &pos);
  long long p[2] = {pos, -pos}, r[2];
  MPI_Allreduce(p, r, 2, MPI_LONG_LONG, MPI_MAX, MPI_COMM_WORLD);
  CHECK(pos == 10 && r[0] == -r[1], "seek_shared agreement");
  MPI_File_seek_shared(fh, -3, MPI_SEEK_END);
  MPI_File_get_position_shared(fh, &pos);
  CHECK(pos == ITEMS - 3, "seek_shared END: %lld", (long long)pos);
  MPI_File_seek_shared(fh, 5, MPI_SEEK_SET);
  MPI_File_read_ordered(fh, &item, 1, MPI_INT, &st);
  CHECK(item == 5 + rank, "read_ordered in rank order: %d", item);
  MPI_File_close(&fh);
}

int main(int argc, char **argv) {
  start(&argc, &argv);
  rank = t_rank;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  const char *comp = argc > 1 ? argv[1] : "auto";
  int records = argc > 2 ? atoi(argv[2]) : 1000000;
  test_path(path, sizeof path, "pario-shared");
  snprintf(dir, sizeof dir, "%.*s", (int)(strrchr(path, '/') - path), path);
  /* A program that never uses shared pointers leaves nothing behind. */
  MPI_File fh;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, MPI_INFO_NULL, &fh);
  MPI_File_write_at(fh, rank, "x", 1, MPI_CHAR, MPI_STATUS_IGNORE);
  CHECK(count_hidden() == 0, "no shared-pointer storage without a shared-pointer call");
  MPI_File_close(&fh);
  stress(comp, records);
  work_queue(comp);
  MPI_Barrier(MPI_COMM_WORLD);
  CHECK(count_hidden() == 0, "shared-pointer storage removed at close");
  if (rank == 0) MPI_File_delete(path, MPI_INFO_NULL);
  return finish("shared");
}
