/*
 * rip kernels: int8 convolution, depthwise convolution and fully connected layers.
 * See rip_conv.h for the API and the in-place contracts.
 */
#include "rip_conv.h"
#include "rip_conv_internal.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

/* ---------------------------------------------------------------------------------------- */
/* Dot product sum (x[i] + input_offset) * w[i], the inner loop of conv and fully connected. */
/* ---------------------------------------------------------------------------------------- */

#if defined(__ARM_FEATURE_DSP)
/* GCC 12's arm_acle.h has no __ror; this shape compiles to one ROR. */
static inline uint32_t rip_ror32(uint32_t x, uint32_t n) { return (x >> n) | (x << (32u - n)); }

static inline int32_t rip_load_s8x4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4); /* one LDR: unaligned word loads are legal on v8-M Mainline */
    return v;
}

/* SMLAD: two 16 x 16 products per instruction. x + input_offset lies in [-255, 255], so the
 * offset is added in 16-bit lanes (SADD16) and nothing needs extra scratch. Lanes pair bytes
 * 0/2 and 1/3 of both operands, so every product is one the reference forms; the sum is the
 * same integer in any order. */
static int32_t rip_dot_offset_s8(const int8_t *x, const int8_t *w, int32_t n,
                                 int32_t input_offset) {
    const uint32_t lo = (uint32_t)input_offset & 0xFFFFu;
    const int32_t offset2 = (int32_t)(lo | (lo << 16));
    int32_t acc = 0;
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        const int32_t xv = rip_load_s8x4(x + i);
        const int32_t wv = rip_load_s8x4(w + i);
        const int32_t x02 = __sadd16(__sxtb16(xv), offset2);
        const int32_t x13 = __sadd16(__sxtb16((int32_t)rip_ror32((uint32_t)xv, 8)), offset2);
        const int32_t w02 = __sxtb16(wv);
        const int32_t w13 = __sxtb16((int32_t)rip_ror32((uint32_t)wv, 8));
        acc = __smlad(x02, w02, acc);
        acc = __smlad(x13, w13, acc);
    }
    for (; i < n; ++i) {
        acc += (int32_t)w[i] * ((int32_t)x[i] + input_offset);
    }
    return acc;
}
#else
static int32_t rip_dot_offset_s8(const int8_t *x, const int8_t *w, int32_t n,
                                 int32_t input_offset) {
    int32_t acc = 0;
    for (int32_t i = 0; i < n; ++i) {
        acc += (int32_t)w[i] * ((int32_t)x[i] + input_offset);
    }
    return acc;
}
#endif

static inline int8_t rip_requantize(int32_t acc, int32_t multiplier, int32_t shift,
                                    int32_t output_offset, rip_activation act) {
    acc = rip_multiply_by_quantized_multiplier(acc, multiplier, shift) + output_offset;
    return (int8_t)rip_clamp32(acc, act.min, act.max);
}

/* ---------------------------------------------------------------------------------------- */
/* CONV_2D                                                                                  */
/* ---------------------------------------------------------------------------------------- */

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

/* ---------------------------------------------------------------------------------------- */
/* DEPTHWISE_CONV_2D                                                                        */
/* ---------------------------------------------------------------------------------------- */

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

/* ---------------------------------------------------------------------------------------- */
/* FULLY_CONNECTED                                                                          */
/* ---------------------------------------------------------------------------------------- */

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
