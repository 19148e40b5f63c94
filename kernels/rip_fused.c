/*
 * rip kernels: the fused, row-streamed convolution chain of rip_fused.h.
 */
#include <stddef.h>
#include "rip_conv_internal.h"
#include "rip_fused.h"

typedef struct {
    const rip_fused_chain *chain;
    const int8_t *input;
    int8_t *const *rings;
    int8_t *output;
    int8_t *res_row; /* the last stage's row before the residual ADD */
    rip_context work;
    int32_t next[RIP_FUSED_MAX_STAGES]; /* each stage's rows below this are pulled */
} rip_fused_run;

static int32_t align4(int32_t n) { return (n + 3) / 4 * 4; }

static int32_t stage_need(const rip_fused_stage *s) {
    const int32_t taps = s->filter_dims.h * s->filter_dims.w * s->input_dims.c;
    if (s->kind == RIP_FUSED_DEPTHWISE) {
        return 12 * s->filter_dims.h * s->filter_dims.w; /* rip_fused_tap per tap */
    }
    return align4(4 * taps); /* a padded row sends even a 1x1 conv down the gather path */
}

int32_t rip_fused_chain_s8_get_buffer_size(const rip_fused_chain *chain) {
    int32_t need = 0;
    for (int32_t j = 0; j < chain->n_stages; ++j) {
        need = rip_max32(need, stage_need(&chain->stages[j]));
    }
    if (chain->residual != NULL) {
        const rip_dims *o = &chain->stages[chain->n_stages - 1].output_dims;
        need += align4(o->w * o->c);
    }
    return need;
}

/* Output row r's rank among stage s's needed rows (-1: not needed). */
static int32_t rank(const rip_fused_stage *s, int32_t r) {
    return s->ordinal != NULL ? s->ordinal[r] : r;
}

/* Row r of stage j's input: the chain's input, or stage j - 1's ring. */
static const int8_t *input_row(const rip_fused_run *run, int32_t j, int32_t r) {
    const rip_fused_stage *s = &run->chain->stages[j];
    const size_t row = (size_t)s->input_dims.w * (size_t)s->input_dims.c;
    if (j == 0) {
        return run->input + (size_t)r * row;
    }
    return run->rings[j - 1] + (size_t)(rank(&run->chain->stages[j - 1], r) %
                                        run->chain->stages[j - 1].ring_rows) * row;
}

/* The highest input row stage j's output row t reads, -1 if none (padding only). */
static int32_t last_needed(const rip_fused_stage *s, int32_t t) {
    for (int32_t ky = s->filter_dims.h - 1; ky >= 0; --ky) {
        const int32_t r = t * s->conv.stride.h - s->conv.padding.h + ky * s->conv.dilation.h;
        if (r >= 0 && r < s->input_dims.h) {
            return r;
        }
    }
    return -1;
}

/* One pixel's valid taps: input row, byte offsets into it and into the filter. */
typedef struct {
    int32_t ky, x, f;
} rip_fused_tap;

/* Four channels' accumulators over one pixel's taps: x + input offset times the filter,
 * in registers (SXTB16 pairs and SMLABB / SMLATT on cores with the DSP extension). */
static void dw_taps4(const int8_t *const *rows, const int8_t *filter, const rip_fused_tap *taps,
                     int32_t n, int32_t ch, int32_t in_off, int32_t a[4]) {
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
#if defined(__ARM_FEATURE_DSP)
    const int32_t off2 = (int32_t)(((uint32_t)in_off & 0xFFFFu) | ((uint32_t)in_off << 16));
    for (int32_t t = 0; t < n; ++t) {
        const int32_t xv = rip_fast_load_s8x4(rows[taps[t].ky] + taps[t].x + ch);
        const int32_t fv = rip_fast_load_s8x4(filter + taps[t].f + ch);
        const int32_t x02 = __sadd16(__sxtb16(xv), off2);
        const int32_t x13 = __sadd16(rip_fast_sxtb16_ror8(xv), off2);
        const int32_t f02 = __sxtb16(fv), f13 = rip_fast_sxtb16_ror8(fv);
        a0 = __smlabb(x02, f02, a0);
        a2 = __smlatt(x02, f02, a2);
        a1 = __smlabb(x13, f13, a1);
        a3 = __smlatt(x13, f13, a3);
    }
#else
    for (int32_t t = 0; t < n; ++t) {
        const int8_t *xp = rows[taps[t].ky] + taps[t].x + ch;
        const int8_t *fp = filter + taps[t].f + ch;
        a0 += ((int32_t)xp[0] + in_off) * (int32_t)fp[0];
        a1 += ((int32_t)xp[1] + in_off) * (int32_t)fp[1];
        a2 += ((int32_t)xp[2] + in_off) * (int32_t)fp[2];
        a3 += ((int32_t)xp[3] + in_off) * (int32_t)fp[3];
    }
#endif
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

void rip_fused_depthwise_row_s8(const rip_fused_stage *s, const int8_t *const *rows,
                                int32_t *scratch, int8_t *out) {
    const int32_t w = s->input_dims.w, c = s->input_dims.c;
    const int32_t kh = s->filter_dims.h, kw = s->filter_dims.w;
    const int32_t sw = s->conv.stride.w, pw = s->conv.padding.w, dw = s->conv.dilation.w;
    const int32_t in_off = s->conv.input_offset, out_off = s->conv.output_offset;
    const int32_t lo = s->conv.activation.min, hi = s->conv.activation.max;
    const int32_t *mult = s->quant.multiplier, *shift = s->quant.shift;
    rip_fused_tap *taps = (rip_fused_tap *)(void *)scratch; /* KH * KW of them */
    for (int32_t ox = 0; ox < s->output_dims.w; ++ox) {
        const int32_t ix0 = ox * sw - pw;
        int32_t n = 0;
        for (int32_t ky = 0; ky < kh; ++ky) {
            if (rows[ky] == NULL) {
                continue;
            }
            for (int32_t kx = 0; kx < kw; ++kx) {
                const int32_t ix = ix0 + kx * dw;
                if (ix >= 0 && ix < w) {
                    taps[n].ky = ky;
                    taps[n].x = ix * c;
                    taps[n].f = (ky * kw + kx) * c;
                    ++n;
                }
            }
        }
        int8_t *y = out + (size_t)ox * (size_t)c;
        int32_t ch = 0;
        for (; ch + 4 <= c; ch += 4) {
            int32_t a[4];
            for (int32_t k = 0; k < 4; ++k) {
                a[k] = s->bias != NULL ? s->bias[ch + k] : 0;
            }
            dw_taps4(rows, s->filter, taps, n, ch, in_off, a);
            for (int32_t k = 0; k < 4; ++k) {
                y[ch + k] = (int8_t)rip_fast_requantize(a[k], mult[ch + k], shift[ch + k],
                                                        out_off, lo, hi);
            }
        }
        for (; ch < c; ++ch) {
            int32_t a = s->bias != NULL ? s->bias[ch] : 0;
            for (int32_t t = 0; t < n; ++t) {
                a += ((int32_t)rows[taps[t].ky][taps[t].x + ch] + in_off) *
                     (int32_t)s->filter[taps[t].f + ch];
            }
            y[ch] = (int8_t)rip_fast_requantize(a, mult[ch], shift[ch], out_off, lo, hi);
        }
    }
}

/* Output pixel ox's receptive field from row pointers into dst, padded taps the input zero
 * point (whose product the folded bias cancels). */
static void gather_rows(const rip_fused_stage *s, const int8_t *const *rows, int32_t ox,
                        int8_t *dst) {
    const int32_t w = s->input_dims.w, c = s->input_dims.c, kw = s->filter_dims.w;
    const int32_t ix0 = ox * s->conv.stride.w - s->conv.padding.w;
    const int pad = (int)(int8_t)(-s->conv.input_offset);
    for (int32_t ky = 0; ky < s->filter_dims.h; ++ky) {
        for (int32_t kx = 0; kx < kw; ++kx) {
            const int32_t ix = ix0 + kx * s->conv.dilation.w;
            if (rows[ky] == NULL || ix < 0 || ix >= w) {
                memset(dst, pad, (size_t)c);
            } else {
                memcpy(dst, rows[ky] + (size_t)ix * (size_t)c, (size_t)c);
            }
            dst += c;
        }
    }
}

static rip_status conv_row(const rip_fused_run *run, const rip_fused_stage *s,
                           const int8_t *const *rows, int32_t t, int contiguous, int8_t *out) {
    const int32_t kh = s->filter_dims.h, kw = s->filter_dims.w, c_in = s->input_dims.c;
    const int32_t c_out = s->output_dims.c, w_out = s->output_dims.w;
    rip_conv_params p = s->conv;
    int32_t ky_lo = 0, ky_hi = kh - 1;
    while (ky_lo < kh && rows[ky_lo] == NULL) {
        ++ky_lo;
    }
    while (ky_hi >= 0 && rows[ky_hi] == NULL) {
        --ky_hi;
    }
    if (contiguous && ky_lo <= ky_hi) {
        /* The chain's input is stored whole: the fast conv over the window's rows [lo, hi]
         * as one output row, the rows above lo as top padding (taps below hi are outside). */
        const int32_t top = t * s->conv.stride.h - s->conv.padding.h;
        const int32_t lo = top + ky_lo * s->conv.dilation.h;
        const int32_t hi = top + ky_hi * s->conv.dilation.h;
        const rip_dims in_dims = {1, hi - lo + 1, s->input_dims.w, c_in};
        const rip_dims out_dims = {1, 1, w_out, c_out};
        p.padding.h = lo - top;
        return rip_conv2d_fast_s8(&run->work, &p, &s->quant, &in_dims, rows[ky_lo],
                                  &s->filter_dims, s->filter, NULL, s->bias, &out_dims, out);
    }
    if (kh == 1 && kw == 1 && rows[0] != NULL) {
        /* The window is one stored row: the fast conv over it, h = 1. */
        const rip_dims in_dims = {1, 1, s->input_dims.w, c_in};
        const rip_dims out_dims = {1, 1, w_out, c_out};
        p.padding.h = 0;
        p.stride.h = 1;
        return rip_conv2d_fast_s8(&run->work, &p, &s->quant, &in_dims, rows[0], &s->filter_dims,
                                  s->filter, NULL, s->bias, &out_dims, out);
    }
    /* Gather two pixels' fields, then a 1x1 convolution of KH * KW * C_in taps over them. */
    const int32_t taps = kh * kw * c_in;
    const rip_dims f_dims = {c_out, 1, 1, taps};
    rip_conv_params q = s->conv;
    q.stride.h = q.stride.w = 1;
    q.padding.h = q.padding.w = 0;
    q.dilation.h = q.dilation.w = 1;
    const rip_context inner = {run->work.buf + 2 * taps, run->work.size - 2 * taps};
    for (int32_t ox = 0; ox < w_out; ox += 2) {
        const int32_t n = ox + 1 < w_out ? 2 : 1;
        gather_rows(s, rows, ox, run->work.buf);
        if (n == 2) {
            gather_rows(s, rows, ox + 1, run->work.buf + taps);
        }
        const rip_dims in_dims = {1, 1, n, taps};
        const rip_dims out_dims = {1, 1, n, c_out};
        const rip_status st =
            rip_conv2d_fast_s8(&inner, &q, &s->quant, &in_dims, run->work.buf, &f_dims,
                               s->filter, NULL, s->bias, &out_dims, out + (size_t)ox * c_out);
        if (st != RIP_OK) {
            return st;
        }
    }
    return RIP_OK;
}

/* Row t of stage j, its input rows already there. */
static rip_status compute(rip_fused_run *run, int32_t j, int32_t t) {
    const rip_fused_chain *chain = run->chain;
    const rip_fused_stage *s = &chain->stages[j];
    const int last = j == chain->n_stages - 1;
    const int32_t kh = s->filter_dims.h;
    const size_t out_row = (size_t)s->output_dims.w * (size_t)s->output_dims.c;
    const int8_t *rowp[RIP_FUSED_MAX_KH];
    if (kh > RIP_FUSED_MAX_KH) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t ky = 0; ky < kh; ++ky) {
        const int32_t r = t * s->conv.stride.h - s->conv.padding.h + ky * s->conv.dilation.h;
        rowp[ky] = r >= 0 && r < s->input_dims.h ? input_row(run, j, r) : NULL;
    }
    int8_t *dst;
    if (!last) {
        dst = run->rings[j] + (size_t)(rank(s, t) % s->ring_rows) * out_row;
    } else if (chain->residual != NULL) {
        dst = run->res_row;
    } else {
        dst = run->output + (size_t)t * out_row;
    }
    if (s->kind == RIP_FUSED_DEPTHWISE) {
        rip_fused_depthwise_row_s8(s, rowp, (int32_t *)(void *)run->work.buf, dst);
    } else {
        const rip_status st = conv_row(run, s, rowp, t, j == 0, dst);
        if (st != RIP_OK) {
            return st;
        }
    }
    if (last && chain->residual != NULL) {
        /* Input row t is read element by element as output row t is stored. */
        const int8_t *x = run->input + (size_t)t * out_row;
        const int8_t *a = chain->residual_input_first ? x : dst;
        const int8_t *b = chain->residual_input_first ? dst : x;
        return rip_add_s8(chain->residual, (int32_t)out_row, a, (int32_t)out_row, b,
                          (int32_t)out_row, run->output + (size_t)t * out_row);
    }
    return RIP_OK;
}

static rip_status pull(rip_fused_run *run, int32_t j, int32_t t) {
    if (j > 0) {
        const rip_fused_stage *below = &run->chain->stages[j - 1];
        const int32_t top = last_needed(&run->chain->stages[j], t);
        while (run->next[j - 1] <= top) {
            const int32_t u = run->next[j - 1]++;
            if (rank(below, u) < 0) {
                continue; /* no needed row of stage j reads it: never computed */
            }
            const rip_status st = pull(run, j - 1, u);
            if (st != RIP_OK) {
                return st;
            }
        }
    }
    return compute(run, j, t);
}

rip_status rip_fused_chain_s8(const rip_context *ctx, const rip_fused_chain *chain,
                              const int8_t *input, int8_t *const *rings, int8_t *output) {
    const int32_t n = chain->n_stages;
    if (ctx == NULL || ctx->buf == NULL || n < 2 || n > RIP_FUSED_MAX_STAGES ||
        ctx->size < rip_fused_chain_s8_get_buffer_size(chain)) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t j = 0; j < n; ++j) {
        const rip_fused_stage *s = &chain->stages[j];
        if ((j < n - 1 && s->ring_rows < 1) || s->input_dims.n != 1 ||
            (j > 0 && (s->input_dims.w != chain->stages[j - 1].output_dims.w ||
                       s->input_dims.c != chain->stages[j - 1].output_dims.c)) ||
            (s->kind == RIP_FUSED_DEPTHWISE && s->filter_dims.c != s->input_dims.c) ||
            (s->kind == RIP_FUSED_CONV && s->bias == NULL)) {
            return RIP_ERROR_ARGUMENT;
        }
    }
    rip_fused_run run;
    run.chain = chain;
    run.input = input;
    run.rings = rings;
    run.output = output;
    int32_t res = 0;
    if (chain->residual != NULL) {
        const rip_dims *o = &chain->stages[n - 1].output_dims;
        res = align4(o->w * o->c);
    }
    run.res_row = ctx->buf;
    run.work.buf = ctx->buf + res;
    run.work.size = ctx->size - res;
    for (int32_t j = 0; j < n; ++j) {
        run.next[j] = 0;
    }
    for (int32_t y = 0; y < chain->stages[n - 1].output_dims.h; ++y) {
        const rip_status st = pull(&run, n - 1, y);
        if (st != RIP_OK) {
            return st;
        }
    }
    return RIP_OK;
}
