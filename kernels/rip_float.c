/* rip kernels: float32 islands (see rip_float.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_float.h"

#include <stddef.h>
#include <string.h>

static inline float load_f32(const void *p, ptrdiff_t i) {
    float v;
    memcpy(&v, (const char *)p + 4 * i, sizeof v);
    return v;
}

static inline void store_f32(void *p, ptrdiff_t i, float v) {
    memcpy((char *)p + 4 * i, &v, sizeof v);
}

rip_status rip_dequantize_f32(const rip_float_quant_params *params, int32_t size,
                              const int8_t *input, void *output) {
    if (size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t i = 0; i < size; ++i) {
        store_f32(output, i, params->scale * (float)((int32_t)input[i] - params->zero_point));
    }
    return RIP_OK;
}

/* round half away from zero (std::round), exactly: |q| < 2^23 has a fractional part the
 * truncation leaves exact; anything larger, an infinity or NaN is already its own round */
static inline float round_away(float q) {
    const float a = q < 0.0f ? -q : q;
    if (!(a < 8388608.0f)) {
        return q;
    }
    float t = (float)(int32_t)q;
    const float frac = q - t;
    if (frac >= 0.5f) {
        t += 1.0f;
    } else if (frac <= -0.5f) {
        t -= 1.0f;
    }
    return t;
}

rip_status rip_quantize_f32(const rip_float_quant_params *params, int32_t size,
                            const void *input, int8_t *output) {
    if (size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t i = 0; i < size; ++i) {
        const float r = round_away(load_f32(input, i) / params->scale);
        /* static_cast<int32_t> of what int32 cannot hold (x86: the integer indefinite) */
        const int32_t q = r >= -2147483648.0f && r < 2147483648.0f ? (int32_t)r : INT32_MIN;
        const int32_t y = (int32_t)((uint32_t)q + (uint32_t)params->zero_point);
        output[i] = (int8_t)(y < INT8_MIN ? INT8_MIN : y > INT8_MAX ? INT8_MAX : y);
    }
    return RIP_OK;
}

rip_status rip_neg_f32(int32_t size, const void *input, void *output) {
    if (size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t i = 0; i < size; ++i) {
        store_f32(output, i, -load_f32(input, i));
    }
    return RIP_OK;
}

static inline float binary(const rip_float_binary_params *p, float x, float y) {
    float r;
    switch (p->op) {
    case RIP_F32_ADD:
        r = x + y;
        break;
    case RIP_F32_SUB:
        r = x - y;
        break;
    case RIP_F32_MUL:
        r = x * y;
        break;
    case RIP_F32_DIV:
        r = x / y;
        break;
    case RIP_F32_MAX:
        return x > y ? x : y;
    default:
        return x < y ? x : y;
    }
    /* std::min(std::max(r, lo), hi): a NaN passes */
    r = r < p->activation_min ? p->activation_min : r;
    return p->activation_max < r ? p->activation_max : r;
}

rip_status rip_binary_f32(const rip_float_binary_params *params, const rip_broadcast *b,
                          const void *input1, const void *input2, void *output) {
    if (params->op < RIP_F32_ADD || params->op > RIP_F32_MIN || b->rank < 0 ||
        b->rank > RIP_BROADCAST_MAX_RANK || b->row < 1 ||
        (b->row1 != b->row && b->row1 != 1) || (b->row2 != b->row && b->row2 != 1)) {
        return RIP_ERROR_ARGUMENT;
    }
    const ptrdiff_t step1 = b->row1 == b->row, step2 = b->row2 == b->row;
    int32_t index[RIP_BROADCAST_MAX_RANK] = {0};
    int32_t at1 = 0, at2 = 0;
    ptrdiff_t out = 0;
    do {
        for (ptrdiff_t k = 0; k < b->row; ++k, ++out) {
            const float x = load_f32(input1, at1 + k * step1);
            const float y = load_f32(input2, at2 + k * step2);
            store_f32(output, out, binary(params, x, y));
        }
    } while (rip_broadcast_next(b, index, &at1, &at2));
    return RIP_OK;
}
