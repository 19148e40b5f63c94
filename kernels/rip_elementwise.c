/* rip kernels: int8 ADD, SUB and MUL (see rip_elementwise.h for the contract). */
#include "rip_elementwise.h"

static int sizes_ok(int32_t input1_size, int32_t input2_size, int32_t output_size) {
    return input1_size > 0 && input2_size > 0 && output_size > 0 &&
           output_size % input1_size == 0 && output_size % input2_size == 0;
}

/* ADD (sign = 1) and SUB (sign = -1) share everything but the sign of the second term. */
static rip_status add_sub(const rip_add_params *p, int32_t sign, const int8_t *input1,
                   int32_t input1_size, const int8_t *input2, int32_t input2_size,
                   int8_t *output, int32_t output_size) {
    if (!sizes_ok(input1_size, input2_size, output_size)) {
        return RIP_ERROR_ARGUMENT;
    }
    /* Wrapping counters instead of i % n: a broadcast operand restarts every n elements. */
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        /* Both operands are read into registers before output[i] is stored (in place). */
        const int32_t a = (int32_t)input1[j1] + p->input1_offset;
        const int32_t b = (int32_t)input2[j2] + p->input2_offset;
        /* |a| <= 255, so a << 20 fits in 31 bits: the reference's multiply cannot overflow. */
        const int32_t scaled_a = rip_multiply_by_quantized_multiplier_smaller_than_one(
            a * (1 << p->left_shift), p->input1.multiplier, p->input1.shift);
        const int32_t scaled_b = rip_multiply_by_quantized_multiplier_smaller_than_one(
            b * (1 << p->left_shift), p->input2.multiplier, p->input2.shift);
        const int32_t raw = sign > 0 ? scaled_a + scaled_b : scaled_a - scaled_b;
        const int32_t y = rip_multiply_by_quantized_multiplier_smaller_than_one(
                              raw, p->output.multiplier, p->output.shift) +
                          p->output_offset;
        output[i] = (int8_t)rip_clamp32(y, p->activation_min, p->activation_max);
        if (++j1 == input1_size) {
            j1 = 0;
        }
        if (++j2 == input2_size) {
            j2 = 0;
        }
    }
    return RIP_OK;
}

rip_status rip_add_s8(const rip_add_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output) {
    return add_sub(params, 1, input1, input1_size, input2, input2_size, output, output_size);
}

rip_status rip_sub_s8(const rip_sub_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output) {
    return add_sub(params, -1, input1, input1_size, input2, input2_size, output, output_size);
}

rip_status rip_mul_s8(const rip_mul_params *params, int32_t input1_size, const int8_t *input1,
                      int32_t input2_size, const int8_t *input2, int32_t output_size, int8_t *output) {
    if (!sizes_ok(input1_size, input2_size, output_size)) {
        return RIP_ERROR_ARGUMENT;
    }
    int32_t j1 = 0;
    int32_t j2 = 0;
    for (int32_t i = 0; i < output_size; ++i) {
        const int32_t a = (int32_t)input1[j1] + params->input1_offset;
        const int32_t b = (int32_t)input2[j2] + params->input2_offset;
        /* |a * b| <= 255 * 255: the product needs no wider type. */
        const int32_t y = params->output_offset +
                          rip_multiply_by_quantized_multiplier(a * b, params->output.multiplier,
                                                               params->output.shift);
        output[i] = (int8_t)rip_clamp32(y, params->activation_min, params->activation_max);
        if (++j1 == input1_size) {
            j1 = 0;
        }
        if (++j2 == input2_size) {
            j2 = 0;
        }
    }
    return RIP_OK;
}
