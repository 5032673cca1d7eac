/* shmshare.h: a segment made by the communicator's rank 0, found by the token it wrote. */
#include "sharedfp/shmshare.h"

#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

int pario_shm_share(MPI_Comm comm, int make, const char *name, size_t len, void **out) {
  int me = 0, mine = 0, all = 0;
  unsigned long long v[2] = {0, 0}; /* made, token */
  void *p = MAP_FAILED;
  PMPI_Comm_rank(comm, &me);
  *out = NULL;
  if (me == 0 && make) {
    uint64_t token = 0;
    int fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd >= 0 && getrandom(&token, sizeof token, 0) == (ssize_t)sizeof token && ftruncate(fd, (off_t)len) == 0 &&
        (p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0)) != MAP_FAILED) {
      *(uint64_t *)p = token;
      v[0] = 1, v[1] = token;
    }
    if (fd >= 0) close(fd);
    if (fd >= 0 && !v[0]) shm_unlink(name);
  }
  PMPI_Bcast(v, 2, MPI_UNSIGNED_LONG_LONG, 0, comm);
  if (me != 0 && v[0]) {
    int fd = shm_open(name, O_RDWR, 0);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= (off_t)len)
      p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd >= 0) close(fd);
    if (p != MAP_FAILED && *(uint64_t *)p != v[1]) {
      munmap(p, len);
      p = MAP_FAILED;
    }
  }
  if (p != MAP_FAILED) *out = p, mine = 1;
  PMPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, comm);
  if (me == 0 && v[0]) shm_unlink(name);
  return all;
}
