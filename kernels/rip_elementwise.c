/* rip kernels: int8 ADD, SUB and MUL (see rip_elementwise.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_elementwise.h"
#include "rip_support.h"

#include <stddef.h>

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

/* The term table's loop (rip_add_params.terms): two loads and an add an element, then
 * add_output; SAT: the full int8 range, one SSAT. */
static inline __attribute__((always_inline)) void add_terms_run(
    const int32_t *t1, const int32_t *t2, const int8_t *input1, int32_t input1_size,
    const int8_t *input2, int32_t input2_size, int8_t *output, int32_t output_size, int32_t m,
    int32_t e, int32_t off, int32_t lo, int32_t hi, const int SAT) {
    const int32_t half = 1 << (e - 1);
    if (input1_size == output_size && input2_size == output_size) {
        /* Both operands are read into registers before output[i] is stored (in place). */
        for (int32_t i = 0; i < output_size; ++i) {
            const int32_t raw = t1[input1[i]] + t2[input2[i]];
            const int32_t t = rip_smmulr(raw + raw, m);
            const int32_t y = ((t + half + (t >> 31)) >> e) + off;
            output[i] = (int8_t)(SAT ? rip_sat_s8(y) : rip_clamp32(y, lo, hi));
        }
        return;
    }
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        output[i] = (int8_t)add_output(t1[input1[j1]] + t2[input2[j2]], m, half, e, off, lo, hi);
        if (++j1 == input1_size) {
            j1 = 0;
        }
        if (++j2 == input2_size) {
            j2 = 0;
        }
    }
}

/* add_sub through the term table, under add_output's conditions; 0 if they fail. */
static int add_sub_terms(const rip_add_params *p, const int8_t *input1, int32_t input1_size,
                         const int8_t *input2, int32_t input2_size, int8_t *output,
                         int32_t output_size) {
    const int32_t m = p->output.multiplier, e = -p->output.shift;
    if (m < 0 || e < 1 || e > 31) {
        return 0;
    }
    const int32_t *t1 = p->terms + 128, *t2 = p->terms + 384;
    const int32_t off = p->output_offset, lo = p->activation_min, hi = p->activation_max;
    if (lo == -128 && hi == 127) {
        add_terms_run(t1, t2, input1, input1_size, input2, input2_size, output, output_size, m,
                      e, off, lo, hi, 1);
    } else {
        add_terms_run(t1, t2, input1, input1_size, input2, input2_size, output, output_size, m,
                      e, off, lo, hi, 0);
    }
    return 1;
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
    if (p->terms != NULL &&
        add_sub_terms(p, input1, input1_size, input2, input2_size, output, output_size)) {
        return RIP_OK;
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

/* ---- MAXIMUM, MINIMUM, SQUARED_DIFFERENCE, PRELU ----------------------------------------- */

rip_status rip_max_min_s8(const rip_max_min_params *params, int32_t input1_size,
                          const int8_t *input1, int32_t input2_size, const int8_t *input2,
                          int32_t output_size, int8_t *output) {
    if (!sizes_ok(input1_size, input2_size, output_size)) {
        return RIP_ERROR_ARGUMENT;
    }
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        const int8_t a = input1[j1];
        const int8_t b = input2[j2];
        output[i] = params->maximum ? (a > b ? a : b) : (a < b ? a : b);
        if (++j1 == input1_size) {
            j1 = 0;
        }
        if (++j2 == input2_size) {
            j2 = 0;
        }
    }
    return RIP_OK;
}

rip_status rip_squared_difference_s8(const rip_squared_difference_params *params,
                                     int32_t input1_size, const int8_t *input1,
                                     int32_t input2_size, const int8_t *input2,
                                     int32_t output_size, int8_t *output) {
    if (!sizes_ok(input1_size, input2_size, output_size)) {
        return RIP_ERROR_ARGUMENT;
    }
    const rip_add_params *p = params;
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        const int32_t a = ((int32_t)input1[j1] + p->input1_offset) * (1 << p->left_shift);
        const int32_t b = ((int32_t)input2[j2] + p->input2_offset) * (1 << p->left_shift);
        const int32_t diff =
            rip_multiply_by_quantized_multiplier_smaller_than_one(a, p->input1.multiplier,
                                                                  p->input1.shift) -
            rip_multiply_by_quantized_multiplier_smaller_than_one(b, p->input2.multiplier,
                                                                  p->input2.shift);
        /* |diff| <= 255 << 7, so its square fits in 31 bits. */
        const int32_t y = rip_multiply_by_quantized_multiplier(diff * diff, p->output.multiplier,
                                                               p->output.shift) +
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

rip_status rip_prelu_s8(const rip_prelu_params *params, int32_t input1_size, const int8_t *input1,
                        int32_t input2_size, const int8_t *input2, int32_t output_size,
                        int8_t *output) {
    if (!sizes_ok(input1_size, input2_size, output_size)) {
        return RIP_ERROR_ARGUMENT;
    }
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        const int32_t x = (int32_t)input1[j1] + params->input_offset;
        int32_t y;
        if (x >= 0) {
            y = rip_multiply_by_quantized_multiplier(x, params->output1.multiplier,
                                                     params->output1.shift);
        } else {
            const int32_t alpha = (int32_t)input2[j2] + params->alpha_offset;
            y = rip_multiply_by_quantized_multiplier(x * alpha, params->output2.multiplier,
                                                     params->output2.shift);
        }
        output[i] = (int8_t)rip_clamp32(y + params->output_offset, INT8_MIN, INT8_MAX);
        if (++j1 == input1_size) {
            j1 = 0;
        }
        if (++j2 == input2_size) {
            j2 = 0;
        }
    }
    return RIP_OK;
}

/* ---- general broadcasting: one flat-kernel call per row ----------------------------------- */

enum { BINARY_ADD, BINARY_SUB, BINARY_MUL, BINARY_MAX_MIN, BINARY_SQUARED_DIFFERENCE, BINARY_PRELU };

static rip_status binary_row(int op, const void *params, int32_t n1, const int8_t *input1,
                             int32_t n2, const int8_t *input2, int32_t n, int8_t *output) {
    switch (op) {
    case BINARY_ADD:
        return rip_add_s8((const rip_add_params *)params, n1, input1, n2, input2, n, output);
    case BINARY_SUB:
        return rip_sub_s8((const rip_sub_params *)params, n1, input1, n2, input2, n, output);
    case BINARY_MUL:
        return rip_mul_s8((const rip_mul_params *)params, n1, input1, n2, input2, n, output);
    case BINARY_MAX_MIN:
        return rip_max_min_s8((const rip_max_min_params *)params, n1, input1, n2, input2, n,
                              output);
    case BINARY_SQUARED_DIFFERENCE:
        return rip_squared_difference_s8((const rip_squared_difference_params *)params, n1,
                                         input1, n2, input2, n, output);
    default:
        return rip_prelu_s8((const rip_prelu_params *)params, n1, input1, n2, input2, n, output);
    }
}

/* A broadcast shape the row loops can walk: rank in range, each operand's row whole or one. */
static int broadcast_ok(const rip_broadcast *b) {
    return b->rank >= 0 && b->rank <= RIP_BROADCAST_MAX_RANK && b->row >= 1 &&
           (b->row1 == b->row || b->row1 == 1) && (b->row2 == b->row || b->row2 == 1);
}

static rip_status broadcast_rows(int op, const void *params, const rip_broadcast *b,
                                 const int8_t *input1, const int8_t *input2, int8_t *output) {
    if (!broadcast_ok(b)) {
        return RIP_ERROR_ARGUMENT;
    }
    int32_t index[RIP_BROADCAST_MAX_RANK] = {0};
    int32_t at1 = 0;
    int32_t at2 = 0;
    int8_t *out = output;
    for (;;) {
        const rip_status status =
            binary_row(op, params, b->row1, input1 + at1, b->row2, input2 + at2, b->row, out);
        if (status != RIP_OK) {
            return status;
        }
        out += b->row;
        if (!rip_broadcast_next(b, index, &at1, &at2)) {
            return RIP_OK;
        }
    }
}

rip_status rip_add_broadcast_s8(const rip_add_params *params, const rip_broadcast *shape,
                                const int8_t *input1, const int8_t *input2, int8_t *output) {
    return broadcast_rows(BINARY_ADD, params, shape, input1, input2, output);
}

rip_status rip_sub_broadcast_s8(const rip_sub_params *params, const rip_broadcast *shape,
                                const int8_t *input1, const int8_t *input2, int8_t *output) {
    return broadcast_rows(BINARY_SUB, params, shape, input1, input2, output);
}

rip_status rip_mul_broadcast_s8(const rip_mul_params *params, const rip_broadcast *shape,
                                const int8_t *input1, const int8_t *input2, int8_t *output) {
    return broadcast_rows(BINARY_MUL, params, shape, input1, input2, output);
}

rip_status rip_max_min_broadcast_s8(const rip_max_min_params *params, const rip_broadcast *shape,
                                    const int8_t *input1, const int8_t *input2, int8_t *output) {
    return broadcast_rows(BINARY_MAX_MIN, params, shape, input1, input2, output);
}

rip_status rip_squared_difference_broadcast_s8(const rip_squared_difference_params *params,
                                               const rip_broadcast *shape, const int8_t *input1,
                                               const int8_t *input2, int8_t *output) {
    return broadcast_rows(BINARY_SQUARED_DIFFERENCE, params, shape, input1, input2, output);
}

rip_status rip_prelu_broadcast_s8(const rip_prelu_params *params, const rip_broadcast *shape,
                                  const int8_t *input1, const int8_t *input2, int8_t *output) {
    return broadcast_rows(BINARY_PRELU, params, shape, input1, input2, output);
}

/* ---- 16x8: int16 ADD, SUB and MUL (see rip_elementwise.h) --------------------------------- */

static int32_t wide_add_sub(const rip_add_params *p, int32_t sign, int32_t x, int32_t y) {
    const int32_t a = (int32_t)((uint32_t)(x + p->input1_offset) << p->left_shift);
    const int32_t b = (int32_t)((uint32_t)(y + p->input2_offset) << p->left_shift);
    const int32_t s1 =
        rip_multiply_by_quantized_multiplier_smaller_than_one(a, p->input1.multiplier, p->input1.shift);
    const int32_t s2 =
        rip_multiply_by_quantized_multiplier_smaller_than_one(b, p->input2.multiplier, p->input2.shift);
    const int32_t raw = sign > 0 ? s1 + s2 : s1 - s2;
    const int32_t r = rip_multiply_by_quantized_multiplier_smaller_than_one(
                          raw, p->output.multiplier, p->output.shift) +
                      p->output_offset;
    return rip_clamp32(r, p->activation_min, p->activation_max);
}

static int32_t wide_mul(const rip_mul_params *p, int32_t x, int32_t y) {
    const int32_t r = rip_multiply_by_quantized_multiplier(
                          (x + p->input1_offset) * (y + p->input2_offset), p->output.multiplier,
                          p->output.shift) +
                      p->output_offset;
    return rip_clamp32(r, p->activation_min, p->activation_max);
}

static rip_status wide_rows(int op, const void *params, const rip_broadcast *b,
                            const void *input1, const void *input2, void *output) {
    if (!broadcast_ok(b)) {
        return RIP_ERROR_ARGUMENT;
    }
    if ((op == BINARY_ADD || op == BINARY_SUB) &&
        ((const rip_add_params *)params)->left_shift != 15) {
        return RIP_ERROR_ARGUMENT;
    }
    const int8_t *x1 = (const int8_t *)input1, *x2 = (const int8_t *)input2;
    int8_t *y = (int8_t *)output;
    const ptrdiff_t step1 = b->row1 == b->row, step2 = b->row2 == b->row;
    int32_t index[RIP_BROADCAST_MAX_RANK] = {0};
    int32_t at1 = 0, at2 = 0;
    ptrdiff_t out = 0;
    do {
        for (ptrdiff_t k = 0; k < b->row; ++k, ++out) {
            const int32_t u = rip_load_le(x1 + 2 * (at1 + k * step1), 2);
            const int32_t v = rip_load_le(x2 + 2 * (at2 + k * step2), 2);
            int32_t r;
            if (op == BINARY_MUL) {
                r = wide_mul((const rip_mul_params *)params, u, v);
            } else if (op == BINARY_MAX_MIN) { /* raw values, one quantization */
                r = ((const rip_max_min_params *)params)->maximum ? rip_max32(u, v)
                                                                  : rip_min32(u, v);
            } else {
                r = wide_add_sub((const rip_add_params *)params, op == BINARY_ADD ? 1 : -1, u, v);
            }
            rip_store_le(y + 2 * out, r, 2);
        }
    } while (rip_broadcast_next(b, index, &at1, &at2));
    return RIP_OK;
}

rip_status rip_add_broadcast_s16(const rip_add_params *params, const rip_broadcast *shape,
                                 const void *input1, const void *input2, void *output) {
    return wide_rows(BINARY_ADD, params, shape, input1, input2, output);
}

rip_status rip_sub_broadcast_s16(const rip_sub_params *params, const rip_broadcast *shape,
                                 const void *input1, const void *input2, void *output) {
    return wide_rows(BINARY_SUB, params, shape, input1, input2, output);
}

rip_status rip_mul_broadcast_s16(const rip_mul_params *params, const rip_broadcast *shape,
                                 const void *input1, const void *input2, void *output) {
    return wide_rows(BINARY_MUL, params, shape, input1, input2, output);
}

rip_status rip_max_min_broadcast_s16(const rip_max_min_params *params, const rip_broadcast *shape,
                                     const void *input1, const void *input2, void *output) {
    return wide_rows(BINARY_MAX_MIN, params, shape, input1, input2, output);
}

/* ---- ADD_N -------------------------------------------------------------------------------- */

rip_status rip_add_n_s8(const rip_add_n_params *params, int32_t num_inputs,
                        const int8_t *const *inputs, int32_t size, int8_t *output) {
    if (num_inputs < 1 || size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    const rip_add_n_params *p = params;
    /* TFLite Micro's reference starts each sum from the rescaled input offset (its "x = 0"
     * is the offset itself); kept, as the output bytes depend on it. */
    const int32_t start = rip_multiply_by_quantized_multiplier_smaller_than_one(
        p->input_offset * (1 << p->left_shift), p->input.multiplier, p->input.shift);
    for (int32_t i = 0; i < size; ++i) {
        int32_t sum = start;
        for (int32_t k = 0; k < num_inputs; ++k) {
            const int32_t x = ((int32_t)inputs[k][i] + p->input_offset) * (1 << p->left_shift);
            sum += rip_multiply_by_quantized_multiplier_smaller_than_one(x, p->input.multiplier,
                                                                         p->input.shift);
        }
        const int32_t y = rip_multiply_by_quantized_multiplier_smaller_than_one(
                              sum, p->output.multiplier, p->output.shift) +
                          p->output_offset;
        output[i] = (int8_t)rip_clamp32(y, p->activation_min, p->activation_max);
    }
    return RIP_OK;
}
