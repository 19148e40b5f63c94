/*
 * rip kernels: shared types and TFLite's reference fixed-point arithmetic.
 *
 * Every kernel follows one shape of signature (after CMSIS-NN) and returns a rip_status:
 *   [context,] params, [quantization,] then each input and the output, each described
 *   (dims, or an element count) just before its data pointer.
 * The context holds the scratch buffer; kernels without scratch take none. Names read
 * rip_<op>[_<variant>]_s8. A kernel with a scratch need has a ..._get_buffer_size() twin
 * whose formula the code generator and the planner share (rip.scratch.scratch_bytes).
 *
 * The arithmetic below reproduces TensorFlow Lite's reference integer kernels bit for bit
 * (tensorflow/lite/kernels/internal/common.h, without TFLITE_SINGLE_ROUNDING).
 */
#ifndef RIP_COMMON_H
#define RIP_COMMON_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t n, h, w, c;
} rip_dims;

typedef struct {
    int32_t h, w;
} rip_hw;

typedef struct {
    int32_t min, max; /* the fused activation as a clamp of the quantized output */
} rip_activation;

typedef struct {
    int8_t *buf;  /* scratch outside the arena */
    int32_t size; /* bytes */
} rip_context;

typedef struct {
    const int32_t *multiplier; /* one per output channel */
    const int32_t *shift;      /* one per output channel, TFLite's sign convention */
} rip_per_channel_quant;

typedef struct {
    int32_t multiplier;
    int32_t shift;
} rip_quant;

/* What every kernel returns. */
typedef enum {
    RIP_OK = 0,              /* the output is written */
    RIP_ERROR_ARGUMENT = -1, /* a size, shape, parameter or scratch it cannot run with */
} rip_status;

static inline int32_t rip_min32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t rip_max32(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t rip_clamp32(int32_t x, int32_t lo, int32_t hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

/* gemmlowp's SaturatingRoundingDoublingHighMul. */
static inline int32_t rip_sat_rounding_doubling_high_mul(int32_t a, int32_t b) {
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    int64_t ab = (int64_t)a * (int64_t)b;
    int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp's RoundingDivideByPOT: round half away from zero. */
static inline int32_t rip_rounding_divide_by_pot(int32_t x, int exponent) {
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* TFLite's MultiplyByQuantizedMultiplier (double rounding). The left shift wraps in 32
 * bits exactly as the reference's int32 multiply does. */
static inline int32_t rip_multiply_by_quantized_multiplier(int32_t x, int32_t multiplier,
                                                           int32_t shift) {
    const int left_shift = shift > 0 ? shift : 0;
    const int right_shift = shift > 0 ? 0 : -shift;
    const int32_t shifted = (int32_t)((uint32_t)x << left_shift);
    return rip_rounding_divide_by_pot(rip_sat_rounding_doubling_high_mul(shifted, multiplier),
                                      right_shift);
}

/* TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp (shift <= 0). */
static inline int32_t rip_multiply_by_quantized_multiplier_smaller_than_one(int32_t x,
                                                                            int32_t multiplier,
                                                                            int32_t shift) {
    return rip_rounding_divide_by_pot(rip_sat_rounding_doubling_high_mul(x, multiplier), -shift);
}

/* TFLite's MultiplyByQuantizedMultiplierGreaterThanOne (shift >= 0). */
static inline int32_t rip_multiply_by_quantized_multiplier_greater_than_one(int32_t x,
                                                                            int32_t multiplier,
                                                                            int32_t shift) {
    return rip_sat_rounding_doubling_high_mul((int32_t)((uint32_t)x << shift), multiplier);
}

#ifdef __cplusplus
}
#endif

#endif /* RIP_COMMON_H */
