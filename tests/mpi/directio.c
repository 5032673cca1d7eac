/* The pario_direct_io hint: O_DIRECT transfers with bounce buffers for unaligned pieces.
 * Random offsets, lengths and memory alignments, blocking and nonblocking, against a shadow
 * copy; the file is read back through a second, buffered handle too. */
#include "harness.h"

enum { SPAN = 3 << 20 };

int main(int argc, char **argv) {
  char path[512];
  start(&argc, &argv);
  int np;
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  test_path(path, sizeof path, "pario-direct");
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "pario_direct_io", "true");
  MPI_File fh;
  int rc = MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR, info, &fh);
  CHECK(rc == MPI_SUCCESS, "open with pario_direct_io: %s", err_text(rc));
  MPI_Info used;
  char v[64] = "";
  int flag;
  MPI_File_get_info(fh, &used);
  MPI_Info_get(used, "pario_direct_io", 63, v, &flag);
  if (t_rank == 0) printf("directio: pario_direct_io in effect: %s\n", v);
  MPI_Info_free(&used);
  /* Each rank owns a SPAN-sized region; ops land at random places inside it. */
  MPI_Offset base = (MPI_Offset)t_rank * SPAN;
  char *shadow = calloc(SPAN, 1), *mem = malloc(SPAN + 8192), *in = malloc(SPAN + 8192);
  srand(42 + t_rank);
  for (int op = 0; op < 60; op++) {
    size_t off = (size_t)rand() % (SPAN / 2), len = 1 + (size_t)rand() % (SPAN / 2);
    if (op % 3 == 0) off = off / 4096 * 4096; /* some aligned offsets */
    if (op % 4 == 0) len = (len + 4095) / 4096 * 4096;
    char *src = mem + (op % 2 ? 4096 : 4096 + 16 * (op % 7)); /* aligned and misaligned memory */
    for (size_t i = 0; i < len; i++) src[i] = (char)(rand() & 0xff);
    memcpy(shadow + off, src, len);
    if (op % 5 == 0) {
      MPI_Request q;
      MPI_File_iwrite_at(fh, base + (MPI_Offset)off, src, (int)len, MPI_BYTE, &q);
      MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
      rc = MPI_File_write_at(fh, base + (MPI_Offset)off, src, (int)len, MPI_BYTE, MPI_STATUS_IGNORE);
      CHECK(rc == MPI_SUCCESS, "write %zu at %zu: %s", len, off, err_text(rc));
    }
  }
  MPI_File_sync(fh);
  /* read back through the direct handle at unaligned places */
  int bad = 0;
  for (int op = 0; op < 20; op++) {
    size_t off = (size_t)rand() % SPAN, len = 1 + (size_t)rand() % (SPAN - off);
    char *dst = in + (op % 2 ? 4096 : 4100);
    MPI_Status st;
    MPI_File_read_at(fh, base + (MPI_Offset)off, dst, (int)len, MPI_BYTE, &st);
    int n;
    MPI_Get_count(&st, MPI_BYTE, &n);
    /* the last rank's region ends at EOF: a short read is right there */
    size_t want = len;
    bad += memcmp(dst, shadow + off, (size_t)n < want ? (size_t)n : want) != 0;
  }
  CHECK(bad == 0, "%d direct reads differ", bad);
  MPI_File_close(&fh);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_RDONLY | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
  MPI_Offset size;
  MPI_File_get_size(fh, &size);
  size_t mine = size > base ? (size_t)(size - base < SPAN ? size - base : SPAN) : 0;
  MPI_File_read_at(fh, base, in, (int)mine, MPI_BYTE, MPI_STATUS_IGNORE);
  CHECK(memcmp(in, shadow, mine) == 0, "buffered read of the direct writes differs");
  MPI_File_close(&fh);
  MPI_Info_free(&info);
  free(shadow);
  free(mem);
  free(in);
  return finish("directio");
}
