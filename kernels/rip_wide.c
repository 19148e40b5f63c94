/* rip kernels: the 16x8 kernels (see rip_wide.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_wide.h"

#include <stddef.h>
#include <string.h>

#include "rip_support.h"

/* TFLite's MultiplyByQuantizedMultiplier of an int64 (|x| < 2^47): the multiplier rounded
 * to 16 bits, one rounding shift; the result's low 32 bits. */
static inline int32_t mbqm64(int64_t x, int32_t multiplier, int32_t shift) {
    const int32_t reduced = multiplier < 0x7FFF0000 ? (multiplier + (1 << 15)) >> 16 : 0x7FFF;
    const int32_t total_shift = 15 - shift;
    const int64_t r = x * (int64_t)reduced + ((int64_t)1 << (total_shift - 1));
    return (int32_t)(uint32_t)(uint64_t)(r >> total_shift);
}

/* bias[o] of `bytes` (4 or 8; 0: none) as an int64 */
static inline int64_t bias_at(const void *bias, int32_t bytes, int32_t o) {
    if (bytes == 8) {
        int64_t v;
        memcpy(&v, (const char *)bias + 8 * (ptrdiff_t)o, sizeof v);
        return v;
    }
    if (bytes == 4) {
        int32_t v;
        memcpy(&v, (const char *)bias + 4 * (ptrdiff_t)o, sizeof v);
        return v;
    }
    return 0;
}

/* Output o's sum scaled as TFLite Micro's reference does: in int64 with the 64-bit
 * MultiplyByQuantizedMultiplier (wide), or in int32 with the double-rounding one; the int32
 * sum is the int64 one's low 32 bits (the reference's int32 additions wrap alike). */
static inline int32_t scale_sum(int32_t wide, int64_t acc, const void *bias, int32_t bytes,
                                int32_t o, int32_t multiplier, int32_t shift) {
    if (wide) {
        return mbqm64(acc + bias_at(bias, bytes, o), multiplier, shift);
    }
    const int32_t low = (int32_t)(uint32_t)(uint64_t)acc;
    return rip_multiply_by_quantized_multiplier(
        rip_wrap_add32(low, (int32_t)bias_at(bias, bytes, o)), multiplier, shift);
}

rip_status rip_conv_s16(const rip_conv_s16_params *p, const void *input, const int8_t *filter,
                        const void *bias, void *output) {
    const rip_dims *in = &p->input, *out = &p->output;
    const int32_t m = p->depth_multiplier, bb = p->bias_bytes, fc = p->filter_channels;
    if (in->c < 1 || out->c < 1 || p->kh < 1 || p->kw < 1 || (bb != 0 && bb != 4 && bb != 8) ||
        (bb != 0 && bias == NULL) || (m > 0 && out->c != in->c * m) ||
        (m == 0 && (fc < 1 || in->c % fc != 0 || out->c % (in->c / fc) != 0))) {
        return RIP_ERROR_ARGUMENT;
    }
    /* per tap: the input channels it sums over, and the filter's stride between taps */
    const int32_t taps_c = m > 0 ? 1 : fc;
    const int32_t per_group = m > 0 ? 0 : out->c / (in->c / fc);
    const int8_t *x = (const int8_t *)input;
    int8_t *y = (int8_t *)output;
    for (int32_t b = 0; b < out->n; ++b) {
        for (int32_t oy = 0; oy < out->h; ++oy) {
            for (int32_t ox = 0; ox < out->w; ++ox) {
                for (int32_t oc = 0; oc < out->c; ++oc) {
                    /* the first input channel this output reads, and its filter row */
                    const int32_t c0 = m > 0 ? oc / m : (oc / per_group) * fc;
                    int64_t acc = 0;
                    for (int32_t ky = 0; ky < p->kh; ++ky) {
                        const int32_t iy = oy * p->stride_h - p->pad_h + ky * p->dilation_h;
                        for (int32_t kx = 0; kx < p->kw; ++kx) {
                            const int32_t ix = ox * p->stride_w - p->pad_w + kx * p->dilation_w;
                            if (iy < 0 || iy >= in->h || ix < 0 || ix >= in->w) {
                                continue; /* a padded tap: zero, as the reference skips it */
                            }
                            const ptrdiff_t at =
                                (((ptrdiff_t)b * in->h + iy) * in->w + ix) * in->c + c0;
                            for (int32_t j = 0; j < taps_c; ++j) {
                                const int32_t v = rip_load_le(x + 2 * (at + j), 2);
                                const int32_t w =
                                    m > 0 ? filter[((ptrdiff_t)ky * p->kw + kx) * out->c + oc]
                                          : filter[(((ptrdiff_t)oc * p->kh + ky) * p->kw + kx) *
                                                       fc + j];
                                acc += (int64_t)w * v;
                            }
                        }
                    }
                    int32_t scaled = scale_sum(p->wide_sum, acc, bias, bb, oc, p->multiplier[oc],
                                               p->shift[oc]);
                    scaled = rip_clamp32(scaled, p->activation_min, p->activation_max);
                    const ptrdiff_t o = (((ptrdiff_t)b * out->h + oy) * out->w + ox) * out->c + oc;
                    rip_store_le(y + 2 * o, scaled, 2);
                }
            }
        }
    }
    return RIP_OK;
}

rip_status rip_fully_connected_s16(const rip_fully_connected_s16_params *p, const void *input,
                                   const int8_t *filter, const void *bias, void *output) {
    const int32_t n = p->input_depth, m = p->output_depth, bb = p->bias_bytes;
    if (p->batches < 1 || n < 1 || m < 1 || (bb != 0 && bb != 4 && bb != 8) ||
        (bb != 0 && bias == NULL)) {
        return RIP_ERROR_ARGUMENT;
    }
    const int8_t *x = (const int8_t *)input;
    int8_t *y = (int8_t *)output;
    for (int32_t b = 0; b < p->batches; ++b) {
        for (int32_t o = 0; o < m; ++o) {
            const int8_t *w = filter + (ptrdiff_t)o * n;
            const int32_t mult = p->multiplier[p->per_channel ? o : 0];
            const int32_t shift = p->shift[p->per_channel ? o : 0];
            int64_t acc = 0;
            for (int32_t d = 0; d < n; ++d) {
                const int32_t v = rip_load_le(x + 2 * ((ptrdiff_t)b * n + d), 2);
                acc += (int64_t)w[d] * (v + p->input_offset);
            }
            int32_t scaled = scale_sum(p->wide_sum, acc, bias, bb, o, mult, shift);
            scaled = rip_clamp32(rip_wrap_add32(scaled, p->output_offset), p->activation_min,
                                 p->activation_max);
            rip_store_le(y + 2 * ((ptrdiff_t)b * m + o), scaled, 2);
        }
    }
    return RIP_OK;
}

rip_status rip_pool_s16(const rip_pool_s16_params *p, const void *input, void *output) {
    const rip_dims *in = &p->input, *out = &p->output;
    if (in->c != out->c || p->kh < 1 || p->kw < 1 || p->stride_h < 1 || p->stride_w < 1) {
        return RIP_ERROR_ARGUMENT;
    }
    const int8_t *x = (const int8_t *)input;
    int8_t *y = (int8_t *)output;
    for (int32_t b = 0; b < out->n; ++b) {
        for (int32_t oy = 0; oy < out->h; ++oy) {
            const int32_t y0 = oy * p->stride_h - p->pad_h;
            const int32_t ky0 = y0 < 0 ? -y0 : 0;
            const int32_t ky1 = p->kh < in->h - y0 ? p->kh : in->h - y0;
            for (int32_t ox = 0; ox < out->w; ++ox) {
                const int32_t x0 = ox * p->stride_w - p->pad_w;
                const int32_t kx0 = x0 < 0 ? -x0 : 0;
                const int32_t kx1 = p->kw < in->w - x0 ? p->kw : in->w - x0;
                for (int32_t c = 0; c < out->c; ++c) {
                    int32_t acc = p->average ? 0 : INT16_MIN, count = 0;
                    for (int32_t ky = ky0; ky < ky1; ++ky) {
                        for (int32_t kx = kx0; kx < kx1; ++kx) {
                            const ptrdiff_t at =
                                (((ptrdiff_t)b * in->h + y0 + ky) * in->w + x0 + kx) * in->c + c;
                            const int32_t v = rip_load_le(x + 2 * at, 2);
                            acc = p->average ? acc + v : (v > acc ? v : acc);
                            ++count;
                        }
                    }
                    if (count == 0) {
                        return RIP_ERROR_ARGUMENT; /* TFLite Micro fails the invoke */
                    }
                    if (p->average) {
                        acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
                    }
                    acc = rip_clamp32(acc, p->activation_min, p->activation_max);
                    const ptrdiff_t o = (((ptrdiff_t)b * out->h + oy) * out->w + ox) * out->c + c;
                    rip_store_le(y + 2 * o, acc, 2);
                }
            }
        }
    }
    return RIP_OK;
}
