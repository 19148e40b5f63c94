/*
 * rip kernels: float32 islands inside an int8 graph, as TFLite Micro's reference kernels
 * compute them (DEQUANTIZE, QUANTIZE to int8, NEG, ADD, SUB, MUL, DIV, MAXIMUM, MINIMUM).
 *
 * Every one is IEEE single precision arithmetic in TFLite Micro's order, one correctly
 * rounded operation per step, so its bits are the same on any IEEE core (the Cortex-M33's
 * FPU, ARMv6-M's software floats, a host's SSE), with denormals kept (no flush to zero):
 * DEQUANTIZE's double product of a float scale and an int8 difference is exact, so its
 * rounding to float is the float product's. No libm: QUANTIZE's round (half away from zero)
 * is exact arithmetic here. Floats are read and stored with memcpy, at any alignment.
 */
#ifndef RIP_FLOAT_H
#define RIP_FLOAT_H

#include <stdint.h>

#include "rip_common.h"
#include "rip_elementwise.h" /* rip_broadcast */

#ifdef __cplusplus
extern "C" {
#endif

/* DEQUANTIZE int8 -> float32 and QUANTIZE float32 -> int8: the int8 side's scale and zero
 * point. */
typedef struct {
    float scale;
    int32_t zero_point;
} rip_float_quant_params;

/* y[i] = scale * (x[i] - zero_point) (TFLite Micro's Dequantize). */
rip_status rip_dequantize_f32(const rip_float_quant_params *params, int32_t size,
                              const int8_t *input, void *output);

/* y[i] = clamp(round(x[i] / scale) + zero_point) to int8 (TFLite Micro's AffineQuantize;
 * a quotient beyond int32, or NaN, converts as on the x86 TFLite Micro runs: INT32_MIN). */
rip_status rip_quantize_f32(const rip_float_quant_params *params, int32_t size,
                            const void *input, int8_t *output);

/* NEG: y[i] = -x[i]. */
rip_status rip_neg_f32(int32_t size, const void *input, void *output);

enum { RIP_F32_ADD, RIP_F32_SUB, RIP_F32_MUL, RIP_F32_DIV, RIP_F32_MAX, RIP_F32_MIN };

/* ADD, SUB, MUL, DIV (the fused activation's float clamp after the operation, as
 * ActivationFunctionWithMinMax), MAXIMUM (x > y ? x : y), MINIMUM (x < y ? x : y). */
typedef struct {
    int32_t op; /* RIP_F32_* */
    float activation_min;
    float activation_max;
} rip_float_binary_params;

/* Over any broadcast (rip_broadcast of rip_elementwise.h, in elements). */
rip_status rip_binary_f32(const rip_float_binary_params *params, const rip_broadcast *shape,
                          const void *input1, const void *input2, void *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_FLOAT_H */
