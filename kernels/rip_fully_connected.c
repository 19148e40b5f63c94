/*
 * rip kernels: FULLY_CONNECTED, the exact kernels. See rip_fully_connected.h for the API.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_fully_connected.h"
#include "rip_conv_support.h"

static rip_status rip_fc(const rip_fc_params *params, const int32_t *multiplier, const int32_t *shift,
                  int32_t per_channel, const rip_dims *input_dims, const int8_t *input,
                  const rip_dims *filter_dims, const int8_t *filter, const int32_t *bias,
                  const rip_dims *output_dims, int8_t *output) {
    const int32_t depth = filter_dims->c;
    const int32_t units = output_dims->c;
    const int32_t batches = output_dims->n * output_dims->h * output_dims->w;
    const int32_t in_count = input_dims->n * input_dims->h * input_dims->w * input_dims->c;
    if (depth < 1 || units > filter_dims->n || in_count != batches * depth ||
        !rip_conv_valid_act(params->activation)) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t b = 0; b < batches; ++b) {
        const int8_t *x = input + (size_t)b * depth;
        /* sum (x + io)(w + fo) = sum (x + io) w + fo * sum (x + io): the second term once
         * a row (int32 sums wrap as TFLite's do, so the order does not matter) */
        uint32_t row_term = 0;
        if (params->filter_offset != 0) {
            for (int32_t i = 0; i < depth; ++i) {
                row_term += (uint32_t)((int32_t)x[i] + params->input_offset);
            }
            row_term *= (uint32_t)params->filter_offset;
        }
        for (int32_t o = 0; o < units; ++o) {
            int32_t acc = (int32_t)((uint32_t)rip_dot_offset_s8(x, filter + (size_t)o * depth,
                                                                depth, params->input_offset) +
                                    row_term);
            if (bias != NULL) {
                acc += bias[o];
            }
            const int32_t k = per_channel ? o : 0;
            output[(size_t)b * units + o] = rip_requantize(
                acc, multiplier[k], shift[k], params->output_offset, params->activation);
        }
    }
    return RIP_OK;
}

rip_status rip_fully_connected_s8(const rip_context *ctx, const rip_fc_params *params,
                           const rip_quant *quant, const rip_dims *input_dims,
                           const int8_t *input, const rip_dims *filter_dims, const int8_t *filter,
                           const rip_dims *bias_dims, const int32_t *bias,
                           const rip_dims *output_dims, int8_t *output) {
    (void)ctx;
    (void)bias_dims;
    return rip_fc(params, &quant->multiplier, &quant->shift, 0, input_dims, input, filter_dims,
                  filter, bias, output_dims, output);
}

rip_status rip_fully_connected_per_channel_s8(const rip_context *ctx, const rip_fc_params *params,
                                       const rip_per_channel_quant *quant,
                                       const rip_dims *input_dims, const int8_t *input,
                                       const rip_dims *filter_dims, const int8_t *filter,
                                       const rip_dims *bias_dims, const int32_t *bias,
                                       const rip_dims *output_dims, int8_t *output) {
    (void)ctx;
    (void)bias_dims;
    return rip_fc(params, quant->multiplier, quant->shift, 1, input_dims, input, filter_dims,
                  filter, bias, output_dims, output);
}
