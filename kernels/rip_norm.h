/*
 * rip kernels: int8 L2_NORMALIZATION.
 *
 * TFLite Micro's reference_integer_ops::L2Normalization: per row of `depth` values, the sum of
 * squared (input - zero point), its inverse square root as gemmlowp's Newton-Raphson
 * fixed-point iteration computes it (GetInvSqrtQuantizedMultiplierExp), and every value
 * rescaled to 1/128 units and clamped to int8. Written from that description; parameters come
 * from rip.codegen.norm_params. No scratch.
 *
 * In place: `output` may start at or below `input` (InPlaceKind "elementwise"): a row is read
 * whole for its sum before any of it is written, then element i is read before it is stored,
 * first to last.
 */
#ifndef RIP_NORM_H
#define RIP_NORM_H

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t input_zero_point;
    int32_t outer_size; /* rows */
    int32_t depth;      /* values per row (the last axis) */
} rip_l2norm_params;

rip_status rip_l2norm_s8(const rip_l2norm_params *params, const int8_t *input, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_NORM_H */
