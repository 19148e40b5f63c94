/*
 * rip kernels: int8 reductions over any set of axes (MEAN, SUM, REDUCE_MAX, REDUCE_MIN) and
 * the index of the largest or smallest element along one axis (ARG_MAX, ARG_MIN).
 *
 * Arithmetic is TFLite Micro's reference kernels bit for bit (micro/kernels/reduce_common.cc
 * with reference_ops::QuantizedMeanOrSum and ReduceGeneric; reference_ops::ArgMinMax):
 *   MEAN, SUM  s = sum of the raw int8 inputs (int32), y = output_zero_point +
 *              MultiplyByQuantizedMultiplier(s - input_zero_point * count, quant), clamped
 *              (the 1 / count of a mean is already folded into quant by
 *              rip.codegen.reduce_params, as QuantizedMeanOrSum folds it)
 *   MAX, MIN   the largest / smallest raw input (input and output share quantization)
 *   ARG_*      the first index along the axis holding the largest / smallest raw input,
 *              stored as int32 (in native byte order, through memcpy: any output alignment)
 *
 * Shapes: the input's extents `dims[0..rank)`, row-major, with bit k of `reduced` set when
 * axis k is reduced (rip.codegen.reduce_params merges neighbouring axes of the same kind,
 * so rank <= RIP_REDUCE_MAX_RANK holds for any TFLite tensor). The output holds the kept
 * axes in the same order; whether the model keeps the reduced axes as 1s does not change
 * its bytes. An ARG_* reduces exactly one axis.
 *
 * No scratch: each output element is accumulated in a register over its reduced elements.
 * Output disjoint from the input (the planner never places a reduction in place).
 */
#ifndef RIP_REDUCE_H
#define RIP_REDUCE_H

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RIP_REDUCE_MAX_RANK 8

typedef struct {
    int32_t rank;
    int32_t dims[RIP_REDUCE_MAX_RANK];
    int32_t reduced;           /* bit k: axis k is reduced */
    int32_t input_zero_point;  /* MEAN, SUM */
    int32_t output_zero_point; /* MEAN, SUM */
    rip_quant quant;           /* MEAN, SUM: s_in / s_out (times 1 / count for MEAN) */
} rip_reduce_params;

/* Each returns RIP_OK, or RIP_ERROR_ARGUMENT for a rank outside [1, RIP_REDUCE_MAX_RANK],
 * a non-positive extent, or (ARG_*) more than one reduced axis. */
rip_status rip_reduce_sum_s8(const rip_reduce_params *params, const int8_t *input,
                             int8_t *output);
rip_status rip_reduce_max_s8(const rip_reduce_params *params, const int8_t *input,
                             int8_t *output);
rip_status rip_reduce_min_s8(const rip_reduce_params *params, const int8_t *input,
                             int8_t *output);
/* MEAN and SUM 16x8 (int16 input and output): TFLite Micro's QuantizedMeanOrSum<int16_t>,
 * the same arithmetic with int16 values and clamps. */
rip_status rip_reduce_sum_s16(const rip_reduce_params *params, const void *input, void *output);

rip_status rip_arg_max_s8(const rip_reduce_params *params, const int8_t *input, int8_t *output);
rip_status rip_arg_min_s8(const rip_reduce_params *params, const int8_t *input, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_REDUCE_H */
