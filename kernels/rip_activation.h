/*
 * rip kernels: int8 activations (RELU, RELU6, QUANTIZE, LOGISTIC, TANH, HARD_SWISH, SOFTMAX,
 * LOG_SOFTMAX (with gemmlowp's fixed-point log, reference/log_softmax.h and common.h),
 * and through a 256-entry table ABS, LEAKY_RELU, ELU and RSQRT).
 *
 * Arithmetic is TFLite Micro's reference integer kernels bit for bit (micro/kernels/
 * activations.h, reference/requantize.h, reference/integer_ops/logistic.h and tanh.h,
 * reference/hard_swish.h, reference/softmax.h with gemmlowp's fixed-point exp, logistic,
 * tanh and 1 / (1 + x)). Parameters come from rip.codegen.elementwise_params, which
 * reproduces TFLite Micro's Prepare.
 *
 * Sizes are flat element counts. All kernels but softmax are elementwise and in-place safe:
 * `output` may alias `input` starting at the same or a lower address (output <= input);
 * element i is read before element i is stored, first to last. Softmax needs `output`
 * disjoint from `input`. No kernel uses scratch.
 */
#ifndef RIP_ACTIVATION_H
#define RIP_ACTIVATION_H

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* y = clamp(output_offset + MultiplyByQuantizedMultiplier(x + input_offset, quant), min, max).
 * clamp_only: quant is the identity (2^30, 1), so y = clamp(x + input_offset + output_offset)
 * without the multiply; TFLite Micro's RELU6 is this with offsets cancelling. */
typedef struct {
    int32_t input_offset;  /* -input zero point */
    int32_t output_offset; /* output zero point */
    rip_quant quant;       /* input_scale / output_scale */
    int32_t activation_min;
    int32_t activation_max;
    int32_t clamp_only;
} rip_requantize_params;

typedef rip_requantize_params rip_relu_params;
typedef rip_requantize_params rip_quantize_params;

/* LOGISTIC and TANH: input rescaled to Q4.27, |x - zero point| >= radius saturates. The
 * output quantization is implied (LOGISTIC: 1/256, -128; TANH: 1/128, 0); TFLite Micro does
 * not read the output tensor's. */
typedef struct {
    int32_t input_zero_point;
    int32_t input_range_radius;
    int32_t input_multiplier;
    int32_t input_left_shift;
} rip_sigmoid_params;

typedef rip_sigmoid_params rip_logistic_params;
typedef rip_sigmoid_params rip_tanh_params;

typedef struct {
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t output_multiplier_fixedpoint_int16;
    int32_t output_multiplier_exponent; /* <= 0 */
    int32_t reluish_multiplier_fixedpoint_int16;
    int32_t reluish_multiplier_exponent;
} rip_hard_swish_params;

/* Output quantization is fixed: scale 1/256, zero point -128. */
typedef struct {
    int32_t input_multiplier; /* beta * input_scale in Q5.26, as a multiplier > 1 */
    int32_t input_left_shift; /* >= 0 */
    int32_t diff_min;         /* x - row max below this contributes nothing */
} rip_softmax_params;

/* A table of the output byte for each input byte, indexed by the input read as uint8: how
 * ABS, LEAKY_RELU, ELU and RSQRT run (rip.codegen.activation_params evaluates TFLite Micro's
 * integer arithmetic, or for ELU its own float table, on all 256 inputs). */
typedef struct {
    int8_t table[256];
} rip_lut_params;

/* RELU (requantizing) and RELU6 (TFLite Micro clamps in the input's quantization). */
rip_status rip_relu_s8(const rip_relu_params *params, int32_t size,
                       const int8_t *input, int8_t *output);

/* QUANTIZE int8 -> int8 (a requantization). */
rip_status rip_quantize_s8(const rip_quantize_params *params, int32_t size,
                           const int8_t *input, int8_t *output);

rip_status rip_logistic_s8(const rip_logistic_params *params, int32_t size,
                           const int8_t *input, int8_t *output);

rip_status rip_tanh_s8(const rip_tanh_params *params, int32_t size,
                       const int8_t *input, int8_t *output);

rip_status rip_hard_swish_s8(const rip_hard_swish_params *params, int32_t size,
                             const int8_t *input, int8_t *output);

/* LOGISTIC and TANH 16x8 (int16 -> int16, zero points 0, output scale 2^-15), TFLite
 * Micro's reference_integer_ops::Logistic / Tanh for int16: the input rescaled to 1/(3 *
 * 4096) by (x * input_multiplier + round) >> input_left_shift (input_multiplier 0: a
 * power-of-two input scale, multiplier 3 << input_left_shift and no shift), then TFLite's
 * sigmoid table of 256 entries interpolated linearly (TANH as 2 sigmoid(2x) - 1). In place
 * at or below the input. */
typedef struct {
    int32_t tanh; /* 0: LOGISTIC */
    int32_t input_multiplier;
    int32_t input_left_shift; /* >= 0 */
} rip_sigmoid_s16_params;

/* SOFTMAX 16x8 (int16 -> int16, zero points 0, output scale 1/32768), TFLite Micro's
 * SoftmaxInt16: each row's differences from its maximum rescaled onto [-10, 0] (a
 * multiplier of any shift) and looked up in exp_lut, their sum's reciprocal in
 * one_over_one_plus_x_lut (both 513-entry tables of TFLite's LUTPopulate<int16_t>, computed
 * by the generator: 512 segments of 128 inputs, interpolated), each exp times it. The
 * exps are kept in the output row between the passes: output disjoint from input. */
typedef struct {
    int32_t input_multiplier;
    int32_t input_left_shift;
    const int16_t *exp_lut;                 /* [513] */
    const int16_t *one_over_one_plus_x_lut; /* [513] */
} rip_softmax_s16_params;

rip_status rip_softmax_s16(const rip_softmax_s16_params *params, int32_t num_rows,
                           int32_t row_size, const void *input, void *output);

rip_status rip_sigmoid_s16(const rip_sigmoid_s16_params *params, int32_t size,
                           const void *input, void *output);

/* TFLite's sigmoid table in 0.16 (sigmoid(i / 24), as TFLite rounded it; in
 * rip_activation.c), and its interpolation at an input v already rescaled to 1 / (3 * 4096):
 * TFLite Micro's int16 LOGISTIC (9 fraction bits) or TANH (2 sigmoid(2x) - 1: 8), inline for
 * the kernels that apply it in their own loops (rip_sigmoid_s16, rip_lstm's gates). */
extern const uint16_t rip_sigmoid_table[256];

static inline int32_t rip_sigmoid16_scaled(const int tanh, int32_t v) {
    const int32_t frac = tanh ? 8 : 9;
    const uint32_t a = v < 0 ? 0u - (uint32_t)v : (uint32_t)v;
    const uint32_t h = a >> frac;
    uint32_t r;
    if (h >= 255) {
        r = tanh ? 0xFFFFu << 8 : 0x7FFFu << 10;
    } else {
        const uint32_t lo = rip_sigmoid_table[h], hi = rip_sigmoid_table[h + 1];
        r = (lo << frac) + (a & ((1u << frac) - 1)) * (hi - lo);
    }
    if (tanh) {
        const int32_t t = (int32_t)r;
        return (int16_t)((v >= 0 ? t - (1 << 23) + (1 << 7) : -t + (1 << 23) + (1 << 7) - 1) >> 8);
    }
    return (int16_t)((v >= 0 ? r + (1u << 9) : (1u << 25) - r + (1u << 9) - 1) >> 10);
}

/* LOG_SOFTMAX: output quantization fixed at scale 16/256, zero point 127. */
typedef struct {
    int32_t input_multiplier;      /* beta * input_scale in Q5.26, as a multiplier > 1 */
    int32_t input_left_shift;      /* >= 0 */
    int32_t reverse_multiplier;    /* 1 / that multiplier, smaller than one */
    int32_t reverse_shift;         /* <= 0 */
    int32_t diff_min;              /* x - row max below this contributes nothing */
} rip_log_softmax_params;

/* LOG_SOFTMAX over rows of row_size contiguous elements (the last axis); output disjoint
 * from the input (each row is read three times). */
rip_status rip_log_softmax_s8(const rip_log_softmax_params *params, int32_t num_rows,
                              int32_t row_size, const int8_t *input, int8_t *output);

/* y[i] = table[(uint8_t)x[i]]: ABS, LEAKY_RELU, ELU, RSQRT. */
rip_status rip_lut_s8(const rip_lut_params *params, int32_t size, const int8_t *input,
                      int8_t *output);

/* SOFTMAX over rows of row_size contiguous elements (the last axis). */
rip_status rip_softmax_s8(const rip_softmax_params *params, int32_t num_rows, int32_t row_size,
                          const int8_t *input, int8_t *output);

/* SOFTMAX int8 -> int16 (output scale 1/65536, zero point -32768): the same arithmetic,
 * TFLite Micro's reference Softmax<int8_t, int16_t>. output: num_rows * row_size int16
 * values, little-endian, at any alignment. */
rip_status rip_softmax_s8_s16(const rip_softmax_params *params, int32_t num_rows,
                              int32_t row_size, const int8_t *input, void *output);

/* QUANTIZE between int8, int16 and int32 (TFLite Micro's reference Requantize): y = clamp(
 * MultiplyByQuantizedMultiplier(x - input_zero_point) + output_zero_point) to
 * [activation_min, activation_max] (QUANTIZE: the output type's range; a 16x8 RELU or RELU6,
 * TFLite Micro's ReluQuantized / Relu6Quantized<int16_t>: its clamp). Element widths in
 * bytes; values little-endian at any alignment. In place at the input's base where
 * output_bytes <= input_bytes (element i is read before it is stored, first to last, and its
 * store reaches no byte of a later element). */
typedef struct {
    int32_t input_zero_point;
    int32_t output_zero_point;
    int32_t multiplier;
    int32_t shift;
    int32_t input_bytes;  /* 1, 2 or 4 */
    int32_t output_bytes; /* 1, 2 or 4 */
    int32_t activation_min;
    int32_t activation_max;
} rip_quantize_wide_params;

rip_status rip_quantize_wide(const rip_quantize_wide_params *params, int32_t size,
                             const void *input, void *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_ACTIVATION_H */
