/*
 * rip kernels: DEPTHWISE_CONV_2D, the reference kernels. See rip_depthwise.h for the API and
 * the in-place contract.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_depthwise.h"
#include "rip_conv_support.h"

int32_t rip_depthwise_conv2d_inplace_s8_get_buffer_size(const rip_dims *output_dims) {
    return output_dims->h * output_dims->w;
}

static rip_status rip_dw_check(const rip_dw_conv_params *params, const rip_dims *input_dims,
                        const rip_dims *filter_dims, const rip_dims *output_dims) {
    const int32_t m = params->depth_multiplier;
    if (m < 1 || filter_dims->c != input_dims->c * m || output_dims->c != filter_dims->c ||
        input_dims->n != output_dims->n || params->stride.h < 1 || params->stride.w < 1 ||
        params->dilation.h < 1 || params->dilation.w < 1 ||
        !rip_conv_valid_act(params->activation)) {
        return RIP_ERROR_ARGUMENT;
    }
    return RIP_OK;
}

/* One output value: input channel `ch` of one batch, output channel `oc`. Taps outside the
 * input are skipped, as in TFLite. */
static inline int32_t rip_dw_acc(const rip_dw_conv_params *params, const rip_dims *input_dims,
                                 const int8_t *in, const rip_dims *filter_dims,
                                 const int8_t *filter, int32_t ch, int32_t oc, int32_t oy,
                                 int32_t ox) {
    const int32_t h = input_dims->h, w = input_dims->w, c = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w, c_out = filter_dims->c;
    const int32_t iy0 = oy * params->stride.h - params->padding.h;
    const int32_t ix0 = ox * params->stride.w - params->padding.w;
    int32_t ky_lo, ky_hi, kx_lo, kx_hi;
    rip_conv_tap_range(iy0, params->dilation.h, kh, h, &ky_lo, &ky_hi);
    rip_conv_tap_range(ix0, params->dilation.w, kw, w, &kx_lo, &kx_hi);
    int32_t acc = 0;
    for (int32_t ky = ky_lo; ky < ky_hi; ++ky) {
        const int32_t iy = iy0 + ky * params->dilation.h;
        for (int32_t kx = kx_lo; kx < kx_hi; ++kx) {
            const int32_t ix = ix0 + kx * params->dilation.w;
            const int32_t x = in[((size_t)iy * w + ix) * c + ch];
            const int32_t wt = filter[((size_t)ky * kw + kx) * c_out + oc];
            acc += wt * (x + params->input_offset);
        }
    }
    return acc;
}

rip_status rip_depthwise_conv2d_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                            const rip_per_channel_quant *quant, const rip_dims *input_dims,
                            const int8_t *input, const rip_dims *filter_dims,
                            const int8_t *filter, const rip_dims *bias_dims, const int32_t *bias,
                            const rip_dims *output_dims, int8_t *output) {
    (void)ctx;
    (void)bias_dims;
    if (rip_dw_check(params, input_dims, filter_dims, output_dims) != RIP_OK) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t c = input_dims->c, m = params->depth_multiplier, c_out = output_dims->c;
    const size_t in_batch = (size_t)input_dims->h * input_dims->w * c;
    const size_t out_batch = (size_t)output_dims->h * output_dims->w * c_out;
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * in_batch;
        int8_t *out = output + (size_t)b * out_batch;
        for (int32_t oy = 0; oy < output_dims->h; ++oy) {
            for (int32_t ox = 0; ox < output_dims->w; ++ox) {
                int8_t *px = out + ((size_t)oy * output_dims->w + ox) * c_out;
                for (int32_t ch = 0; ch < c; ++ch) {
                    for (int32_t j = 0; j < m; ++j) {
                        const int32_t oc = ch * m + j;
                        int32_t acc = rip_dw_acc(params, input_dims, in, filter_dims, filter,
                                                 ch, oc, oy, ox);
                        if (bias != NULL) {
                            acc += bias[oc];
                        }
                        px[oc] = rip_requantize(acc, quant->multiplier[oc], quant->shift[oc],
                                                params->output_offset, params->activation);
                    }
                }
            }
        }
    }
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_inplace_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                                    const rip_per_channel_quant *quant,
                                    const rip_dims *input_dims, int8_t *data,
                                    const rip_dims *filter_dims, const int8_t *filter,
                                    const rip_dims *bias_dims, const int32_t *bias,
                                    const rip_dims *output_dims) {
    (void)bias_dims;
    const int32_t plane = output_dims->h * output_dims->w;
    if (rip_dw_check(params, input_dims, filter_dims, output_dims) != RIP_OK ||
        params->depth_multiplier != 1 || plane > input_dims->h * input_dims->w || ctx == NULL ||
        ctx->buf == NULL || ctx->size < plane) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t c = input_dims->c;
    const size_t in_batch = (size_t)input_dims->h * input_dims->w * c;
    const size_t out_batch = (size_t)plane * c;
    int8_t *const buf = ctx->buf;
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = data + (size_t)b * in_batch;
        int8_t *out = data + (size_t)b * out_batch;
        for (int32_t ch = 0; ch < c; ++ch) {
            /* The whole plane reads channel ch only, which no write has touched yet: earlier
             * channels' scatters land on their own channel (plane <= H * W). */
            for (int32_t oy = 0; oy < output_dims->h; ++oy) {
                for (int32_t ox = 0; ox < output_dims->w; ++ox) {
                    int32_t acc =
                        rip_dw_acc(params, input_dims, in, filter_dims, filter, ch, ch, oy, ox);
                    if (bias != NULL) {
                        acc += bias[ch];
                    }
                    buf[oy * output_dims->w + ox] =
                        rip_requantize(acc, quant->multiplier[ch], quant->shift[ch],
                                       params->output_offset, params->activation);
                }
            }
            for (int32_t p = 0; p < plane; ++p) {
                out[(size_t)p * c + ch] = buf[p];
            }
        }
    }
    return RIP_OK;
}
