/*
 * rip kernels: the fast depthwise plane engine (not part of the generated code's API): one
 * channel's whole output plane, interior and border split, for the kernels taller than the
 * row engine takes (rip_depthwise_fast.c) and the in-place channel scheme's one-plane
 * fallback (rip_depthwise_inplace_fast.c).
 */
#ifndef RIP_DW_PLANE_ENGINE_H
#define RIP_DW_PLANE_ENGINE_H

#include "rip_dw_geometry.h"

/* One border output: only the taps inside the input, found by comparison, each adding
 * w * (x + input_offset) to the model's own bias (`bias` here is the folded bias minus
 * input_offset * sum of the channel's weights), as TFLite's reference does. */
static int32_t rip_dw_border_acc(const rip_dw_plane *g, const int8_t *in, const int32_t *pw,
                                 int32_t ch, int32_t oy, int32_t ox, int32_t acc) {
    const int32_t iy0 = oy * g->sh - g->ph, ix0 = ox * g->sw - g->pw;
    const int32_t offset = -g->zero_point;
    int32_t ky_lo, ky_hi, kx_lo, kx_hi;
    rip_conv_tap_range(iy0, g->dh, g->kh, g->h, &ky_lo, &ky_hi);
    rip_conv_tap_range(ix0, g->dw, g->kw, g->w, &kx_lo, &kx_hi);
    for (int32_t ky = ky_lo; ky < ky_hi; ++ky) {
        const int8_t *x = in + ((size_t)(iy0 + ky * g->dh) * g->w + (size_t)ix0) * g->c;
        for (int32_t kx = kx_lo; kx < kx_hi; ++kx) {
            acc += ((int32_t)x[kx * g->dw * g->c] + offset) *
                   rip_dw_weight(g, pw, ch, ky * g->kw + kx);
        }
    }
    return acc;
}

/* Interior outputs ox in [ox_lo, ox_hi) of one row: `src` is the top-left tap of the first.
 * KH and KW are compile-time constants at every call but the generic one, so the taps
 * unroll and the weights stay in registers. */
static inline __attribute__((always_inline)) void rip_dw_interior_row(
    const rip_dw_plane *g, const int8_t *src, const int32_t *wk, const int32_t KH,
    const int32_t KW, int32_t bias, int32_t multiplier, int32_t shift, int8_t *dst,
    int32_t dst_stride, int32_t count) {
    const int32_t step = g->sw * g->c;
    const int32_t row = g->dh * g->w * g->c;
    const int32_t col = g->dw * g->c;
    for (int32_t n = 0; n < count; ++n) {
        int32_t acc = bias;
        for (int32_t ky = 0; ky < KH; ++ky) {
            const int8_t *r = src + ky * row;
            for (int32_t kx = 0; kx < KW; ++kx) {
                acc += (int32_t)r[kx * col] * wk[ky * KW + kx];
            }
        }
        *dst = (int8_t)rip_fast_requantize(acc, multiplier, shift, g->output_offset, g->act_min,
                                           g->act_max);
        dst += dst_stride;
        src += step;
    }
}

/* The 3x3 interior written out: nine weights in registers, three row pointers. At unit
 * stride the window slides: each output loads one new column of three taps and reuses the
 * two columns its left neighbour loaded. */
static void rip_dw_interior_3x3(const rip_dw_plane *g, const int8_t *src, const int32_t *wk,
                                int32_t bias, int32_t multiplier, int32_t shift, int8_t *dst,
                                int32_t dst_stride, int32_t count) {
    const int32_t w00 = wk[0], w01 = wk[1], w02 = wk[2], w10 = wk[3], w11 = wk[4];
    const int32_t w12 = wk[5], w20 = wk[6], w21 = wk[7], w22 = wk[8];
    const int32_t row = g->dh * g->w * g->c;
    const int32_t col = g->dw * g->c;
    const int8_t *r0 = src, *r1 = src + row, *r2 = src + 2 * row;
    if (g->sw == 1 && g->dw == 1) {
        int32_t a0 = r0[0], b0 = r1[0], c0 = r2[0];
        int32_t a1 = r0[col], b1 = r1[col], c1 = r2[col];
        r0 += 2 * col;
        r1 += 2 * col;
        r2 += 2 * col;
        for (int32_t n = 0; n < count; ++n) {
            const int32_t a2 = *r0, b2 = *r1, c2 = *r2;
            r0 += col;
            r1 += col;
            r2 += col;
            int32_t acc = bias + a0 * w00 + a1 * w01 + a2 * w02;
            acc += b0 * w10 + b1 * w11 + b2 * w12;
            acc += c0 * w20 + c1 * w21 + c2 * w22;
            a0 = a1;
            a1 = a2;
            b0 = b1;
            b1 = b2;
            c0 = c1;
            c1 = c2;
            *dst = (int8_t)rip_fast_requantize(acc, multiplier, shift, g->output_offset,
                                               g->act_min, g->act_max);
            dst += dst_stride;
        }
        return;
    }
    const int32_t step = g->sw * g->c;
    for (int32_t n = 0; n < count; ++n) {
        int32_t acc = bias + r0[0] * w00 + r0[col] * w01 + r0[2 * col] * w02;
        acc += r1[0] * w10 + r1[col] * w11 + r1[2 * col] * w12;
        acc += r2[0] * w20 + r2[col] * w21 + r2[2 * col] * w22;
        r0 += step;
        r1 += step;
        r2 += step;
        *dst = (int8_t)rip_fast_requantize(acc, multiplier, shift, g->output_offset, g->act_min,
                                           g->act_max);
        dst += dst_stride;
    }
}

/* Channel `ch`'s whole output plane into dst (pixel p at dst[p * dst_stride]); `filter` is
 * the packed one (rip_dw_weight). */
static __attribute__((noinline, unused)) void rip_dw_channel(const rip_dw_plane *g,
                                                             const int8_t *in,
                                                             const int8_t *filter, int32_t ch,
                                                             int32_t bias, int32_t multiplier,
                                                             int32_t shift, int8_t *dst,
                                                             int32_t dst_stride) {
    const int8_t *in_ch = in + ch;
    const int32_t *pw = rip_dw_packed(filter);
    int32_t wk[49];
    const int32_t taps = g->kh * g->kw;
    const int small = taps <= 49;
    int32_t sum = 0;
    for (int32_t t = 0; t < taps; ++t) {
        const int32_t v = rip_dw_weight(g, pw, ch, t);
        sum += v;
        if (small) {
            wk[t] = v;
        }
    }
    const int32_t model_bias = (int32_t)((uint32_t)bias + (uint32_t)g->zero_point * (uint32_t)sum);
    for (int32_t oy = 0; oy < g->h_out; ++oy) {
        int8_t *out_row = dst + (size_t)oy * g->w_out * dst_stride;
        const int interior_row = oy >= g->oy_lo && oy < g->oy_hi && small;
        const int32_t lo = interior_row ? g->ox_lo : g->w_out;
        const int32_t hi = interior_row ? g->ox_hi : g->w_out;
        for (int32_t ox = 0; ox < lo; ++ox) {
            out_row[(size_t)ox * dst_stride] = (int8_t)rip_fast_requantize(
                rip_dw_border_acc(g, in_ch, pw, ch, oy, ox, model_bias), multiplier, shift,
                g->output_offset, g->act_min, g->act_max);
        }
        if (lo < hi) {
            const int8_t *src = in_ch + ((size_t)(oy * g->sh - g->ph) * g->w +
                                         (size_t)(lo * g->sw - g->pw)) * g->c;
            int8_t *d = out_row + (size_t)lo * dst_stride;
            const int32_t count = hi - lo;
            if (g->kh == 3 && g->kw == 3) {
                rip_dw_interior_3x3(g, src, wk, bias, multiplier, shift, d, dst_stride, count);
            } else if (g->kh == 5 && g->kw == 5) {
                rip_dw_interior_row(g, src, wk, 5, 5, bias, multiplier, shift, d, dst_stride,
                                    count);
            } else if (g->kh == 7 && g->kw == 7) {
                rip_dw_interior_row(g, src, wk, 7, 7, bias, multiplier, shift, d, dst_stride,
                                    count);
            } else {
                rip_dw_interior_row(g, src, wk, g->kh, g->kw, bias, multiplier, shift, d,
                                    dst_stride, count);
            }
        }
        for (int32_t ox = rip_max32(hi, lo); ox < g->w_out; ++ox) {
            out_row[(size_t)ox * dst_stride] = (int8_t)rip_fast_requantize(
                rip_dw_border_acc(g, in_ch, pw, ch, oy, ox, model_bias), multiplier, shift,
                g->output_offset, g->act_min, g->act_max);
        }
    }
}

#endif /* RIP_DW_PLANE_ENGINE_H */
