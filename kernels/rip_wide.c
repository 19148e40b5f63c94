/* rip kernels: the 16x8 kernels (see rip_wide.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_wide.h"

#include <stddef.h>
#include <string.h>

#include "rip_support.h"

/* TFLite's MultiplyByQuantizedMultiplier of an int64 (|x| < 2^47): the multiplier rounded
 * to 16 bits, one rounding shift; the result's low 32 bits. */
static inline int32_t mbqm64(int64_t x, int32_t multiplier, int32_t shift) {
    const int32_t reduced = multiplier < 0x7FFF0000 ? (multiplier + (1 << 15)) >> 16 : 0x7FFF;
    const int32_t total_shift = 15 - shift;
    const int64_t r = x * (int64_t)reduced + ((int64_t)1 << (total_shift - 1));
    return (int32_t)(uint32_t)(uint64_t)(r >> total_shift);
}

rip_status rip_fully_connected_s16(const rip_fully_connected_s16_params *p, const void *input,
                                   const int8_t *filter, const void *bias, void *output) {
    const int32_t n = p->input_depth, m = p->output_depth, bb = p->bias_bytes;
    if (p->batches < 1 || n < 1 || m < 1 || (bb != 0 && bb != 4 && bb != 8) ||
        (bb != 0 && bias == NULL)) {
        return RIP_ERROR_ARGUMENT;
    }
    const int8_t *x = (const int8_t *)input;
    int8_t *y = (int8_t *)output;
    for (int32_t b = 0; b < p->batches; ++b) {
        for (int32_t o = 0; o < m; ++o) {
            const int8_t *w = filter + (ptrdiff_t)o * n;
            const int32_t mult = p->multiplier[p->per_channel ? o : 0];
            const int32_t shift = p->shift[p->per_channel ? o : 0];
            int32_t scaled;
            if (p->wide_sum) {
                int64_t acc = 0;
                for (int32_t d = 0; d < n; ++d) {
                    const int32_t v = rip_load_le(x + 2 * ((ptrdiff_t)b * n + d), 2);
                    acc += (int64_t)w[d] * (v + p->input_offset);
                }
                if (bb == 8) {
                    int64_t bv;
                    memcpy(&bv, (const char *)bias + 8 * (ptrdiff_t)o, sizeof bv);
                    acc += bv;
                } else if (bb == 4) {
                    int32_t bv;
                    memcpy(&bv, (const char *)bias + 4 * (ptrdiff_t)o, sizeof bv);
                    acc += bv;
                }
                scaled = mbqm64(acc, mult, shift);
            } else {
                int32_t acc = 0;
                for (int32_t d = 0; d < n; ++d) {
                    const int32_t v = rip_load_le(x + 2 * ((ptrdiff_t)b * n + d), 2);
                    acc = rip_wrap_add32(acc, w[d] * (v + p->input_offset));
                }
                if (bb == 4) {
                    int32_t bv;
                    memcpy(&bv, (const char *)bias + 4 * (ptrdiff_t)o, sizeof bv);
                    acc = rip_wrap_add32(acc, bv);
                }
                scaled = rip_multiply_by_quantized_multiplier(acc, mult, shift);
            }
            scaled = rip_clamp32(rip_wrap_add32(scaled, p->output_offset), p->activation_min,
                                 p->activation_max);
            rip_store_le(y + 2 * ((ptrdiff_t)b * m + o), scaled, 2);
        }
    }
    return RIP_OK;
}
