/*
 * rip kernels: int8 ADD, SUB and MUL with broadcasting.
 *
 * Arithmetic is TFLite Micro's reference integer kernels bit for bit
 * (reference/integer_ops/add.h, reference/sub.h, reference/integer_ops/mul.h):
 *   ADD/SUB  a = (x1 + input1_offset) << left_shift, scaled by input1 (smaller than one),
 *            b likewise, y = output_offset + scale(a +/- b) by output, clamped
 *   MUL      y = output_offset + MultiplyByQuantizedMultiplier((x1 + o1) * (x2 + o2)), clamped
 * Parameters come from rip.codegen.elementwise_params (add_params, mul_params), which
 * reproduces TFLite Micro's Prepare.
 *
 * Shapes are flat element counts, each passed just before its operand. An operand of n elements is read at index i % n for output
 * element i: n == output_size is the full tensor, n == C a 1x1x1xC operand broadcast over
 * 1xHxWxC (any operand whose shape is a suffix of the output's), n == 1 a scalar. Either
 * operand may broadcast. output_size must be a multiple of both operand sizes.
 *
 * In place: `output` may alias a full-size operand starting at the same or a lower address
 * (output <= input). Elements are produced first to last and element i of each operand is
 * read before element i of the output is stored. A broadcast operand must not be overwritten
 * (it is read again for every row).
 */
#ifndef RIP_ELEMENTWISE_H
#define RIP_ELEMENTWISE_H

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t input1_offset; /* -input1 zero point */
    int32_t input2_offset; /* -input2 zero point */
    int32_t output_offset; /* output zero point */
    int32_t left_shift;    /* 20 for int8 */
    rip_quant input1;      /* shift <= 0 */
    rip_quant input2;      /* shift <= 0 */
    rip_quant output;      /* shift <= 0 */
    int32_t activation_min;
    int32_t activation_max;
} rip_add_params;

/* SUB shares ADD's parameters and their arithmetic: the installed TFLite Micro computes the
 * scale ratios in double, as for ADD (rip.codegen.elementwise_params.add_params). */
typedef rip_add_params rip_sub_params;

typedef struct {
    int32_t input1_offset; /* -input1 zero point */
    int32_t input2_offset; /* -input2 zero point */
    int32_t output_offset; /* output zero point */
    rip_quant output;      /* input1_scale * input2_scale / output_scale, any shift */
    int32_t activation_min;
    int32_t activation_max;
} rip_mul_params;

/* Each returns RIP_OK, or RIP_ERROR_ARGUMENT when a size is not positive or does not divide
 * output_size. */
rip_status rip_add_s8(const rip_add_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output);

rip_status rip_sub_s8(const rip_sub_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output);

rip_status rip_mul_s8(const rip_mul_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_ELEMENTWISE_H */
