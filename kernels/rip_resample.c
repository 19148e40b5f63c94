/* rip kernels: int8 resampling (see rip_resample.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_resample.h"
#include "rip_support.h"

/* Source coordinate of output index o in 1/1024 units, and the two input indices around it. */
static void source_span(int32_t o, int32_t scale_10, int32_t half_pixel, int32_t in_size,
                        int32_t *pos, int32_t *lo, int32_t *hi) {
    *pos = half_pixel ? o * scale_10 + scale_10 / 2 - (1 << 9) : o * scale_10;
    /* C division truncates toward zero, as the reference's does (pos may be negative). */
    *lo = rip_max32(*pos / (1 << 10), 0);
    *hi = rip_min32((*pos + (1 << 10) - 1) / (1 << 10), in_size - 1);
}

rip_status rip_resize_bilinear_s8(const rip_resize_bilinear_params *params,
                                  const rip_dims *input_dims, const int8_t *input,
                                  const rip_dims *output_dims, int8_t *output) {
    const int32_t c = input_dims->c;
    const int32_t h_in = input_dims->h;
    const int32_t w_in = input_dims->w;
    if (output_dims->n != input_dims->n || output_dims->c != c || h_in <= 0 || w_in <= 0) {
        return RIP_ERROR_ARGUMENT;
    }
    int8_t *dst = output;
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *batch = input + b * h_in * w_in * c;
        for (int32_t y = 0; y < output_dims->h; ++y) {
            int32_t py, y0, y1;
            source_span(y, params->scale_h_10, params->half_pixel_centers, h_in, &py, &y0, &y1);
            const int64_t dy = py - (1 << 10) * y0; /* weight of row y1, 1/1024 */
            for (int32_t x = 0; x < output_dims->w; ++x) {
                int32_t px, x0, x1;
                source_span(x, params->scale_w_10, params->half_pixel_centers, w_in, &px, &x0,
                            &x1);
                const int64_t dx = px - (1 << 10) * x0;
                const int8_t *p00 = batch + (y0 * w_in + x0) * c;
                const int8_t *p10 = batch + (y1 * w_in + x0) * c;
                const int8_t *p01 = batch + (y0 * w_in + x1) * c;
                const int8_t *p11 = batch + (y1 * w_in + x1) * c;
                for (int32_t ch = 0; ch < c; ++ch) {
                    const int64_t sum = (int64_t)p00[ch] * ((1 << 10) - dy) * ((1 << 10) - dx) +
                                        (int64_t)p10[ch] * dy * ((1 << 10) - dx) +
                                        (int64_t)p01[ch] * ((1 << 10) - dy) * dx +
                                        (int64_t)p11[ch] * dy * dx;
                    const int64_t round = sum > 0 ? (1 << 19) : -(1 << 19);
                    *dst++ = (int8_t)((sum + round) / (1 << 20));
                }
            }
        }
    }
    return RIP_OK;
}

/* ---- TRANSPOSE_CONV ----------------------------------------------------------------------- */

rip_status rip_transpose_conv_s8(const rip_transpose_conv_params *params,
                                 const rip_per_channel_quant *quant, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const int32_t *bias,
                                 const rip_dims *output_dims, int8_t *output) {
    const int32_t c_in = input_dims->c;
    const int32_t c_out = output_dims->c;
    const int32_t kh = filter_dims->h;
    const int32_t kw = filter_dims->w;
    const int32_t sh = params->stride.h;
    const int32_t sw = params->stride.w;
    if (filter_dims->c != c_in || filter_dims->n != c_out || output_dims->n != input_dims->n ||
        sh < 1 || sw < 1) {
        return RIP_ERROR_ARGUMENT;
    }
    int8_t *dst = output;
    for (int32_t b = 0; b < output_dims->n; ++b) {
        const int8_t *in_batch = input + b * input_dims->h * input_dims->w * c_in;
        for (int32_t oy = 0; oy < output_dims->h; ++oy) {
            for (int32_t ox = 0; ox < output_dims->w; ++ox) {
                for (int32_t oc = 0; oc < c_out; ++oc) {
                    int32_t acc = 0;
                    for (int32_t ky = 0; ky < kh; ++ky) {
                        const int32_t ty = oy + params->padding.h - ky; /* iy * sh */
                        if (ty < 0 || ty % sh || ty / sh >= input_dims->h) {
                            continue;
                        }
                        for (int32_t kx = 0; kx < kw; ++kx) {
                            const int32_t tx = ox + params->padding.w - kx;
                            if (tx < 0 || tx % sw || tx / sw >= input_dims->w) {
                                continue;
                            }
                            const int8_t *px = in_batch + ((ty / sh) * input_dims->w + tx / sw) * c_in;
                            const int8_t *wt = filter + ((oc * kh + ky) * kw + kx) * c_in;
                            for (int32_t ic = 0; ic < c_in; ++ic) {
                                acc += (px[ic] + params->input_offset) * wt[ic];
                            }
                        }
                    }
                    if (bias != NULL) {
                        acc += bias[oc];
                    }
                    acc = rip_multiply_by_quantized_multiplier(acc, quant->multiplier[oc],
                                                               quant->shift[oc]);
                    acc += params->output_offset;
                    *dst++ = (int8_t)rip_clamp32(acc, params->activation.min,
                                                 params->activation.max);
                }
            }
        }
    }
    return RIP_OK;
}
