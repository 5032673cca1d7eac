/* Adler-32 (RFC 1950) and CRC32C (Castagnoli, iSCSI's RFC 3720 polynomial 0x82F63B78,
 * reflected) for the CHECKSUM request and libpario's local checksums. Slicing-by-8 tables
 * built once, so the server sums a MiB in well under a millisecond per GHz. */
#include "checksum.h"

#include <pthread.h>
#include <string.h>

#define ADLER_MOD 65521u
#define ADLER_NMAX 5552 /* the most bytes before the 32-bit sums could overflow */
#define CRC32C_POLY 0x82F63B78u

uint32_t rio_adler32(uint32_t v, const uint8_t *p, size_t n) {
  uint32_t a = v & 0xffff, b = v >> 16;
  while (n > 0) {
    size_t k = n < ADLER_NMAX ? n : ADLER_NMAX;
    n -= k;
    while (k--) {
      a += *p++;
      b += a;
    }
    a %= ADLER_MOD;
    b %= ADLER_MOD;
  }
  return (b << 16) | a;
}

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
  for (uint32_t i = 0; i < 256; i++) {
    uint32_t c = i;
    for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
    crc_table[0][i] = c;
  }
  for (int t = 1; t < 8; t++)
    for (int i = 0; i < 256; i++) crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

uint32_t rio_crc32c(uint32_t v, const uint8_t *p, size_t n) {
  pthread_once(&crc_once, crc_init);
  uint32_t c = ~v;
  for (; n >= 8; p += 8, n -= 8) { /* eight bytes per step, one table per byte position */
    uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
    c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^ crc_table[5][(lo >> 16) & 0xff] ^
        crc_table[4][lo >> 24] ^ crc_table[3][p[4]] ^ crc_table[2][p[5]] ^ crc_table[1][p[6]] ^ crc_table[0][p[7]];
  }
  while (n--) c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
  return ~c;
}

uint32_t rio_sum_start(unsigned algo) { return algo == RIO_SUM_ADLER32 ? 1u : 0u; }

uint32_t rio_sum_update(unsigned algo, uint32_t v, const void *p, size_t n) {
  if (algo == RIO_SUM_ADLER32) return rio_adler32(v, p, n);
  if (algo == RIO_SUM_CRC32C) return rio_crc32c(v, p, n);
  return 0;
}

unsigned rio_sum_algo(const char *name) {
  if (!name) return 0;
  if (!strcmp(name, "adler32")) return RIO_SUM_ADLER32;
  if (!strcmp(name, "crc32c")) return RIO_SUM_CRC32C;
  return 0;
}

const char *rio_sum_name(unsigned algo) {
  return algo == RIO_SUM_ADLER32 ? "adler32" : algo == RIO_SUM_CRC32C ? "crc32c" : "unknown";
}
