/*
 * rip kernels: grouped CONV_2D. See rip_conv2d_grouped.h for the API and the in-place
 * contract (rip_conv2d_s8's: one gathered field a pixel, row-major).
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_conv2d_grouped.h"
#include "rip_conv_support.h"

int32_t rip_conv2d_grouped_s8_get_buffer_size(const rip_dims *input_dims,
                                              const rip_dims *filter_dims) {
    return filter_dims->h * filter_dims->w * input_dims->c;
}

rip_status rip_conv2d_grouped_s8(const rip_context *ctx, const rip_conv_params *params,
                                 const rip_per_channel_quant *quant, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const rip_dims *bias_dims,
                                 const int32_t *bias, const rip_dims *output_dims,
                                 int8_t *output) {
    (void)bias_dims;
    const int32_t h = input_dims->h, w = input_dims->w, c_in = input_dims->c;
    const int32_t c_group = filter_dims->c, kh = filter_dims->h, kw = filter_dims->w;
    const int32_t h_out = output_dims->h, w_out = output_dims->w, c_out = output_dims->c;
    if (c_group < 1 || c_in % c_group != 0) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t groups = c_in / c_group;
    const int32_t taps = kh * kw * c_in, filter_row = kh * kw * c_group;
    if (ctx == NULL || ctx->buf == NULL || ctx->size < taps || c_out % groups != 0 ||
        filter_dims->n != c_out || input_dims->n != output_dims->n || params->stride.h < 1 ||
        params->stride.w < 1 || params->dilation.h < 1 || params->dilation.w < 1 ||
        !rip_conv_valid_act(params->activation)) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t per_group = c_out / groups;
    /* Padded taps are gathered as the input zero point: (x + input_offset) is 0 for them,
     * as TFLite's skipped taps contribute 0. */
    int8_t *const col = ctx->buf;

    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * h * w * c_in;
        int8_t *out = output + (size_t)b * h_out * w_out * c_out;
        for (int32_t oy = 0; oy < h_out; ++oy) {
            for (int32_t ox = 0; ox < w_out; ++ox) {
                /* Every read of the input for this pixel, before any of its channels is
                 * written (sigma = 0, Eq. 6): the dense conv's traversal, so its gap. */
                rip_conv_gather_s8(in, input_dims, filter_dims, params, oy, ox, col);

                int8_t *px = out + ((size_t)oy * w_out + ox) * c_out;
                for (int32_t oc = 0; oc < c_out; ++oc) {
                    const int8_t *field = col + (size_t)(oc / per_group) * c_group;
                    const int8_t *row = filter + (size_t)oc * filter_row;
                    int32_t acc = 0;
                    for (int32_t t = 0; t < kh * kw; ++t) {
                        acc += rip_dot_offset_s8(field + (size_t)t * c_in,
                                                 row + (size_t)t * c_group, c_group,
                                                 params->input_offset);
                    }
                    if (bias != NULL) {
                        acc += bias[oc];
                    }
                    px[oc] = rip_requantize(acc, quant->multiplier[oc], quant->shift[oc],
                                            params->output_offset, params->activation);
                }
            }
        }
    }
    return RIP_OK;
}
