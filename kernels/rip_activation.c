/* rip kernels: int8 activations (see rip_activation.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_activation.h"
#include "rip_support.h"

#include <stddef.h>

/* ---- gemmlowp fixed point on int32 (fixedpoint/fixedpoint.h), in our own words ----------
 * A value in Qm.(31-m) is a raw int32; rip_fp_mul (rip_support.h) multiplies two. */

#define FP_ONE_Q0 INT32_MAX       /* 1.0 in Q0.31 saturates to the largest raw value */
#define FP_ONE_Q2 (1 << 29)       /* 1.0 in Q2.29 */

/* exp(a) for a in [-1/4, 0), Q0.31 in and out: Taylor series about -1/8. */
static int32_t fp_exp_on_interval_between_negative_one_quarter_and_0_excl(int32_t a) {
    const int32_t constant_term = 1895147668; /* exp(-1/8) */
    const int32_t one_third = 715827883;
    const int32_t x = a + (1 << 28); /* a + 1/8 */
    const int32_t x2 = rip_fp_mul(x, x);
    const int32_t x3 = rip_fp_mul(x2, x);
    const int32_t x4 = rip_fp_mul(x2, x2);
    const int32_t x4_over_4 = rip_fp_mul_pot(x4, -2);
    const int32_t poly = rip_fp_mul_pot(rip_fp_mul(x4_over_4 + x3, one_third) + x2, -1);
    return constant_term + rip_fp_mul(constant_term, x + poly);
}

/* exp(a) for a <= 0 in Q(integer_bits), result Q0.31: the fraction modulo 1/4 by the series,
 * the rest by multiplying exp(-2^k) for each set bit of the remainder. */
static int32_t fp_exp_on_negative_values(int32_t a, int integer_bits) {
    static const int32_t barrel[7] = {
        1672461947, /* exp(-1/4) */
        1302514674, /* exp(-1/2) */
        790015084,  /* exp(-1) */
        290630308,  /* exp(-2) */
        39332535,   /* exp(-4) */
        720401,     /* exp(-8) */
        242,        /* exp(-16) */
    };
    const int fractional_bits = 31 - integer_bits;
    const int32_t one_quarter = (int32_t)1 << (fractional_bits - 2);
    const int32_t mask = one_quarter - 1;
    const int32_t a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter;
    int32_t result = fp_exp_on_interval_between_negative_one_quarter_and_0_excl(
        rip_fp_mul_pot(a_mod_quarter_minus_one_quarter, integer_bits));
    const int32_t remainder = a_mod_quarter_minus_one_quarter - a;
    for (int k = -2; k <= 4; ++k) {
        if (integer_bits > k && (remainder & ((int32_t)1 << (fractional_bits + k)))) {
            result = rip_fp_mul(result, barrel[k + 2]);
        }
    }
    if (integer_bits > 5) {
        const int32_t clamp = -((int32_t)1 << (36 - integer_bits)); /* -32 */
        if (a < clamp) {
            result = 0;
        }
    }
    return a == 0 ? FP_ONE_Q0 : result;
}

/* Newton-Raphson for 1 / (1 + a / 2) ... in Q2.29, from the half denominator (1 + a) / 2. */
static int32_t fp_newton_reciprocal_q2(int32_t half_denominator) {
    const int32_t constant_48_over_17 = 1515870810;
    const int32_t constant_neg_32_over_17 = -1010580540;
    int32_t x = constant_48_over_17 + rip_fp_mul(half_denominator, constant_neg_32_over_17);
    for (int i = 0; i < 3; ++i) {
        const int32_t half_denominator_times_x = rip_fp_mul(half_denominator, x);
        const int32_t one_minus = FP_ONE_Q2 - half_denominator_times_x;
        x = x + rip_fp_mul_pot(rip_fp_mul(x, one_minus), 2); /* Q4 product back to Q2 */
    }
    return x;
}

/* 1 / (1 + a) for a in [0, 1), Q0.31 in and out. */
static int32_t fp_one_over_one_plus_x_for_x_in_0_1(int32_t a) {
    const int32_t x = fp_newton_reciprocal_q2(rip_rounding_half_sum(a, FP_ONE_Q0));
    return rip_fp_mul_pot(x, 1); /* x / 2 in Q1 read as Q0 */
}

/* (1 - a) / (1 + a) for a in [0, 1), Q0.31 in and out. */
static int32_t fp_one_minus_x_over_one_plus_x_for_x_in_0_1(int32_t a) {
    const int32_t x = fp_newton_reciprocal_q2(rip_rounding_half_sum(a, FP_ONE_Q0));
    return rip_fp_mul_pot(x - FP_ONE_Q2, 2);
}

/* Logistic of a in Q(integer_bits), result Q0.31. */
static int32_t fp_logistic(int32_t a, int integer_bits) {
    const int32_t abs_a = a > 0 ? a : -a;
    const int32_t if_positive =
        fp_one_over_one_plus_x_for_x_in_0_1(fp_exp_on_negative_values(-abs_a, integer_bits));
    if (a == 0) {
        return 1 << 30; /* one half */
    }
    return a > 0 ? if_positive : FP_ONE_Q0 - if_positive;
}

/* tanh of a in Q(integer_bits), result Q0.31: tanh(-|a|) = -(1 - e) / (1 + e), e = exp(-2|a|);
 * doubling |a| is reading the same raw value with one more integer bit. */
static int32_t fp_tanh(int32_t a, int integer_bits) {
    const int32_t negative = a < 0 ? a : -a;
    const int32_t t = fp_one_minus_x_over_one_plus_x_for_x_in_0_1(
        fp_exp_on_negative_values(negative, integer_bits + 1));
    if (a == 0) {
        return 0;
    }
    return a < 0 ? -t : t;
}

/* ---- kernels ---------------------------------------------------------------------------- */

static rip_status requantize(const rip_requantize_params *p, const int8_t *input, int8_t *output,
                      int32_t size) {
    if (size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    if (p->clamp_only) {
        const int32_t offset = p->input_offset + p->output_offset;
        for (int32_t i = 0; i < size; ++i) {
            output[i] = (int8_t)rip_clamp32((int32_t)input[i] + offset, p->activation_min,
                                            p->activation_max);
        }
        return RIP_OK;
    }
    for (int32_t i = 0; i < size; ++i) {
        const int32_t y =
            p->output_offset + rip_multiply_by_quantized_multiplier(
                                   (int32_t)input[i] + p->input_offset, p->quant.multiplier,
                                   p->quant.shift);
        output[i] = (int8_t)rip_clamp32(y, p->activation_min, p->activation_max);
    }
    return RIP_OK;
}

rip_status rip_relu_s8(const rip_relu_params *params, int32_t size,
                       const int8_t *input, int8_t *output) {
    return requantize(params, input, output, size);
}

rip_status rip_quantize_s8(const rip_quantize_params *params, int32_t size,
                           const int8_t *input, int8_t *output) {
    return requantize(params, input, output, size);
}

/* LOGISTIC and TANH have TFLite's one shape: saturate outside the input radius, else the
 * fixed-point function of x in Q4.27, rescaled from Q0.31 to the output's steps: 1/256
 * with zero point -128 (logistic), 1/128 with zero point 0 (tanh). */
static rip_status sigmoid_like(const rip_sigmoid_params *params, const int8_t *input, int8_t *output,
                        int32_t size, int is_tanh) {
    if (size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t i = 0; i < size; ++i) {
        const int32_t x = (int32_t)input[i] - params->input_zero_point;
        int32_t y;
        if (x <= -params->input_range_radius) {
            y = INT8_MIN;
        } else if (x >= params->input_range_radius) {
            y = INT8_MAX;
        } else {
            /* The radius keeps x << input_left_shift inside int32. */
            const int32_t x_q4 = rip_multiply_by_quantized_multiplier(
                x, params->input_multiplier, params->input_left_shift);
            y = is_tanh ? rip_rounding_divide_by_pot(fp_tanh(x_q4, 4), 24)
                        : rip_rounding_divide_by_pot(fp_logistic(x_q4, 4), 23) - 128;
            y = rip_clamp32(y, INT8_MIN, INT8_MAX);
        }
        output[i] = (int8_t)y;
    }
    return RIP_OK;
}

rip_status rip_logistic_s8(const rip_logistic_params *params, int32_t size,
                           const int8_t *input, int8_t *output) {
    return sigmoid_like(params, input, output, size, 0);
}

rip_status rip_tanh_s8(const rip_tanh_params *params, int32_t size,
                       const int8_t *input, int8_t *output) {
    return sigmoid_like(params, input, output, size, 1);
}

/* TFLite's sigmoid table in 0.16 (sigmoid(i / 24) for i = 0..255, as TFLite rounded it):
 * each entry was read back from TFLite Micro's own int16 TANH (at input scale 1/48 and
 * integer inputs its interpolation weight is 0 and its output is entry - 32768), which
 * tests/test_wide.py repeats against the table below. */
const uint16_t rip_sigmoid_table[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149,
    40794, 41432, 42064, 42688, 43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369,
    47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409, 51865, 52311, 52745, 53169,
    53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370,
    60565, 60753, 60935, 61110, 61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302,
    62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186, 63279, 63368, 63454, 63536,
    63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786,
    64816, 64845, 64873, 64900, 64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079,
    65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208, 65221, 65234, 65246, 65258,
    65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433,
    65438, 65442, 65445, 65449, 65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474,
    65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491, 65493, 65495, 65497, 65498,
    65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522,
    65523, 65523, 65524, 65524, 65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528,
    65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530, 65530, 65530, 65531, 65531,
    65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534,
    65534, 65534, 65534, 65535,
};

/* One value of rip_sigmoid_s16: the rescaling (multiplier 0: a power-of-two input scale,
 * 3 << shift), then the table's interpolation. */
static int32_t sigmoid16(int32_t tanh, int32_t multiplier, int32_t shift, int32_t x) {
    if (multiplier == 0) {
        multiplier = 3 << shift;
        shift = 0;
    }
    const int32_t round = shift > 0 ? 1 << (shift - 1) : 0;
    /* the reference's int32 product, wrapping as it does in practice */
    return rip_sigmoid16_scaled(
        tanh, (int32_t)((uint32_t)x * (uint32_t)multiplier + (uint32_t)round) >> shift);
}

rip_status rip_sigmoid_s16(const rip_sigmoid_s16_params *p, int32_t size, const void *input,
                           void *output) {
    if (size < 0 || p->input_left_shift < 0 || p->input_left_shift > 31) {
        return RIP_ERROR_ARGUMENT;
    }
    const int8_t *x = (const int8_t *)input;
    int8_t *y = (int8_t *)output;
    for (int32_t i = 0; i < size; ++i) {
        const int32_t v = rip_load_le(x + 2 * i, 2);
        rip_store_le(y + 2 * i,
                     sigmoid16(p->tanh, p->input_multiplier, p->input_left_shift, v), 2);
    }
    return RIP_OK;
}

/* TFLite's LUTLookup of an int16 table: the high 9 bits pick the segment, the low 7
 * interpolate to the next entry. */
static int32_t lut16(const int16_t *lut, int32_t value) {
    const int32_t index = 256 + (value >> 7);
    const int32_t base = lut[index];
    const int32_t slope = lut[index + 1] - base;
    return (int16_t)(base + ((slope * (value & 0x7F) + 64) >> 7));
}

rip_status rip_softmax_s16(const rip_softmax_s16_params *p, int32_t num_rows, int32_t row_size,
                           const void *input, void *output) {
    if (num_rows < 0 || row_size < 1 || p->exp_lut == NULL ||
        p->one_over_one_plus_x_lut == NULL) {
        return RIP_ERROR_ARGUMENT;
    }
    const int8_t *x = (const int8_t *)input;
    int8_t *y = (int8_t *)output;
    for (int32_t r = 0; r < num_rows; ++r) {
        const int8_t *in = x + 2 * (ptrdiff_t)r * row_size;
        int8_t *out = y + 2 * (ptrdiff_t)r * row_size;
        int32_t max = INT16_MIN;
        for (int32_t c = 0; c < row_size; ++c) {
            max = rip_max32(max, rip_load_le(in + 2 * c, 2));
        }
        int32_t sum = 0; /* Q16.15 */
        for (int32_t c = 0; c < row_size; ++c) {
            const int32_t diff = rip_load_le(in + 2 * c, 2) - max;
            const int32_t scaled =
                rip_multiply_by_quantized_multiplier(diff, p->input_multiplier, p->input_left_shift);
            const int32_t e = lut16(p->exp_lut, rip_clamp32(scaled + 32767, INT16_MIN, INT16_MAX));
            rip_store_le(out + 2 * c, e, 2);
            sum += e;
        }
        /* the reciprocal of the sum from 1 / (1 + x) over x = sum normalised - 1, centred */
        const int headroom_plus_one = rip_clz32((uint32_t)sum);
        const int32_t shifted =
            (int32_t)((((int64_t)sum << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
        const int32_t reciprocal = lut16(
            p->one_over_one_plus_x_lut,
            rip_clamp32(shifted - ((1 << 15) + (1 << 16)), INT16_MIN, INT16_MAX));
        const int right_shift = 31 - headroom_plus_one;
        const int64_t round = (int64_t)1 << (right_shift - 1);
        for (int32_t c = 0; c < row_size; ++c) {
            const int64_t v = (int64_t)rip_load_le(out + 2 * c, 2) * reciprocal + round;
            rip_store_le(out + 2 * c, rip_clamp32((int32_t)(v >> right_shift), 0, 32767), 2);
        }
    }
    return RIP_OK;
}

rip_status rip_hard_swish_s8(const rip_hard_swish_params *params, int32_t size,
                             const int8_t *input, int8_t *output) {
    if (size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    const int16_t output_multiplier = (int16_t)params->output_multiplier_fixedpoint_int16;
    const int16_t reluish_multiplier = (int16_t)params->reluish_multiplier_fixedpoint_int16;
    const int reluish_exponent = (int)params->reluish_multiplier_exponent;
    for (int32_t i = 0; i < size; ++i) {
        const int16_t x = (int16_t)((int32_t)input[i] - params->input_zero_point);
        /* 7 bits of headroom used up front: |x| <= 255, so x * 128 fits int16. */
        const int16_t x_hires = (int16_t)(x * (1 << 7));
        const int16_t x_preshift_output =
            rip_sat_rounding_doubling_high_mul16(x_hires, output_multiplier);
        /* "Relu-ish" factor: x on a scale where 3.0 is 32768, saturated to [-1, 1]. The
         * left shift is split so that only its last bit can saturate. */
        int16_t reluish = x_hires;
        if (reluish_exponent > 0) {
            reluish = rip_saturating_left_shift16(reluish, reluish_exponent - 1);
        }
        reluish = rip_sat_rounding_doubling_high_mul16(reluish, reluish_multiplier);
        if (reluish_exponent > 0) {
            reluish = rip_saturating_left_shift16(reluish, 1);
        }
        if (reluish_exponent < 0) {
            reluish = rip_rounding_divide_by_pot16(reluish, -reluish_exponent);
        }
        reluish = (int16_t)(((int32_t)reluish + (1 << 15)) >> 1); /* [-1, 1] to [0, 1] */
        const int16_t preshift = rip_sat_doubling_high_mul16(reluish, x_preshift_output);
        int16_t y =
            rip_rounding_divide_by_pot16(preshift, -(int)params->output_multiplier_exponent);
        y = (int16_t)(y + params->output_zero_point);
        output[i] = (int8_t)(y > INT8_MAX ? INT8_MAX : (y < INT8_MIN ? INT8_MIN : y));
    }
    return RIP_OK;
}

/* Softmax of TFLite's reference (gemmlowp fixed point) into int8 (out_bits 8) or int16
 * (out_bits 16) outputs, each stored by `store`. */
static rip_status softmax_rows(const rip_softmax_params *params, int32_t num_rows,
                               int32_t row_size, const int8_t *input, void *output,
                               int out_bits) {
    if (num_rows < 0 || row_size <= 0) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t out_min = out_bits == 16 ? INT16_MIN : INT8_MIN;
    const int32_t out_max = out_bits == 16 ? INT16_MAX : INT8_MAX;
    /* exp's argument is Q5.26; the sum of up to 2^12 terms in [0, 1] is Q12.19. */
    enum { kScaledDiffIntegerBits = 5, kAccumulationIntegerBits = 12 };
    for (int32_t r = 0; r < num_rows; ++r) {
        const int8_t *x = input + (int32_t)r * row_size;
        int32_t max_in_row = INT8_MIN;
        for (int32_t c = 0; c < row_size; ++c) {
            max_in_row = rip_max32(max_in_row, x[c]);
        }
        int32_t sum_of_exps = 0;
        for (int32_t c = 0; c < row_size; ++c) {
            const int32_t diff = (int32_t)x[c] - max_in_row;
            if (diff >= params->diff_min) {
                const int32_t scaled = rip_multiply_by_quantized_multiplier_greater_than_one(
                    diff, params->input_multiplier, params->input_left_shift);
                sum_of_exps +=
                    rip_fp_mul_pot(fp_exp_on_negative_values(scaled, kScaledDiffIntegerBits),
                                   -kAccumulationIntegerBits);
            }
        }
        /* 1 / sum: normalise the sum to [1, 2), take 1 / (1 + f) and remember the shift.
         * The row maximum contributes exp(0), so the sum is never zero. */
        const int headroom_plus_one = rip_clz32((uint32_t)sum_of_exps);
        const int num_bits_over_unit = kAccumulationIntegerBits - headroom_plus_one;
        const int32_t shifted_sum_minus_one =
            (int32_t)(((uint32_t)sum_of_exps << headroom_plus_one) - (1u << 31));
        const int32_t shifted_scale = fp_one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one);
        const int exponent = num_bits_over_unit + 31 - out_bits;
        if (exponent < 0 || exponent > 31) {
            return RIP_ERROR_ARGUMENT; /* TFLite aborts here (TFLITE_CHECK) */
        }
        for (int32_t c = 0; c < row_size; ++c) {
            const int32_t diff = (int32_t)x[c] - max_in_row;
            int32_t out = out_min;
            if (diff >= params->diff_min) {
                const int32_t scaled = rip_multiply_by_quantized_multiplier_greater_than_one(
                    diff, params->input_multiplier, params->input_left_shift);
                const int32_t e = fp_exp_on_negative_values(scaled, kScaledDiffIntegerBits);
                out = rip_rounding_divide_by_pot(rip_fp_mul(shifted_scale, e), exponent) + out_min;
                out = rip_clamp32(out, out_min, out_max);
            }
            rip_store_le((int8_t *)output + ((ptrdiff_t)r * row_size + c) * (out_bits / 8), out,
                         out_bits / 8);
        }
    }
    return RIP_OK;
}

rip_status rip_softmax_s8(const rip_softmax_params *params, int32_t num_rows, int32_t row_size,
                          const int8_t *input, int8_t *output) {
    return softmax_rows(params, num_rows, row_size, input, output, 8);
}

rip_status rip_softmax_s8_s16(const rip_softmax_params *params, int32_t num_rows,
                              int32_t row_size, const int8_t *input, void *output) {
    return softmax_rows(params, num_rows, row_size, input, output, 16);
}

rip_status rip_quantize_wide(const rip_quantize_wide_params *params, int32_t size,
                             const void *input, void *output) {
    const int32_t ib = params->input_bytes, ob = params->output_bytes;
    if (size < 0 || (ib != 1 && ib != 2 && ib != 4) || (ob != 1 && ob != 2 && ob != 4)) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t lo = params->activation_min, hi = params->activation_max;
    const int8_t *x = (const int8_t *)input;
    int8_t *y = (int8_t *)output;
    for (int32_t i = 0; i < size; ++i) {
        const int32_t v = rip_wrap_sub32(rip_load_le(x + (ptrdiff_t)i * ib, ib),
                                         params->input_zero_point);
        const int32_t q = rip_wrap_add32(
            rip_multiply_by_quantized_multiplier(v, params->multiplier, params->shift),
            params->output_zero_point);
        rip_store_le(y + (ptrdiff_t)i * ob, rip_clamp32(q, lo, hi), ob);
    }
    return RIP_OK;
}

rip_status rip_lut_s8(const rip_lut_params *params, int32_t size, const int8_t *input,
                      int8_t *output) {
    if (size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t i = 0; i < size; ++i) {
        output[i] = params->table[(uint8_t)input[i]];
    }
    return RIP_OK;
}

/* ---- LOG_SOFTMAX: gemmlowp fixed point, the log of TFLite's common.h in our own words ---- */

/* log(x) for x >= 1 given in Q12.19, result in Q5.26: x = 2^k r with r in [sqrt(1/2), 1)
 * or the same times sqrt(1/2) (whichever leaves r nearer 1), then k log 2 plus a rational
 * approximation of log(r) around sqrt(sqrt(1/2)); the sum carries one extra integer bit. */
static int32_t fp_log_q12_to_q5(int32_t x) {
    enum { kInputBits = 12, kAccumBits = 6 };
    const int32_t log_2 = 1488522236;
    const int32_t sqrt_sqrt_half = 1805811301;
    const int32_t sqrt_half = 1518500250;
    const int32_t alpha_n = 117049297;
    const int32_t alpha_d = 127690142;
    const int32_t alpha_i = 1057819769;
    const int32_t alpha_f = 638450708;
    const int32_t shifted_quarter = rip_fp_mul_pot(536870912, -kAccumBits); /* 1/4 in Q6 */

    const int z_a_headroom_plus_1 = rip_clz32((uint32_t)x);
    const int32_t r_a_tmp = rip_fp_mul_pot(x, z_a_headroom_plus_1 - 1);
    const int32_t r_a = rip_fp_mul_pot(rip_fp_mul(r_a_tmp, sqrt_half), 1);
    const int32_t z_a_pow_2_adj =
        rip_sat_add32(rip_fp_mul_pot(kInputBits - z_a_headroom_plus_1, 31 - kAccumBits),
                      shifted_quarter);

    const int32_t z_b = rip_fp_mul(x, sqrt_half);
    const int z_b_headroom = rip_clz32((uint32_t)z_b) - 1;
    const int32_t r_b = rip_fp_mul_pot(x, z_b_headroom);
    const int32_t z_b_pow_2_adj =
        rip_sat_sub32(rip_fp_mul_pot(kInputBits - z_b_headroom, 31 - kAccumBits), shifted_quarter);

    const int32_t r = r_a < r_b ? r_a : r_b;
    const int32_t z_pow_2_adj = z_a_pow_2_adj > z_b_pow_2_adj ? z_a_pow_2_adj : z_b_pow_2_adj;

    const int32_t p = rip_rounding_half_sum(r, sqrt_sqrt_half);
    int32_t q = rip_wrap_sub32(r, sqrt_sqrt_half);
    q = rip_wrap_add32(q, q);
    const int32_t common_sq = rip_fp_mul(q, q);
    const int32_t num =
        rip_wrap_add32(rip_fp_mul(q, r), rip_fp_mul(rip_fp_mul(q, common_sq), alpha_n));
    const int32_t denom_minus_one = rip_wrap_add32(
        rip_fp_mul(p, rip_wrap_add32(rip_wrap_add32(alpha_i, q), rip_fp_mul(alpha_d, common_sq))),
        rip_fp_mul(alpha_f, q));
    const int32_t recip_denom = fp_one_over_one_plus_x_for_x_in_0_1(denom_minus_one);
    const int32_t num_scaled = rip_fp_mul_pot(num, -kAccumBits);
    const int32_t sum =
        rip_wrap_add32(rip_fp_mul(z_pow_2_adj, log_2), rip_fp_mul(num_scaled, recip_denom));
    return rip_fp_mul_pot(sum, kAccumBits - 5);
}

rip_status rip_log_softmax_s8(const rip_log_softmax_params *params, int32_t num_rows,
                              int32_t row_size, const int8_t *input, int8_t *output) {
    if (num_rows < 0 || row_size <= 0) {
        return RIP_ERROR_ARGUMENT;
    }
    /* exp's argument is Q5.26; the sum of up to 2^12 terms in [0, 1] is Q12.19; the output
     * is Q4 above the output step: 31 - 5 - 4 bits are rounded away. */
    enum { kScaledDiffIntegerBits = 5, kAccumulationIntegerBits = 12, kOutputIntegerBits = 4 };
    for (int32_t row = 0; row < num_rows; ++row) {
        const int8_t *x = input + row * row_size;
        int8_t *y = output + row * row_size;
        int32_t max_in_row = INT8_MIN;
        for (int32_t c = 0; c < row_size; ++c) {
            max_in_row = rip_max32(max_in_row, x[c]);
        }
        int32_t sum_of_exps = 0;
        for (int32_t c = 0; c < row_size; ++c) {
            const int32_t diff = (int32_t)x[c] - max_in_row;
            if (diff >= params->diff_min) {
                const int32_t scaled = rip_multiply_by_quantized_multiplier(
                    diff, params->input_multiplier, params->input_left_shift);
                sum_of_exps = rip_wrap_add32(
                    sum_of_exps,
                    rip_fp_mul_pot(fp_exp_on_negative_values(scaled, kScaledDiffIntegerBits),
                                   -kAccumulationIntegerBits));
            }
        }
        const int32_t log_sum = fp_log_q12_to_q5(sum_of_exps);
        const int32_t adjusted_diff_min = rip_max32(
            params->diff_min - 1,
            rip_multiply_by_quantized_multiplier(rip_wrap_add32(log_sum, INT32_MIN),
                                                 params->reverse_multiplier,
                                                 params->reverse_shift));
        for (int32_t c = 0; c < row_size; ++c) {
            const int32_t diff = (int32_t)x[c] - max_in_row;
            int32_t out = INT8_MIN;
            if (diff > adjusted_diff_min) {
                const int32_t scaled = rip_multiply_by_quantized_multiplier(
                    diff, params->input_multiplier, params->input_left_shift);
                out = rip_rounding_divide_by_pot(
                          rip_wrap_sub32(scaled, log_sum),
                          31 - kScaledDiffIntegerBits - kOutputIntegerBits) +
                      INT8_MAX;
                out = rip_clamp32(out, INT8_MIN, INT8_MAX);
            }
            y[c] = (int8_t)out;
        }
    }
    return RIP_OK;
}
