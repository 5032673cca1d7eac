/* The driver-slot layer for files on a pario-server (x-rio://, driver/rio.c): through
 * MPI_File_get_info it reports the server, the protocol version, the secret file, the
 * timeout, TLS, the requests sent and whether this rank reached the server; at close every rank
 * has finished before any closes its server handle; at MPI_Finalize it closes the driver's
 * connections. No per-file state: the driver's handle is the state. */
#include "core/comm.h"
#include "core/file.h"
#include "driver/rio.h"

#include <stdio.h>

static void set_ll(MPI_Info info, const char *k, long long v) {
  char s[32];
  snprintf(s, sizeof s, "%lld", v);
  PMPI_Info_set(info, k, s);
}

static void hook_get_info(pario_file *f, void *state, MPI_Info info) {
  (void)state;
  if (f->drv != &pario_driver_rio || !f->dh) return;
  pario_rio_info ri;
  pario_rio_describe(f->dh, &ri);
  char t[32];
  PMPI_Info_set(info, "pario_rio_server", ri.server);
  set_ll(info, "pario_rio_protocol", ri.version);
  PMPI_Info_set(info, "pario_rio_secret_file", ri.secret_file);
  snprintf(t, sizeof t, "%g", (double)ri.timeout_ms / 1000.0);
  PMPI_Info_set(info, "pario_rio_timeout", t);
  PMPI_Info_set(info, "pario_rio_tls", ri.tls ? "true" : "false");
  if (ri.tls_ca[0]) PMPI_Info_set(info, "pario_rio_tls_ca", ri.tls_ca);
  /* This rank's READ and WRITE requests on the file so far (0 on a rank that never needed
   * the server), so a program can see how its accesses travel. */
  set_ll(info, "pario_rio_requests", (long long)ri.requests);
  PMPI_Info_set(info, "pario_rio_connected", ri.connected ? "true" : "false");
}

/* MPI_File_close, before the storage is closed: every rank's operations on the file are done
 * before any rank closes its server handle. Ranks other than 0 open their handle lazily, at
 * their first operation, and the server keeps a file's shared-pointer counter only while a
 * handle of the file is open; ordered calls do not synchronise at their end, so without this
 * a slow rank could open its handle after the others closed theirs and find a fresh counter
 * (its MPI_File_get_position_shared said 0). */
static int hook_close(pario_file *f, void *state, const char *op) {
  (void)state, (void)op;
  if (f->drv != &pario_driver_rio) return MPI_SUCCESS;
  MPI_Request r;
  PMPI_Ibarrier(f->comm, &r);
  pario_wait_all_short(1, &r, MPI_STATUSES_IGNORE); /* politely: see core/comm.c */
  return MPI_SUCCESS;
}

static void hook_finalize(void) { pario_rio_shutdown(); }

static const pario_layer remote_layer = {
    .name = "remote",
    .get_info = hook_get_info,
    .close = hook_close,
    .finalize = hook_finalize,
};

__attribute__((constructor)) static void remote_register(void) {
  pario_layer_register(PARIO_SLOT_DRIVER, &remote_layer);
}
