#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_crc32.h"

/* Bitwise, table-free: 1 KB less flash than a table, and the checksum runs once per
 * inference over a few hundred output bytes. */
uint32_t rip_crc32_update(uint32_t crc, const void *data, uint32_t size) {
    const uint8_t *p = (const uint8_t *)data;
    crc = ~crc;
    for (uint32_t i = 0; i < size; i++) {
        crc ^= p[i];
        for (int bit = 0; bit < 8; bit++) {
            crc = (crc >> 1) ^ (0xEDB88320u & (0u - (crc & 1u)));
        }
    }
    return ~crc;
}
