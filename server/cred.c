/* Named credentials (--credentials FILE, and --secret-file as "default"): each a secret, a right
 * (read-write or read-only) and an optional subdirectory that becomes its root. Read once at
 * start, before the privilege drop; the connection looks its HELLO's name up here. */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server.h"

/* Stands in for an unknown name, so that its AUTH costs the same MAC as a known one. */
static srv_cred dummy = {.name = "", .ro = 1, .rootfd = -1};
static pthread_once_t dummy_once = PTHREAD_ONCE_INIT;

static void dummy_init(void) {
  dummy.secret_len = RIO_MIN_SECRET * 2;
  if (rio_random(dummy.secret, dummy.secret_len) != 0) dummy.secret_len = 0; /* then !known refuses anyway */
}

static int name_ok(const char *s, size_t n) {
  if (n == 0 || n > RIO_MAX_CRED_NAME) return 0;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-') return 0;
  return 1;
}

/* Like ssh: a file that others may read or change is no secret. */
static int private_file(const char *path, char *why, size_t wn) {
  struct stat st;
  if (stat(path, &st) != 0) return snprintf(why, wn, "%s: %s", path, strerror(errno)), -1;
  if (st.st_mode & 077)
    return snprintf(why, wn, "%s: mode %04o lets group or others read or write it (chmod 600)", path,
                    (unsigned)(st.st_mode & 07777)), -1;
  return 0;
}

static srv_cred *cred_new(const char *name, char *why, size_t wn) {
  for (int i = 0; i < srv->ncreds; i++)
    if (!strcmp(srv->creds[i].name, name)) return snprintf(why, wn, "duplicate credential name %s", name), NULL;
  srv_cred *a = realloc(srv->creds, (size_t)(srv->ncreds + 1) * sizeof *a);
  if (!a) return snprintf(why, wn, "out of memory"), NULL;
  srv->creds = a;
  srv_cred *cr = &a[srv->ncreds++];
  memset(cr, 0, sizeof *cr);
  snprintf(cr->name, sizeof cr->name, "%s", name);
  cr->rootfd = srv->rootfd;
  return cr;
}

int srv_cred_add(const char *name, int ro, const char *secret_file, const char *subdir, int check_mode, char *why,
                 size_t wn) {
  char w2[160];
  if (check_mode && private_file(secret_file, why, wn)) return -1;
  srv_cred *cr = cred_new(name, why, wn);
  if (!cr) return -1;
  cr->ro = ro;
  int e = rio_read_secret(secret_file, cr->secret, &cr->secret_len, w2, sizeof w2);
  if (e) return snprintf(why, wn, "%s: %s (%s)", secret_file, w2, strerror(e)), -1;
  if (subdir) {
    const char *r = "";
    int fd = srv_resolve_dir(srv->rootfd, subdir, (uint32_t)strlen(subdir), &r);
    if (fd < 0) return snprintf(why, wn, "subdirectory %s: %s%s%s", subdir, strerror(-fd), *r ? ": " : "", r), -1;
    cr->rootfd = fd;
  }
  return 0;
}

/* One line: NAME RIGHTS SECRETFILE [SUBDIR]. 0, or -1 with why. */
static int parse_line(char *line, char *why, size_t wn) {
  char *f[5] = {0}, *save = NULL;
  int n = 0;
  for (char *t = strtok_r(line, " \t\r\n", &save); t; t = strtok_r(NULL, " \t\r\n", &save)) {
    if (n == 4) return snprintf(why, wn, "more than 4 fields"), -1;
    f[n++] = t;
  }
  if (n < 3) return snprintf(why, wn, "expected NAME RIGHTS SECRETFILE [SUBDIR]"), -1;
  if (!name_ok(f[0], strlen(f[0])))
    return snprintf(why, wn, "bad name (1 to %d of A-Z a-z 0-9 . _ -)", RIO_MAX_CRED_NAME), -1;
  if (strcmp(f[1], "rw") && strcmp(f[1], "ro")) return snprintf(why, wn, "rights must be rw or ro"), -1;
  return srv_cred_add(f[0], f[1][1] == 'o', f[2], f[3], 1, why, wn);
}

int srv_cred_load(const char *path, char *why, size_t wn) {
  if (private_file(path, why, wn)) return -1;
  FILE *fp = fopen(path, "re");
  if (!fp) return snprintf(why, wn, "%s: %s", path, strerror(errno)), -1;
  char line[8192], w2[600];
  int lineno = 0, r = 0;
  while (r == 0 && fgets(line, sizeof line, fp)) {
    lineno++;
    char *p = line;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '#' || *p == '\n' || *p == '\r' || !*p) continue;
    if (parse_line(p, w2, sizeof w2)) {
      snprintf(why, wn, "%s line %d: %s", path, lineno, w2);
      r = -1;
    }
  }
  fclose(fp);
  if (r == 0 && srv->ncreds == 0) return snprintf(why, wn, "%s: no credential", path), -1;
  return r;
}

const srv_cred *srv_cred_find(const char *name, size_t len, int *known) {
  const char *want = len ? name : "default";
  /* A NUL or another byte no name has would let "reader\0x" pass for "reader": unknown. */
  for (int i = 0; (len == 0 || name_ok(name, len)) && i < srv->ncreds; i++)
    if (!strcmp(srv->creds[i].name, want)) return *known = 1, &srv->creds[i];
  pthread_once(&dummy_once, dummy_init);
  *known = 0;
  return &dummy;
}
