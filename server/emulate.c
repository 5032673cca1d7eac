/* Emulated links and storage (--emulate), so wide-area experiments can be repeated on one
 * machine without netem: a fixed latency added to every frame in each direction, a bandwidth
 * token bucket per connection and direction, and a storage bandwidth shared by the whole
 * server. Each is a sleep of the thread that moves the bytes (docs/remote.md says exactly
 * what that models and what it does not). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server.h"

static void sleep_until(uint64_t t) {
  struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
  }
}

/* "100ms", "2s", "500us" -> ns; "20MB/s", "1GB/s", "100KB/s" -> bytes/s (powers of 10^3). */
static int parse_num(const char *v, const char *const *units, const uint64_t *mult, uint64_t *out) {
  char *end;
  errno = 0;
  double d = strtod(v, &end);
  if (errno || end == v || d < 0) return -1;
  for (int i = 0; units[i]; i++)
    if (!strcmp(end, units[i])) {
      *out = (uint64_t)(d * (double)mult[i]);
      return 0;
    }
  return -1;
}

int srv_emulate_parse(const char *s, srv_emulate *e, char *why, size_t whylen) {
  static const char *const tu[] = {"ns", "us", "ms", "s", NULL};
  static const uint64_t tm[] = {1, 1000, 1000000, 1000000000};
  static const char *const bu[] = {"B/s", "KB/s", "MB/s", "GB/s", "KiB/s", "MiB/s", "GiB/s", NULL};
  static const uint64_t bm[] = {1, 1000, 1000000, 1000000000, 1024, 1048576, 1073741824};
  char buf[256];
  if (strlen(s) >= sizeof buf) return snprintf(why, whylen, "--emulate: too long"), -1;
  strcpy(buf, s);
  memset(e, 0, sizeof *e);
  for (char *save = NULL, *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
    char *eq = strchr(kv, '=');
    if (!eq) return snprintf(why, whylen, "--emulate: '%s' is not key=value", kv), -1;
    *eq = '\0';
    const char *k = kv, *v = eq + 1;
    int bad = 0;
    if (!strcmp(k, "net_latency")) bad = parse_num(v, tu, tm, &e->net_latency_ns);
    else if (!strcmp(k, "net_bw")) bad = parse_num(v, bu, bm, &e->net_bw) || e->net_bw == 0;
    else if (!strcmp(k, "disk_bw")) bad = parse_num(v, bu, bm, &e->disk_bw) || e->disk_bw == 0;
    else if (!strcmp(k, "cache")) {
      if (!strcmp(v, "none")) e->cache_none = 1;
      else if (!strcmp(v, "os")) e->cache_none = 0;
      else bad = 1;
    } else {
      return snprintf(why, whylen, "--emulate: unknown key '%s' (net_latency, net_bw, disk_bw, cache)", k), -1;
    }
    if (bad) return snprintf(why, whylen, "--emulate: bad value '%s' for %s", v, k), -1;
  }
  return 0;
}

/* A frame (or a chunk of one) of `bytes` crossing the link: the latency once per frame header
 * (bytes >= RIO_HDR_SIZE marks a new frame: callers pass whole frames or data chunks), and the
 * bandwidth as a token bucket: the bytes may leave only after the previous ones have. */
void srv_emulate_net(srv_conn *c, int dir_out, size_t bytes) {
  const srv_emulate *e = &srv->cfg.emu;
  if (!e->net_bw && !e->net_latency_ns) return;
  uint64_t now = srv_now_ns(), due = now;
  if (e->net_bw) {
    pthread_mutex_lock(&c->emu_mu);
    uint64_t *next = dir_out ? &c->bw_next_out : &c->bw_next_in;
    uint64_t start = *next > now ? *next : now;
    *next = start + (uint64_t)((double)bytes * 1e9 / (double)e->net_bw);
    due = *next;
    pthread_mutex_unlock(&c->emu_mu);
  }
  sleep_until(due + e->net_latency_ns);
}

static pthread_mutex_t disk_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t disk_next;

void srv_emulate_disk(size_t bytes) {
  uint64_t bw = srv->cfg.emu.disk_bw;
  if (!bw) return;
  uint64_t now = srv_now_ns();
  pthread_mutex_lock(&disk_mu);
  uint64_t start = disk_next > now ? disk_next : now;
  disk_next = start + (uint64_t)((double)bytes * 1e9 / (double)bw);
  uint64_t due = disk_next;
  pthread_mutex_unlock(&disk_mu);
  sleep_until(due);
}
