/* Confinement: every client path resolves beneath the root, by openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_MAGICLINKS), or where that is missing by an O_NOFOLLOW walk refusing every symbolic
 * link; a lexical check first refuses absolute paths and `..` above the root, naming the cause. */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "server.h"

int srv_have_openat2 = 1;

/* Copy the path into buf (NUL-terminated) and check it lexically: 0 or -errno. */
static int check_path(const char *path, uint32_t pathlen, char *buf, const char **why) {
  if (pathlen == 0 || pathlen > RIO_MAX_PATH) return *why = "empty or too long path", -ENAMETOOLONG;
  memcpy(buf, path, pathlen);
  buf[pathlen] = '\0';
  if (memchr(buf, '\0', pathlen)) return *why = "NUL byte in path", -EINVAL;
  if (buf[0] == '/') return *why = "absolute path refused", -EACCES;
  int depth = 0;
  for (const char *p = buf; *p;) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') {
      if (--depth < 0) return *why = "path leaves the root (..)", -EACCES;
    } else if (n > 0 && !(n == 1 && p[0] == '.')) {
      depth++;
    }
    p += n;
    while (*p == '/') p++;
  }
  return 0;
}

static int open2(int dirfd, const char *path, int oflags, mode_t mode) {
  struct open_how how;
  memset(&how, 0, sizeof how);
  how.flags = (uint64_t)oflags;
  how.mode = (oflags & O_CREAT) ? mode : 0;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
  return (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how);
}

/* The fallback: walk the directories with O_NOFOLLOW, refusing any symbolic link. */
static int walk_open(int rootfd, char *buf, int oflags, mode_t mode, const char **why) {
  int dir = dup(rootfd);
  if (dir < 0) return -errno;
  char *p = buf;
  for (;;) {
    while (*p == '/') p++;
    char *e = strchr(p, '/');
    while (e && e[1] == '/') e++; /* collapse "a//b" */
    int last = !e || e[1] == '\0';
    if (e) *e = '\0';
    const char *comp = *p ? p : ".";
    struct stat st;
    if (fstatat(dir, comp, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
      close(dir);
      *why = "symbolic link refused (no openat2: links are not followed)";
      return -EACCES;
    }
    int fd = last ? openat(dir, comp, oflags | O_NOFOLLOW, mode)
                  : openat(dir, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    int err = errno;
    close(dir);
    if (fd < 0) return -err;
    if (last) return fd;
    dir = fd;
    p = e + 1;
  }
}

static int resolve(int rootfd, char *buf, int oflags, mode_t mode, const char **why) {
  if (srv_have_openat2) {
    int fd = open2(rootfd, buf, oflags, mode);
    if (fd >= 0) return fd;
    int e = errno;
    if (e == ENOSYS || e == EPERM) {
      srv_have_openat2 = 0;
      srv_log(LOG_WARN, "openat2 unavailable (%s): confinement falls back to an O_NOFOLLOW walk", strerror(e));
    } else {
      if (e == EXDEV) *why = "path leaves the root (symbolic link or ..)";
      else if (e == ELOOP) *why = "symbolic link loop or magic link refused";
      return -e;
    }
  }
  return walk_open(rootfd, buf, oflags, mode, why);
}

int srv_resolve_open(int rootfd, const char *path, uint32_t pathlen, int oflags, mode_t mode, const char **why) {
  char buf[RIO_MAX_PATH + 1];
  int e = check_path(path, pathlen, buf, why);
  if (e) return e;
  /* O_NONBLOCK: opening a FIFO planted in the root must not hang a worker. */
  int fd = resolve(rootfd, buf, oflags | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, mode, why);
  if (fd < 0) return fd;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    int err = S_ISDIR(st.st_mode) ? EISDIR : EACCES;
    *why = err == EISDIR ? "is a directory" : "not a regular file";
    close(fd);
    return -err;
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0) (void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  return fd;
}

int srv_resolve_unlink(int rootfd, const char *path, uint32_t pathlen, const char **why) {
  char buf[RIO_MAX_PATH + 1];
  int e = check_path(path, pathlen, buf, why);
  if (e) return e;
  size_t n = strlen(buf);
  while (n > 0 && buf[n - 1] == '/') buf[--n] = '\0';
  char *slash = strrchr(buf, '/');
  const char *base = slash ? slash + 1 : buf;
  if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) return *why = "cannot delete a directory name", -EISDIR;
  int dir;
  if (slash) {
    *slash = '\0';
    dir = resolve(rootfd, buf, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, why);
  } else {
    dir = dup(rootfd);
    if (dir < 0) dir = -errno;
  }
  if (dir < 0) return dir;
  int r = unlinkat(dir, base, 0);
  int err = errno;
  close(dir);
  return r == 0 ? 0 : -err;
}

int srv_resolve_dir(int rootfd, const char *path, uint32_t pathlen, const char **why) {
  char buf[RIO_MAX_PATH + 1];
  int e = check_path(path, pathlen, buf, why);
  return e ? e : resolve(rootfd, buf, O_PATH | O_DIRECTORY | O_CLOEXEC, 0, why);
}
