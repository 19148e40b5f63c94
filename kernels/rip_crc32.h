/* CRC-32 as zlib computes it (reflected polynomial 0xEDB88320), for the result line's
 * checksum of the output bytes: the host side checks it with zlib.crc32. */
#ifndef RIP_CRC32_H
#define RIP_CRC32_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* crc = rip_crc32_update(0, a, n); crc = rip_crc32_update(crc, b, m); ... */
uint32_t rip_crc32_update(uint32_t crc, const void *data, uint32_t size);

#ifdef __cplusplus
}
#endif

#endif /* RIP_CRC32_H */
