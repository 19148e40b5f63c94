/*
 * rip kernels: int8 ADD, SUB and MUL with broadcasting; MAXIMUM, MINIMUM,
 * SQUARED_DIFFERENCE, PRELU and ADD_N; each binary op also over general broadcast shapes.
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
    /* NULL, or ADD / SUB's operand terms for every int8 byte, computed by the generator
     * (rip.codegen.elementwise_params.add_terms): terms[x + 128] is input 1's
     * MultiplyByQuantizedMultiplierSmallerThanOneExp((x + input1_offset) << left_shift,
     * input1), terms[256 + x + 128] input 2's (negated for SUB). The kernel then adds two
     * table words an element instead of computing both terms. */
    const int32_t *terms;
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

/* ---- more binary ops: the same shape contract as ADD (sizes before operands, i % n) ------
 * Arithmetic of TFLite Micro's reference kernels (maximum_minimum.cc, squared_difference.cc,
 * reference/prelu.h, reference/add_n.h); parameters from rip.codegen.elementwise_params. */

/* MAXIMUM (maximum = 1) and MINIMUM (0): the larger / smaller raw input, no requantization. */
typedef struct {
    int32_t maximum;
} rip_max_min_params;

/* SQUARED_DIFFERENCE: ADD's parameters with left_shift 7; y = output_offset +
 * MultiplyByQuantizedMultiplier((a - b)^2, output), a and b rescaled like ADD's operands. */
typedef rip_add_params rip_squared_difference_params;

/* PRELU: x >= zero point: y = MBQM(x - zp, output1); else MBQM((x - zp) * (alpha - zp_alpha),
 * output2); plus the output zero point, clamped to int8. input2 is alpha. */
typedef struct {
    int32_t input_offset;  /* -input zero point */
    int32_t alpha_offset;  /* -alpha zero point */
    int32_t output_offset; /* output zero point */
    rip_quant output1;     /* s_in / s_out */
    rip_quant output2;     /* s_in * s_alpha / s_out */
} rip_prelu_params;

rip_status rip_max_min_s8(const rip_max_min_params *params, int32_t input1_size,
                          const int8_t *input1, int32_t input2_size, const int8_t *input2,
                          int32_t output_size, int8_t *output);

rip_status rip_squared_difference_s8(const rip_squared_difference_params *params,
                                     int32_t input1_size, const int8_t *input1,
                                     int32_t input2_size, const int8_t *input2,
                                     int32_t output_size, int8_t *output);

rip_status rip_prelu_s8(const rip_prelu_params *params, int32_t input1_size, const int8_t *input1,
                        int32_t input2_size, const int8_t *input2, int32_t output_size,
                        int8_t *output);

/* ---- general broadcasting ------------------------------------------------------------------
 * Any two shapes that broadcast (numpy's rule), given by rip.codegen.elementwise_params with
 * unit axes dropped and neighbouring axes merged where both operands behave alike: `rows`
 * rows of `row` output elements, row r at the outer index (i_0, ..., i_{rank-1}) of `dims`;
 * operand k starts that row at sum i_j * stride_k[j] (0 along an axis it is broadcast on)
 * and has row_k elements in it: `row` (read in step) or 1 (repeated along the row). Each row
 * is one call of the flat kernel above, so the arithmetic is that kernel's. In place over a
 * full-size operand as the flat kernels: rows run in output order. */
#define RIP_BROADCAST_MAX_RANK 6

typedef struct {
    int32_t rank;
    int32_t dims[RIP_BROADCAST_MAX_RANK];
    int32_t stride1[RIP_BROADCAST_MAX_RANK];
    int32_t stride2[RIP_BROADCAST_MAX_RANK];
    int32_t row;
    int32_t row1;
    int32_t row2;
} rip_broadcast;

/* One step of a broadcast's outer odometer, innermost axis first: each operand's row start
 * (at1, at2, in elements) moves to the next row's; 0 once every row is done. */
static inline int rip_broadcast_next(const rip_broadcast *b, int32_t *index, int32_t *at1,
                                     int32_t *at2) {
    for (int32_t j = b->rank - 1; j >= 0; --j) {
        *at1 += b->stride1[j];
        *at2 += b->stride2[j];
        if (++index[j] < b->dims[j]) {
            return 1;
        }
        *at1 -= b->dims[j] * b->stride1[j];
        *at2 -= b->dims[j] * b->stride2[j];
        index[j] = 0;
    }
    return 0;
}

rip_status rip_add_broadcast_s8(const rip_add_params *params, const rip_broadcast *shape,
                                const int8_t *input1, const int8_t *input2, int8_t *output);
rip_status rip_sub_broadcast_s8(const rip_sub_params *params, const rip_broadcast *shape,
                                const int8_t *input1, const int8_t *input2, int8_t *output);
rip_status rip_mul_broadcast_s8(const rip_mul_params *params, const rip_broadcast *shape,
                                const int8_t *input1, const int8_t *input2, int8_t *output);
rip_status rip_max_min_broadcast_s8(const rip_max_min_params *params, const rip_broadcast *shape,
                                    const int8_t *input1, const int8_t *input2, int8_t *output);
rip_status rip_squared_difference_broadcast_s8(const rip_squared_difference_params *params,
                                               const rip_broadcast *shape, const int8_t *input1,
                                               const int8_t *input2, int8_t *output);
rip_status rip_prelu_broadcast_s8(const rip_prelu_params *params, const rip_broadcast *shape,
                                  const int8_t *input1, const int8_t *input2, int8_t *output);

/* ---- 16x8: int16 ADD, SUB and MUL ---------------------------------------------------------
 * The converter's 16x8 mode, as TFLite Micro's reference runs it (reference_ops::Add with
 * pot_scale false, i.e. AddElementwise; SubElementwise; reference_integer_ops::MulElementwise
 * for int16): the int8 arithmetic above with left_shift 15 (ADD / SUB: |x - zp| << 15 stays
 * below 2^31) and int16 clamps, over any broadcast shape (one loop for flat and broadcast
 * operands: these are not the hot ops of an int16 model). Operands are int16, read and
 * stored a byte at a time (a view may be unaligned). In place as the int8 kernels: element
 * i of each operand is read before element i of the output is stored. */
rip_status rip_add_broadcast_s16(const rip_add_params *params, const rip_broadcast *shape,
                                 const void *input1, const void *input2, void *output);
rip_status rip_sub_broadcast_s16(const rip_sub_params *params, const rip_broadcast *shape,
                                 const void *input1, const void *input2, void *output);
rip_status rip_mul_broadcast_s16(const rip_mul_params *params, const rip_broadcast *shape,
                                 const void *input1, const void *input2, void *output);
/* MAXIMUM, MINIMUM 16x8: the raw int16 values compared (one quantization), any broadcast. */
rip_status rip_max_min_broadcast_s16(const rip_max_min_params *params, const rip_broadcast *shape,
                                     const void *input1, const void *input2, void *output);

/* ---- ADD_N ------------------------------------------------------------------------------ */

/* All inputs share one quantization (TFLite Micro's Prepare checks it). */
typedef struct {
    int32_t input_offset; /* -input zero point */
    int32_t output_offset;
    int32_t left_shift; /* 20 */
    rip_quant input;    /* shift <= 0 */
    rip_quant output;   /* shift <= 0 */
    int32_t activation_min;
    int32_t activation_max;
} rip_add_n_params;

/* y[i] = sum over the inputs of each rescaled, plus (as TFLite Micro's reference does) the
 * rescaled input offset once more, requantized; `inputs` holds num_inputs pointers to `size`
 * elements each. In place over any input: element i of every input is read before y[i]. */
rip_status rip_add_n_s8(const rip_add_n_params *params, int32_t num_inputs,
                        const int8_t *const *inputs, int32_t size, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_ELEMENTWISE_H */
