/*
 * rip kernels: SVDF, int8 with int8 or int16 state (TFLite Micro's EvalInt8SvdfReference and
 * EvalInt16SvdfReference, bit for bit).
 *
 * One invoke: every filter's state row (n_memory values) moves left by one, its newest value
 * becomes the feature product of the input, requantized to the state's scale; then each unit
 * sums its `rank` filters' time products with the bias and requantizes to the output. The
 * state persists across invokes (the model's persistent region, not the arena); a reset
 * fills it with its zero point. No scratch: a unit's sums are accumulated in a register.
 */
#ifndef RIP_SVDF_H
#define RIP_SVDF_H

#include <stdint.h>

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t batch;
    int32_t input_size;
    int32_t filters; /* units * rank */
    int32_t rank;
    int32_t memory;  /* state values per filter */
    int32_t input_zero_point;
    int32_t state_zero_point;
    int32_t output_zero_point;
    int32_t feature_multiplier; /* s_in * s_feature / s_state (float32), QuantizeMultiplier */
    int32_t feature_shift;
    int32_t output_multiplier; /* s_state * s_time / s_out (float32), QuantizeMultiplier */
    int32_t output_shift;
} rip_svdf_params;

/* input [batch, input_size], feature [filters, input_size], time [filters, memory], bias
 * [filters / rank], state [batch, filters * memory] (updated), output [batch, filters /
 * rank]. The output is written after every input byte is read. */
rip_status rip_svdf_s8(const rip_svdf_params *params, const int8_t *input,
                       const int8_t *feature, const int8_t *time, const int32_t *bias,
                       int8_t *state, int8_t *output);

/* The same with int16 time weights and state (the converter's usual SVDF), int16-aligned. */
rip_status rip_svdf_s8_s16(const rip_svdf_params *params, const int8_t *input,
                           const int8_t *feature, const int16_t *time, const int32_t *bias,
                           int16_t *state, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_SVDF_H */
