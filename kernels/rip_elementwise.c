/* rip kernels: int8 ADD, SUB and MUL (see rip_elementwise.h for the contract). */
#include "rip_elementwise.h"
#include "rip_conv_internal.h" /* rip_smmulr: SMMULR, or 16-bit products on ARMv6-M */

static int sizes_ok(int32_t input1_size, int32_t input2_size, int32_t output_size) {
    return input1_size > 0 && input2_size > 0 && output_size > 0 &&
           output_size % input1_size == 0 && output_size % input2_size == 0;
}

/* ---------------------------------------------------------------------------------------- */
/* ADD and SUB in closed form: every multiply in 32 bits but the output's                   */
/* ---------------------------------------------------------------------------------------- */

/* One operand's term MultiplyByQuantizedMultiplierSmallerThanOneExp((x + offset) << 20, m,
 * -e) without a 64-bit product. With a = x + offset (|a| <= 255) and m = mh * 2^11 + ml:
 * SaturatingRoundingDoublingHighMul(a * 2^20, m) = floor((a * m * 2^20 + 2^30) / 2^31)
 * (the reference's truncation of a negative product is this floor) = floor((a * m + 2^10) /
 * 2^11) = a * mh + floor((a * ml + 2^10) / 2^11): a * mh < 2^28 and a * ml < 2^19. Then
 * RoundingDivideByPOT(v, e) = (v + 2^(e - 1) - [v < 0]) >> e for e >= 1 (v = q * 2^e + r
 * carries into q exactly when r > 2^(e - 1) - 1 + [v < 0], the reference's threshold), and
 * v for e = 0. */
typedef struct {
    int32_t mh, ml; /* the multiplier's high and low 11 bits */
    int32_t c1, c2; /* offset * mh and offset * ml + 2^10: the offset folded in */
    int32_t half, e;
    int32_t neg; /* -1: subtract [v < 0]; 0 where e = 0 (no rounding) */
} rip_add_term;

static int add_term_init(rip_add_term *t, int32_t offset, int32_t left_shift, rip_quant q) {
    if (left_shift != 20 || offset < -128 || offset > 128 || q.multiplier < 0 ||
        q.shift > 0 || q.shift < -31) {
        return 0;
    }
    t->mh = q.multiplier >> 11;
    t->ml = q.multiplier & 0x7FF;
    t->c1 = offset * t->mh;
    t->c2 = offset * t->ml + (1 << 10);
    t->e = -q.shift;
    t->half = t->e > 0 ? 1 << (t->e - 1) : 0;
    t->neg = t->e > 0 ? -1 : 0;
    return 1;
}

static inline int32_t add_term(const rip_add_term *t, int32_t x) {
    const int32_t v = x * t->mh + t->c1 + ((x * t->ml + t->c2) >> 11);
    return (v + t->half + ((v >> 31) & t->neg)) >> t->e;
}

/* The output's MultiplyByQuantizedMultiplierSmallerThanOneExp(raw, m, -e) + offset,
 * clamped, for |raw| < 2^29 (two terms of |v| < 2^28) and e >= 1: SRDHM(raw, m) =
 * floor((raw * m + 2^30) / 2^31) = floor((2 raw * m + 2^31) / 2^32) = rip_smmulr(2 raw, m)
 * (one SMMULR on DSP cores, no 64-bit multiply call on ARMv6-M); then the rounding shift
 * as above. */
static inline int32_t add_output(int32_t raw, int32_t m, int32_t half, int32_t e,
                                 int32_t offset, int32_t lo, int32_t hi) {
    const int32_t t = rip_smmulr(raw + raw, m);
    const int32_t y = ((t + half + (t >> 31)) >> e) + offset;
    return y < lo ? lo : (y > hi ? hi : y);
}

/* add_sub with the closed forms, where their conditions hold (TFLite's int8 parameters
 * always meet them: left shift 20, zero points in int8, multipliers below one); 0 if not. */
static int add_sub_fast(const rip_add_params *p, int32_t sign, const int8_t *input1,
                        int32_t input1_size, const int8_t *input2, int32_t input2_size,
                        int8_t *output, int32_t output_size) {
    rip_add_term t1, t2;
    const int32_t m = p->output.multiplier, e = -p->output.shift;
    if (!add_term_init(&t1, p->input1_offset, p->left_shift, p->input1) ||
        !add_term_init(&t2, p->input2_offset, p->left_shift, p->input2) || m < 0 || e < 1 ||
        e > 31) {
        return 0;
    }
    const int32_t half = 1 << (e - 1), off = p->output_offset;
    const int32_t lo = p->activation_min, hi = p->activation_max;
    if (input1_size == output_size && input2_size == output_size) {
        /* Both operands are read into registers before output[i] is stored (in place). */
        for (int32_t i = 0; i < output_size; ++i) {
            const int32_t a = add_term(&t1, input1[i]);
            const int32_t b = sign > 0 ? add_term(&t2, input2[i]) : -add_term(&t2, input2[i]);
            output[i] = (int8_t)add_output(a + b, m, half, e, off, lo, hi);
        }
        return 1;
    }
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        const int32_t a = add_term(&t1, input1[j1]);
        const int32_t b = sign > 0 ? add_term(&t2, input2[j2]) : -add_term(&t2, input2[j2]);
        output[i] = (int8_t)add_output(a + b, m, half, e, off, lo, hi);
        if (++j1 == input1_size) {
            j1 = 0;
        }
        if (++j2 == input2_size) {
            j2 = 0;
        }
    }
    return 1;
}

/* ADD (sign = 1) and SUB (sign = -1) share everything but the sign of the second term. */
static rip_status add_sub(const rip_add_params *p, int32_t sign, const int8_t *input1,
                   int32_t input1_size, const int8_t *input2, int32_t input2_size,
                   int8_t *output, int32_t output_size) {
    if (!sizes_ok(input1_size, input2_size, output_size)) {
        return RIP_ERROR_ARGUMENT;
    }
    if (add_sub_fast(p, sign, input1, input1_size, input2, input2_size, output, output_size)) {
        return RIP_OK;
    }
    /* Wrapping counters instead of i % n: a broadcast operand restarts every n elements. */
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        /* Both operands are read into registers before output[i] is stored (in place). */
        const int32_t a = (int32_t)input1[j1] + p->input1_offset;
        const int32_t b = (int32_t)input2[j2] + p->input2_offset;
        /* |a| <= 255, so a << 20 fits in 31 bits: the reference's multiply cannot overflow. */
        const int32_t scaled_a = rip_multiply_by_quantized_multiplier_smaller_than_one(
            a * (1 << p->left_shift), p->input1.multiplier, p->input1.shift);
        const int32_t scaled_b = rip_multiply_by_quantized_multiplier_smaller_than_one(
            b * (1 << p->left_shift), p->input2.multiplier, p->input2.shift);
        const int32_t raw = sign > 0 ? scaled_a + scaled_b : scaled_a - scaled_b;
        const int32_t y = rip_multiply_by_quantized_multiplier_smaller_than_one(
                              raw, p->output.multiplier, p->output.shift) +
                          p->output_offset;
        output[i] = (int8_t)rip_clamp32(y, p->activation_min, p->activation_max);
        if (++j1 == input1_size) {
            j1 = 0;
        }
        if (++j2 == input2_size) {
            j2 = 0;
        }
    }
    return RIP_OK;
}

rip_status rip_add_s8(const rip_add_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output) {
    return add_sub(params, 1, input1, input1_size, input2, input2_size, output, output_size);
}

rip_status rip_sub_s8(const rip_sub_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output) {
    return add_sub(params, -1, input1, input1_size, input2, input2_size, output, output_size);
}

rip_status rip_mul_s8(const rip_mul_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output) {
    if (!sizes_ok(input1_size, input2_size, output_size)) {
        return RIP_ERROR_ARGUMENT;
    }
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        const int32_t a = (int32_t)input1[j1] + params->input1_offset;
        const int32_t b = (int32_t)input2[j2] + params->input2_offset;
        /* |a * b| <= 255 * 255: the product needs no wider type. */
        const int32_t y = params->output_offset +
                          rip_multiply_by_quantized_multiplier(a * b, params->output.multiplier,
                                                               params->output.shift);
        output[i] = (int8_t)rip_clamp32(y, params->activation_min, params->activation_max);
        if (++j1 == input1_size) {
            j1 = 0;
        }
        if (++j2 == input2_size) {
            j2 = 0;
        }
    }
    return RIP_OK;
}
