/* The x-rio:// driver (driver/rio.c): files on a pario-server. What the driver-slot layer
 * (remote/layer.c) asks of it: the table, a description of a handle for MPI_File_get_info,
 * and closing every connection at MPI_Finalize. */
#ifndef PARIO_DRIVER_RIO_H
#define PARIO_DRIVER_RIO_H

#include "driver/driver.h"

extern const pario_driver pario_driver_rio;

typedef struct pario_rio_info {
  char server[300];       /* host:port as named */
  int version;            /* protocol version spoken (negotiated once connected) */
  char secret_file[512];  /* as given (hint or environment) */
  long long timeout_ms;
  int tls;                /* inside TLS (pario_rio_tls) */
  char tls_ca[512];       /* pario_rio_tls_ca as given */
  unsigned long long requests; /* READ and WRITE requests this handle sent */
  int connected;          /* the handle has reached the server */
} pario_rio_info;

/* Describe handle (a pario_driver_rio handle). */
void pario_rio_describe(void *handle, pario_rio_info *out);
/* Close every connection and wait (briefly) for their receiver threads: MPI_Finalize. */
void pario_rio_shutdown(void);

#endif
