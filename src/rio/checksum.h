/* File checksums of the CHECKSUM request (PROTOCOL.md): Adler-32 and CRC32C (Castagnoli),
 * computed piece by piece, shared by pario-server and libpario's local fallback. Pure
 * functions: no I/O, no allocation. */
#ifndef PARIO_RIO_CHECKSUM_H
#define PARIO_RIO_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

enum { RIO_SUM_ADLER32 = 1, RIO_SUM_CRC32C = 2 };

/* The value of no bytes: 1 for Adler-32, 0 for CRC32C (0 for an unknown algorithm). */
uint32_t rio_sum_start(unsigned algo);
/* The value of the bytes already summed (v) followed by p[0..n): the running value is the
 * finished checksum of everything so far, so a sum can stop and go on anywhere. */
uint32_t rio_sum_update(unsigned algo, uint32_t v, const void *p, size_t n);
uint32_t rio_adler32(uint32_t v, const uint8_t *p, size_t n);
uint32_t rio_crc32c(uint32_t v, const uint8_t *p, size_t n);
/* "adler32" -> RIO_SUM_ADLER32, "crc32c" -> RIO_SUM_CRC32C, anything else 0. */
unsigned rio_sum_algo(const char *name);
const char *rio_sum_name(unsigned algo);

#endif
