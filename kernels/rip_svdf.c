/* rip kernels: SVDF (see rip_svdf.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_svdf.h"

#include <stddef.h>

#include "rip_support.h"

/* The one SVDF, its state and time weights of type T (int8_t or int16_t, whose range the
 * feature product is clamped to): TFLite Micro's EvalIntegerSvdfReference<T>. The state and
 * time weights are int16-aligned (the arena's and the constants' 4-byte alignment). */
#define RIP_SVDF_BODY(T, T_MIN, T_MAX)                                                         \
    const int32_t batch = p->batch, n_in = p->input_size, filters = p->filters;                \
    const int32_t rank = p->rank, memory = p->memory;                                          \
    if (batch < 1 || n_in < 1 || rank < 1 || filters < rank || filters % rank != 0 ||          \
        memory < 1) {                                                                          \
        return RIP_ERROR_ARGUMENT;                                                             \
    }                                                                                          \
    const ptrdiff_t total = (ptrdiff_t)batch * filters * memory;                               \
    /* the whole state one value left, as the reference shifts its flat array */               \
    for (ptrdiff_t i = 0; i + 1 < total; ++i) {                                                \
        state[i] = state[i + 1];                                                               \
    }                                                                                          \
    /* the feature product of each filter into its newest state value; the reference adds    \
     * the zero point after the clamp and stores the sum as T (it wraps) */                    \
    for (int32_t b = 0; b < batch; ++b) {                                                      \
        const int8_t *x = input + (ptrdiff_t)b * n_in;                                         \
        T *newest = state + (ptrdiff_t)b * filters * memory + (memory - 1);                    \
        const int8_t *w = feature;                                                             \
        for (int32_t f = 0; f < filters; ++f, w += n_in, newest += memory) {                   \
            int32_t acc = 0;                                                                   \
            for (int32_t c = 0; c < n_in; ++c) {                                               \
                acc = rip_wrap_add32(acc,                                                      \
                                     (int32_t)w[c] * ((int32_t)x[c] - p->input_zero_point));   \
            }                                                                                  \
            acc = rip_multiply_by_quantized_multiplier(acc, p->feature_multiplier,             \
                                                       p->feature_shift);                      \
            acc = rip_clamp32(acc, T_MIN, T_MAX);                                              \
            *newest = (T)(uint32_t)(p->state_zero_point + acc);                                \
        }                                                                                      \
    }                                                                                          \
    /* each unit: bias + its rank filters' time products, requantized */                      \
    const int32_t units = filters / rank;                                                      \
    for (int32_t b = 0; b < batch; ++b) {                                                      \
        const T *s = state + (ptrdiff_t)b * filters * memory;                                  \
        const T *t = time;                                                                     \
        for (int32_t u = 0; u < units; ++u) {                                                  \
            int32_t acc = bias[u];                                                             \
            for (int32_t r = 0; r < rank * memory; ++r) {                                      \
                acc = rip_wrap_add32(                                                          \
                    acc, (int32_t)t[r] * ((int32_t)s[r] - p->state_zero_point));               \
            }                                                                                  \
            s += (ptrdiff_t)rank * memory;                                                     \
            t += (ptrdiff_t)rank * memory;                                                     \
            const int32_t y = rip_wrap_add32(                                                  \
                rip_multiply_by_quantized_multiplier(acc, p->output_multiplier,                \
                                                     p->output_shift),                         \
                p->output_zero_point);                                                         \
            output[(ptrdiff_t)b * units + u] = (int8_t)rip_clamp32(y, INT8_MIN, INT8_MAX);     \
        }                                                                                      \
    }                                                                                          \
    return RIP_OK;

rip_status rip_svdf_s8(const rip_svdf_params *p, const int8_t *input, const int8_t *feature,
                       const int8_t *time, const int32_t *bias, int8_t *state,
                       int8_t *output) {
    RIP_SVDF_BODY(int8_t, INT8_MIN, INT8_MAX)
}

rip_status rip_svdf_s8_s16(const rip_svdf_params *p, const int8_t *input,
                           const int8_t *feature, const int16_t *time, const int32_t *bias,
                           int16_t *state, int8_t *output) {
    RIP_SVDF_BODY(int16_t, INT16_MIN, INT16_MAX)
}
