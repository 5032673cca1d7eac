/* Offsets beyond 2 and 4 GiB and single accesses moving more than 2 and 4 GiB (counts whose
 * byte total overflows int), with statuses read through MPI_Get_elements_x. */
#include "harness.h"

#define GiB (1024LL * 1024 * 1024)

int main(int argc, char **argv) {
  char path[512];
  start(&argc, &argv);
  test_path(path, sizeof path, "pario-large");
  MPI_File fh;
  MPI_Status st;
  MPI_Count n;
  MPI_File_open(MPI_COMM_WORLD, path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &fh);
  /* 1. Small writes far out: a view displaced past 4 GiB, explicit offsets past 2^32 etypes. */
  MPI_File_set_view(fh, 5 * GiB, MPI_INT, MPI_INT, "native", MPI_INFO_NULL);
  int v = 0x12345678 + t_rank, r = 0;
  MPI_File_write_at(fh, GiB + t_rank, &v, 1, MPI_INT, &st); /* byte 5 GiB + 4 GiB + 4*rank */
  MPI_Offset byte;
  MPI_File_get_byte_offset(fh, GiB + t_rank, &byte);
  CHECK(byte == 9 * GiB + 4 * t_rank, "byte offset %lld", (long long)byte);
  MPI_File_read_at(fh, GiB + t_rank, &r, 1, MPI_INT, &st);
  CHECK(r == v, "read back past 9 GiB");
  MPI_File_set_view(fh, 0, MPI_BYTE, MPI_BYTE, "native", MPI_INFO_NULL);
  MPI_Offset size;
  MPI_File_get_size(fh, &size);
  CHECK(size >= 9 * GiB + 4, "size %lld", (long long)size);
  MPI_File_set_size(fh, 0);
  /* 2. One write of 4.5 GiB from a 1 MiB buffer: a memory type of extent 0 repeats it. */
  if (t_rank == 0) {
    enum { BLK = 1 << 20 };
    char *blk = malloc(BLK);
    for (int i = 0; i < BLK; i++) blk[i] = (char)(i * 13 + 1);
    MPI_Datatype rep, one;
    MPI_Type_contiguous(BLK, MPI_BYTE, &one);
    MPI_Type_create_resized(one, 0, 0, &rep);
    MPI_Type_commit(&rep);
    int count = (int)(9 * GiB / 2 / BLK); /* 4.5 GiB */
    int rc = MPI_File_write_at(fh, 0, blk, count, rep, &st);
    MPI_Get_elements_x(&st, MPI_BYTE, &n);
    CHECK(rc == MPI_SUCCESS && n == (MPI_Count)count * BLK, "4.5 GiB write: rc %d, %lld bytes", rc, (long long)n);
    /* 3. One read of 2.25 GiB into one buffer: more than INT_MAX bytes. */
    MPI_Offset half = 9 * GiB / 4;
    char *big = malloc((size_t)half);
    CHECK(big != NULL, "allocate 2.25 GiB");
    if (big) {
      MPI_Datatype mib;
      MPI_Type_contiguous(BLK, MPI_BYTE, &mib);
      MPI_Type_commit(&mib);
      rc = MPI_File_read_at(fh, 2 * GiB + 12345, big, (int)(half / BLK), mib, &st);
      MPI_Get_elements_x(&st, MPI_BYTE, &n);
      CHECK(rc == MPI_SUCCESS && n == half, "2.25 GiB read: rc %d, %lld bytes", rc, (long long)n);
      long bad = 0;
      for (MPI_Offset i = 0; i < half; i += 4093) bad += big[i] != blk[(2 * GiB + 12345 + i) % BLK];
      CHECK(bad == 0, "%ld sampled bytes differ", bad);
      MPI_Type_free(&mib);
      free(big);
    }
    MPI_Type_free(&rep);
    MPI_Type_free(&one);
    free(blk);
  }
  MPI_File_close(&fh);
  return finish("large");
}
