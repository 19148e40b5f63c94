/*
 * rip kernels: int8 pooling and global average pooling. See rip_pool.h.
 */
#include <string.h>
#include "rip_pool.h"

int32_t rip_avg_pool_s8_get_buffer_size(const rip_dims *output_dims) {
    return 4 * output_dims->c;
}

int32_t rip_max_pool_s8_get_buffer_size(const rip_dims *output_dims) {
    return 4 * output_dims->c;
}

int32_t rip_global_avg_pool_s8_get_buffer_size(const rip_dims *output_dims) {
    return 4 * output_dims->c;
}

/* The int32 accumulators of one pixel, or NULL when the scratch is too small or unaligned. */
static int32_t *rip_acc_buffer(const rip_context *ctx, int32_t channels) {
    if (ctx == NULL || ctx->buf == NULL || ctx->size < 4 * channels ||
        ((uintptr_t)ctx->buf & 3u) != 0) {
        return NULL;
    }
    return (int32_t *)(void *)ctx->buf;
}

/* Windows start at o * s - pad for o in [0, n_out); every one must hold a real cell unless
 * padded cells count (TFLite fails such a pool). Starts are increasing, so checking the
 * first and the last suffices. */
static int rip_windows_touch_input(int32_t pad, int32_t stride, int32_t k, int32_t n,
                                   int32_t n_out) {
    return k > pad && (n_out - 1) * stride - pad < n;
}

enum rip_pool_kind { RIP_POOL_AVG, RIP_POOL_MAX };

#if defined(__ARM_FEATURE_DSP)
/* The window sums of channels [0, 4 * (c / 4)), four channels a word: SXTAB16 adds bytes 0, 2
 * (and, rotated, 1, 3) of each input word into two 16-bit lanes. Exact for windows of at most
 * 256 cells: |sum| <= 128 * 256 = 2^15, and -2^15 still fits a lane. Returns the first
 * channel left to the scalar loop. */
static int32_t rip_avg_window_sum4(const int8_t *in, int32_t w, int32_t c, int32_t iy0,
                                   int32_t ix0, int32_t fy_lo, int32_t fy_hi, int32_t fx_lo,
                                   int32_t fx_hi, int32_t *acc) {
    const int32_t groups = c / 4 * 4;
    for (int32_t ch = 0; ch < groups; ch += 4) {
        uint32_t s02 = 0, s13 = 0;
        for (int32_t fy = fy_lo; fy < fy_hi; ++fy) {
            const int8_t *px = in + ((size_t)(iy0 + fy) * w + (ix0 + fx_lo)) * c + ch;
            for (int32_t fx = fx_lo; fx < fx_hi; ++fx, px += c) {
                uint32_t v;
                memcpy(&v, px, 4); /* one LDR: unaligned word loads are legal on v8-M Main */
                __asm__("sxtab16 %0, %0, %1" : "+r"(s02) : "r"(v));
                __asm__("sxtab16 %0, %0, %1, ror #8" : "+r"(s13) : "r"(v));
            }
        }
        acc[ch] = (int16_t)(s02 & 0xFFFFu);
        acc[ch + 1] = (int16_t)(s13 & 0xFFFFu);
        acc[ch + 2] = (int16_t)(s02 >> 16);
        acc[ch + 3] = (int16_t)(s13 >> 16);
    }
    return groups;
}
#endif

static rip_status rip_pool(enum rip_pool_kind kind, const rip_context *ctx,
                    const rip_pool_params *params, const rip_dims *input_dims,
                    const int8_t *input, const rip_dims *filter_dims, const rip_dims *output_dims,
                    int8_t *output) {
    const int32_t h = input_dims->h, w = input_dims->w, c = input_dims->c;
    const int32_t fh = filter_dims->h, fw = filter_dims->w;
    const int32_t h_out = output_dims->h, w_out = output_dims->w;
    const int32_t sh = params->stride.h, sw = params->stride.w;
    const rip_activation act = params->activation;
    int32_t *acc = rip_acc_buffer(ctx, c);
    if (acc == NULL || output_dims->c != c || input_dims->n != output_dims->n || fh < 1 ||
        fw < 1 || sh < 1 || sw < 1 || act.min > act.max || act.min < -128 || act.max > 127) {
        return RIP_ERROR_ARGUMENT;
    }
    if (!params->pad_counts &&
        !(rip_windows_touch_input(params->padding.h, sh, fh, h, h_out) &&
          rip_windows_touch_input(params->padding.w, sw, fw, w, w_out))) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * h * w * c;
        int8_t *out = output + (size_t)b * h_out * w_out * c;
        for (int32_t oy = 0; oy < h_out; ++oy) {
            const int32_t iy0 = oy * sh - params->padding.h;
            const int32_t fy_lo = rip_max32(0, -iy0);
            const int32_t fy_hi = rip_min32(fh, h - iy0);
            for (int32_t ox = 0; ox < w_out; ++ox) {
                const int32_t ix0 = ox * sw - params->padding.w;
                const int32_t fx_lo = rip_max32(0, -ix0);
                const int32_t fx_hi = rip_min32(fw, w - ix0);
                const int32_t real = rip_max32(fy_hi - fy_lo, 0) * rip_max32(fx_hi - fx_lo, 0);
                const int32_t init = kind == RIP_POOL_AVG ? 0 : INT8_MIN;
                for (int32_t ch = 0; ch < c; ++ch) {
                    acc[ch] = init;
                }
                /* Every read of this pixel's window happens before any of its writes. */
                int32_t ch0 = 0;
#if defined(__ARM_FEATURE_DSP)
                if (kind == RIP_POOL_AVG && real <= 256) {
                    ch0 = rip_avg_window_sum4(in, w, c, iy0, ix0, fy_lo, fy_hi, fx_lo, fx_hi,
                                              acc);
                }
#endif
                for (int32_t fy = fy_lo; fy < fy_hi; ++fy) {
                    for (int32_t fx = fx_lo; fx < fx_hi; ++fx) {
                        const int8_t *px = in + ((size_t)(iy0 + fy) * w + (ix0 + fx)) * c;
                        if (kind == RIP_POOL_AVG) {
                            for (int32_t ch = ch0; ch < c; ++ch) {
                                acc[ch] += px[ch];
                            }
                        } else {
                            for (int32_t ch = 0; ch < c; ++ch) {
                                acc[ch] = rip_max32(acc[ch], px[ch]);
                            }
                        }
                    }
                }
                int32_t count = real;
                const int32_t padded = fh * fw - real;
                if (params->pad_counts && padded > 0) {
                    /* A folded PAD: the window lies inside the padded tensor, whose border
                     * cells hold the zero point and count like real ones. */
                    count = fh * fw;
                    for (int32_t ch = 0; ch < c; ++ch) {
                        acc[ch] = kind == RIP_POOL_AVG ? acc[ch] + padded * params->pad_value
                                                       : rip_max32(acc[ch], params->pad_value);
                    }
                }
                int8_t *dst = out + ((size_t)oy * w_out + ox) * c;
                for (int32_t ch = 0; ch < c; ++ch) {
                    int32_t v = acc[ch];
                    if (kind == RIP_POOL_AVG) {
                        /* TFLite rounds half away from zero with truncating division. */
                        v = v > 0 ? (v + count / 2) / count : (v - count / 2) / count;
                    }
                    dst[ch] = (int8_t)rip_clamp32(v, act.min, act.max);
                }
            }
        }
    }
    return RIP_OK;
}

rip_status rip_avg_pool_s8(const rip_context *ctx, const rip_pool_params *params,
                    const rip_dims *input_dims, const int8_t *input, const rip_dims *filter_dims,
                    const rip_dims *output_dims, int8_t *output) {
    return rip_pool(RIP_POOL_AVG, ctx, params, input_dims, input, filter_dims, output_dims,
                    output);
}

rip_status rip_max_pool_s8(const rip_context *ctx, const rip_pool_params *params,
                    const rip_dims *input_dims, const int8_t *input, const rip_dims *filter_dims,
                    const rip_dims *output_dims, int8_t *output) {
    return rip_pool(RIP_POOL_MAX, ctx, params, input_dims, input, filter_dims, output_dims,
                    output);
}

rip_status rip_global_avg_pool_s8(const rip_context *ctx, const rip_mean_params *params,
                           const rip_dims *input_dims, const int8_t *input,
                           const rip_dims *output_dims, int8_t *output) {
    const int32_t c = input_dims->c;
    const int32_t count = input_dims->h * input_dims->w;
    int32_t *sum = rip_acc_buffer(ctx, c);
    if (sum == NULL || output_dims->c != c || count < 1 ||
        output_dims->n * output_dims->h * output_dims->w != input_dims->n) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * count * c;
        for (int32_t ch = 0; ch < c; ++ch) {
            sum[ch] = 0;
        }
        for (int32_t p = 0; p < count; ++p) {
            const int8_t *px = in + (size_t)p * c;
            for (int32_t ch = 0; ch < c; ++ch) {
                sum[ch] += px[ch];
            }
        }
        for (int32_t ch = 0; ch < c; ++ch) {
            /* TFLM subtracts zero point * count from the raw sum, then requantizes once with
             * the multiplier that already carries 1 / count. */
            const int32_t shifted = sum[ch] + params->input_offset * count;
            const int32_t v =
                rip_multiply_by_quantized_multiplier(shifted, params->multiplier, params->shift) +
                params->output_offset;
            output[(size_t)b * c + ch] = (int8_t)rip_clamp32(v, INT8_MIN, INT8_MAX);
        }
    }
    return RIP_OK;
}
