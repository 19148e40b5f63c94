/* rip kernels: int8 L2_NORMALIZATION (see rip_norm.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_norm.h"
#include "rip_support.h"

/* 1 / sqrt(sum) as a quantized multiplier and a left shift (TFLite's
 * GetInvSqrtQuantizedMultiplierExp with reverse_shift -1). Fixed-point values carry their
 * integer bits in the name: q3 has 3, q6 has 6 (a product of two q3). */
static void inv_sqrt(int32_t sum, int32_t *multiplier, int32_t *shift) {
    if (sum <= 1) {
        *multiplier = INT32_MAX;
        *shift = 0;
        return;
    }
    int32_t right = 11;
    while (sum >= (1 << 29)) {
        sum /= 4;
        ++right;
    }
    const int pairs = (rip_clz32((uint32_t)sum) - 1) / 2 - 1;
    right -= pairs;
    sum = (int32_t)((uint32_t)sum << (2 * pairs)); /* now in [2^27, 2^29) */
    const int32_t q3_input = sum >> 1;
    const int32_t q3_half_input = rip_rounding_divide_by_pot(q3_input, 1);
    const int32_t q3_three_halves = (1 << 28) + (1 << 27);
    int32_t q3_x = 1 << 28; /* 1.0 */
    for (int i = 0; i < 5; ++i) {
        const int32_t q6_x2 = rip_sat_rounding_doubling_high_mul(q3_x, q3_x);
        const int32_t q9_x3 = rip_sat_rounding_doubling_high_mul(q6_x2, q3_x);
        const int32_t q3_x3 = rip_fp_mul_pot(q9_x3, 6);
        const int32_t q6_a = rip_sat_rounding_doubling_high_mul(q3_three_halves, q3_x);
        const int32_t q6_b = rip_sat_rounding_doubling_high_mul(q3_half_input, q3_x3);
        q3_x = rip_fp_mul_pot((int32_t)((uint32_t)q6_a - (uint32_t)q6_b), 3);
    }
    int32_t raw = rip_sat_rounding_doubling_high_mul(q3_x, 1518500250); /* * sqrt(2) / 2 */
    if (right < 0) {
        raw = (int32_t)((uint32_t)raw << -right);
        right = 0;
    }
    *multiplier = raw;
    *shift = -right;
}

rip_status rip_l2norm_s8(const rip_l2norm_params *params, const int8_t *input, int8_t *output) {
    const int32_t depth = params->depth;
    const int32_t zp = params->input_zero_point;
    if (depth <= 0 || params->outer_size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t row = 0; row < params->outer_size; ++row) {
        const int8_t *in = input + row * depth;
        int8_t *out = output + row * depth;
        int32_t sum = 0;
        for (int32_t i = 0; i < depth; ++i) {
            const int32_t v = in[i] - zp;
            sum += v * v;
        }
        int32_t multiplier, shift;
        inv_sqrt(sum, &multiplier, &shift);
        for (int32_t i = 0; i < depth; ++i) {
            /* 1/128 output units: seven more bits of left shift. */
            const int32_t v = rip_multiply_by_quantized_multiplier(in[i] - zp, multiplier,
                                                                   shift + 7);
            out[i] = (int8_t)rip_clamp32(v, -128, 127);
        }
    }
    return RIP_OK;
}
