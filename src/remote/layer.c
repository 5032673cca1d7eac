/* The driver-slot layer for files on a pario-server (x-rio://, driver/rio.c): through
 * MPI_File_get_info it reports the server, the protocol version, the secret file, the
 * timeout, TLS, the requests sent and whether this rank reached the server; at MPI_Finalize it
 * closes the driver's connections. No per-file state: the driver's handle is the state. */
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

static void hook_finalize(void) { pario_rio_shutdown(); }

static const pario_layer remote_layer = {
    .name = "remote",
    .get_info = hook_get_info,
    .finalize = hook_finalize,
};

__attribute__((constructor)) static void remote_register(void) {
  pario_layer_register(PARIO_SLOT_DRIVER, &remote_layer);
}
