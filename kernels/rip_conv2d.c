/*
 * rip kernels: CONV_2D, the reference kernel. See rip_conv2d.h for the API and the
 * in-place contract.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_conv2d.h"
#include "rip_conv_support.h"

int32_t rip_conv2d_s8_get_buffer_size(const rip_dims *input_dims, const rip_dims *filter_dims) {
    (void)input_dims;
    return filter_dims->h * filter_dims->w * filter_dims->c;
}

rip_status rip_conv2d_s8(const rip_context *ctx, const rip_conv_params *params,
                  const rip_per_channel_quant *quant, const rip_dims *input_dims,
                  const int8_t *input, const rip_dims *filter_dims, const int8_t *filter,
                  const rip_dims *bias_dims, const int32_t *bias, const rip_dims *output_dims,
                  int8_t *output) {
    (void)bias_dims;
    const int32_t h = input_dims->h, w = input_dims->w, c_in = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t h_out = output_dims->h, w_out = output_dims->w, c_out = output_dims->c;
    const int32_t sh = params->stride.h, sw = params->stride.w;
    const int32_t dh = params->dilation.h, dw = params->dilation.w;
    const int32_t taps = kh * kw * c_in;
    if (ctx == NULL || ctx->buf == NULL || ctx->size < taps || filter_dims->c != c_in ||
        filter_dims->n != c_out || input_dims->n != output_dims->n || sh < 1 || sw < 1 ||
        dh < 1 || dw < 1 || !rip_conv_valid_act(params->activation)) {
        return RIP_ERROR_ARGUMENT;
    }
    /* The gather fills padded taps with the input zero point, so (x + input_offset) is 0
     * for them exactly as TFLite's skipped taps contribute 0. */
    int8_t *const col = ctx->buf;

    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * h * w * c_in;
        int8_t *out = output + (size_t)b * h_out * w_out * c_out;
        for (int32_t oy = 0; oy < h_out; ++oy) {
            for (int32_t ox = 0; ox < w_out; ++ox) {
                /* Gather (sigma = 0, Eq. 6): every read of the input for this pixel happens
                 * here, before any of its channels is written. */
                rip_conv_gather_s8(in, input_dims, filter_dims, params, oy, ox, col);

                int8_t *px = out + ((size_t)oy * w_out + ox) * c_out;
                for (int32_t oc = 0; oc < c_out; ++oc) {
                    int32_t acc = rip_dot_offset_s8(col, filter + (size_t)oc * taps, taps,
                                                    params->input_offset);
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
