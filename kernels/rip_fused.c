/*
 * rip kernels: the fused, row-streamed convolution chain of rip_fused.h.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include <stddef.h>
#include "rip_fused.h"
#include "rip_cores.h"
#include "rip_support.h"

typedef struct {
    const rip_fused_chain *chain;
    const rip_row_source *source; /* a streamed input's, NULL: the input is resident */
    const int8_t *input;          /* the input, or the ring its streamed rows arrive in */
    int8_t *const *rings;
    int8_t *output;
    int8_t *res_row; /* the last stage's row before the residual ADD */
    rip_context work;
    int core; /* -1: the whole chain on this core; 0 or 1: its share on two (ctx->share) */
    int32_t next[RIP_FUSED_MAX_STAGES]; /* each stage's rows below this are pulled */
    int8_t *at[RIP_FUSED_MAX_STAGES];   /* a stage without a ring: where its last row went */
    int32_t delivered;                  /* a streamed input's rows below this have arrived */
} rip_fused_run;

static int32_t align4(int32_t n) { return (n + 3) / 4 * 4; }

/* Scratch of the conv kernel a CONV_2D stage calls (rip_conv2d_fast_rq_s8's, which is
 * more than rip_conv2d_fast_s8's), and for a stage with KH > 1 whose rows may wrap in a
 * ring (after the first; the first too over a streamed input) two gathered fields in
 * front of it. */
static int32_t stage_need(const rip_fused_chain *chain, const rip_fused_stage *s, int32_t j) {
    if (s->kind == RIP_FUSED_DEPTHWISE) {
        return 0; /* the row engine keeps its state on the stack */
    }
    const int32_t taps = s->filter_dims.h * s->filter_dims.w * s->input_dims.c;
    const int32_t inner = rip_conv2d_fast_rq_s8_get_buffer_size(&s->input_dims, &s->filter_dims);
    const int ringed = j > 0 || chain->source_rows > 0;
    return (ringed && s->filter_dims.h > 1 ? align4(2 * taps) : 0) + align4(inner);
}

int32_t rip_fused_chain_s8_get_buffer_size(const rip_fused_chain *chain) {
    int32_t need = 0;
    for (int32_t j = 0; j < chain->n_stages; ++j) {
        need = rip_max32(need, stage_need(chain, &chain->stages[j], j));
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

/* Row r of stage j's input: the chain's input (or the slot its streamed row arrived in),
 * or stage j - 1's ring. */
static const int8_t *input_row(const rip_fused_run *run, int32_t j, int32_t r) {
    const rip_fused_stage *s = &run->chain->stages[j];
    const size_t row = (size_t)s->input_dims.w * (size_t)s->input_dims.c;
    if (j == 0) {
        const int32_t slot = run->source != NULL ? r % run->chain->source_rows : r;
        return run->input + (size_t)slot * row;
    }
    if (run->chain->stages[j - 1].ring_rows == 0) {
        return run->at[j - 1]; /* its one row, stored in its input's slot */
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

/* The stage's conv kernel over `input` (input_dims, params p, filter_dims): the cheap
 * requantisation with the packed filter where the generator proved it, else the general. */
static rip_status run_conv(const rip_context *ctx, const rip_fused_stage *s,
                           const rip_conv_params *p, const rip_dims *input_dims,
                           const int8_t *input, const rip_dims *filter_dims,
                           const rip_dims *output_dims, int8_t *out) {
    if (s->channels != NULL) {
        return rip_conv2d_fast_rq_s8(ctx, p, s->channels, input_dims, input, filter_dims,
                                     s->filter, output_dims, out);
    }
    return rip_conv2d_fast_s8(ctx, p, &s->quant, input_dims, input, filter_dims, s->filter,
                              NULL, s->bias, output_dims, out);
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

/* Row t of a CONV_2D stage from its window's rows (rows[ky], NULL outside the input). */
static rip_status conv_row(const rip_fused_run *run, const rip_context *work,
                           const rip_fused_stage *s, const int8_t *const *rows, int8_t *out) {
    const int32_t kh = s->filter_dims.h, kw = s->filter_dims.w, c_in = s->input_dims.c;
    const int32_t c_out = s->output_dims.c, w_out = s->output_dims.w;
    const size_t row = (size_t)s->input_dims.w * (size_t)c_in;
    const ptrdiff_t pitch = (ptrdiff_t)s->conv.dilation.h * (ptrdiff_t)row;
    const rip_dims out_dims = {1, 1, w_out, c_out};
    rip_conv_params p = s->conv;
    p.stride.h = 1; /* one output row: its vertical stride never applies */
    int32_t ky_lo = 0, ky_hi = kh - 1;
    while (ky_lo < kh && rows[ky_lo] == NULL) {
        ++ky_lo;
    }
    while (ky_hi >= 0 && rows[ky_hi] == NULL) {
        --ky_hi;
    }
    if (ky_lo > ky_hi) {
        /* Every tap is padding: a one-row input the window lies wholly above (not read). */
        const rip_dims in_dims = {1, 1, s->input_dims.w, c_in};
        p.padding.h = kh * s->conv.dilation.h;
        return run_conv(work, s, &p, &in_dims, run->input, &s->filter_dims, &out_dims, out);
    }
    int strided = 1; /* the window's rows lie at one dilation pitch from each other */
    for (int32_t ky = ky_lo + 1; ky <= ky_hi && strided; ++ky) {
        strided = rows[ky] == rows[ky_lo] + (ky - ky_lo) * pitch;
    }
    if (strided) {
        /* Rows [lo, hi] of the window as an input of (hi - lo) * dh + 1 rows, the taps above
         * lo as top padding (those below hi are outside the input). A ring window that does
         * not wrap spans only its ring's rows. */
        const rip_dims in_dims = {1, (ky_hi - ky_lo) * s->conv.dilation.h + 1, s->input_dims.w,
                                  c_in};
        p.padding.h = ky_lo * s->conv.dilation.h;
        return run_conv(work, s, &p, &in_dims, rows[ky_lo], &s->filter_dims, &out_dims, out);
    }
    /* Gather two pixels' fields, then a 1x1 convolution of KH * KW * C_in taps over them. */
    const int32_t taps = kh * kw * c_in;
    const rip_dims f_dims = {c_out, 1, 1, taps};
    rip_conv_params q = s->conv;
    q.stride.h = q.stride.w = 1;
    q.padding.h = q.padding.w = 0;
    q.dilation.h = q.dilation.w = 1;
    const int32_t fields = align4(2 * taps);
    const rip_context inner = {
        .buf = work->buf + fields, .size = work->size - fields, .share = work->share};
    for (int32_t ox = 0; ox < w_out; ox += 2) {
        const int32_t n = ox + 1 < w_out ? 2 : 1;
        gather_rows(s, rows, ox, work->buf);
        if (n == 2) {
            gather_rows(s, rows, ox + 1, work->buf + taps);
        }
        const rip_dims in_dims = {1, 1, n, taps};
        const rip_dims n_dims = {1, 1, n, c_out};
        const rip_status st = run_conv(&inner, s, &q, &in_dims, work->buf, &f_dims, &n_dims,
                                       out + (size_t)ox * (size_t)c_out);
        if (st != RIP_OK) {
            return st;
        }
    }
    return RIP_OK;
}

/* Channels [c0, c0 + n_ch) of row t of a DEPTHWISE_CONV_2D stage: the row engine over the
 * window's row pointers. */
static rip_status depthwise_row(const rip_fused_stage *s, const int8_t *const *rows,
                                int32_t c0, int32_t n_ch, int8_t *out) {
    rip_dw_conv_params p;
    p.input_offset = s->conv.input_offset;
    p.output_offset = s->conv.output_offset;
    p.stride = s->conv.stride;
    p.padding = s->conv.padding;
    p.dilation = s->conv.dilation;
    p.depth_multiplier = 1;
    p.activation = s->conv.activation;
    return rip_depthwise_conv2d_row_part_s8(&p, s->channels, &s->quant, s->bias,
                                            &s->input_dims, rows, &s->filter_dims, s->filter,
                                            &s->output_dims, c0, n_ch, out);
}

/* This core's output channels [*lo, *hi) of stage s, and the context its CONV_2D kernel
 * takes: every channel on one core; on two, a depthwise stage's groups of four
 * (rip_share_groups), a CONV_2D's channel pairs (rip_share_channels, RIP_SHARE_PART*: the
 * kernel splits the same way and leaves the synchronisation to the chain), and a CONV_2D
 * with the exact requantisation (no pair split) whole on core 0. The replay checks the
 * chain with these splits (rip.allocator.theory.two_core_programs.pair_split, group_split). */
static rip_context stage_share(const rip_fused_run *run, const rip_fused_stage *s,
                               int32_t *lo, int32_t *hi) {
    rip_context work = run->work;
    const int32_t c = s->output_dims.c;
    *lo = 0;
    *hi = c;
    if (run->core < 0) {
        return work;
    }
    const int32_t share = RIP_SHARE_CORE0 + run->core;
    if (s->kind == RIP_FUSED_DEPTHWISE) {
        rip_share_groups(share, c, lo, hi);
    } else if (s->channels != NULL) {
        rip_share_channels(share, c, lo, hi);
        work.share = RIP_SHARE_PART0 + run->core;
    } else if (run->core == 1) {
        *lo = c;
    }
    return work;
}

/* The end of a unit of a chain both cores share: a core starts the next once the other has
 * finished this one (rule block, L = 1: docs/two-cores.md). */
static void unit_done(const rip_fused_run *run) {
    if (run->core >= 0) {
        rip_core_barrier(run->core);
    }
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
    if (!last && s->ring_rows == 0) {
        /* over the lowest input row it reads, which no later row reads (rip_fused.h) */
        int32_t ky = 0;
        while (ky < kh && rowp[ky] == NULL) {
            ++ky;
        }
        if (ky == kh) {
            return RIP_ERROR_ARGUMENT; /* a row of padding alone has no slot */
        }
        dst = run->at[j] = (int8_t *)rowp[ky];
    } else if (!last) {
        dst = run->rings[j] + (size_t)(rank(s, t) % s->ring_rows) * out_row;
    } else if (chain->residual != NULL) {
        dst = run->res_row;
    } else {
        dst = run->output + (size_t)t * out_row;
    }
    int32_t lo, hi;
    const rip_context work = stage_share(run, s, &lo, &hi);
    rip_status st = RIP_OK;
    if (hi > lo) {
        st = s->kind == RIP_FUSED_DEPTHWISE ? depthwise_row(s, rowp, lo, hi - lo, dst)
                                            : conv_row(run, &work, s, rowp, dst);
    }
    if (st != RIP_OK) {
        return st;
    }
    if (last && chain->residual != NULL && run->core >= 0) {
        /* Two cores: each adds its channels of X's row t into its own residual row, then
         * (a unit of its own, once both have read X's row) stores them over output row t:
         * no core stores over X bytes the other still reads (two_core_programs.store_split). */
        const int8_t *x = run->input + (size_t)t * out_row;
        const int32_t c = s->output_dims.c, n = hi - lo;
        for (int32_t px = 0; px < s->output_dims.w && n > 0; ++px) {
            const size_t at = (size_t)px * (size_t)c + (size_t)lo;
            const int8_t *a = chain->residual_input_first ? x + at : dst + at;
            const int8_t *b = chain->residual_input_first ? dst + at : x + at;
            st = rip_add_s8(chain->residual, n, a, n, b, n, dst + at);
            if (st != RIP_OK) {
                return st;
            }
        }
        unit_done(run);
        int8_t *y = run->output + (size_t)t * out_row;
        for (int32_t px = 0; px < s->output_dims.w && n > 0; ++px) {
            const size_t at = (size_t)px * (size_t)c + (size_t)lo;
            memcpy(y + at, dst + at, (size_t)n);
        }
        return RIP_OK;
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

/* A streamed input's rows up to `top` (every one, in order) into their ring slots. */
static rip_status deliver(rip_fused_run *run, int32_t top) {
    const rip_fused_stage *s0 = &run->chain->stages[0];
    const int32_t bytes = s0->input_dims.w * s0->input_dims.c;
    for (; run->delivered <= top; ++run->delivered) {
        const int32_t r = run->delivered;
        int8_t *dst = (int8_t *)run->input + (size_t)(r % run->chain->source_rows) * (size_t)bytes;
        if (run->source->read(run->source->user, r, dst, bytes) != 0) {
            return RIP_ERROR_SOURCE;
        }
    }
    return RIP_OK;
}

static rip_status pull(rip_fused_run *run, int32_t j, int32_t t) {
    if (j == 0 && run->source != NULL) {
        const rip_status st = deliver(run, last_needed(&run->chain->stages[0], t));
        if (st != RIP_OK) {
            return st;
        }
    }
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
    const rip_status st = compute(run, j, t);
    unit_done(run);
    return st;
}

static rip_status run_chain(const rip_context *ctx, const rip_fused_chain *chain,
                            const rip_row_source *source, const int8_t *input,
                            int8_t *const *rings, int8_t *output) {
    const int32_t n = chain->n_stages;
    const int streamed = source != NULL;
    if (ctx == NULL || ctx->buf == NULL || n < (streamed ? 1 : 2) || n > RIP_FUSED_MAX_STAGES ||
        !rip_share_ok(ctx, RIP_SHARE_CORE1) || (streamed && ctx->share != RIP_SHARE_WHOLE) ||
        ctx->size < rip_fused_chain_s8_get_buffer_size(chain) || input == NULL ||
        (streamed && (source->read == NULL || chain->source_rows < 1 || chain->residual != NULL)) ||
        (!streamed && chain->source_rows != 0) || (n > 1 && rings == NULL)) {
        return RIP_ERROR_ARGUMENT;
    }
    for (int32_t j = 0; j < n; ++j) {
        const rip_fused_stage *s = &chain->stages[j];
        /* a stage storing its rows in its input's slot: a depthwise after a ring */
        const int in_slot = j > 0 && j < n - 1 && s->ring_rows == 0;
        if (in_slot && (s->kind != RIP_FUSED_DEPTHWISE || chain->stages[j - 1].ring_rows < 1 ||
                        s->output_dims.w > s->input_dims.w)) {
            return RIP_ERROR_ARGUMENT;
        }
        if ((j < n - 1 && s->ring_rows < 1 && !in_slot) || s->input_dims.n != 1 ||
            (j > 0 && (s->input_dims.w != chain->stages[j - 1].output_dims.w ||
                       s->input_dims.c != chain->stages[j - 1].output_dims.c)) ||
            (s->kind == RIP_FUSED_DEPTHWISE && s->filter_dims.c != s->input_dims.c) ||
            (s->channels == NULL && s->bias == NULL)) {
            return RIP_ERROR_ARGUMENT;
        }
    }
    rip_fused_run run;
    run.chain = chain;
    run.source = source;
    run.input = input;
    run.rings = rings;
    run.output = output;
    run.delivered = 0;
    int32_t res = 0;
    if (chain->residual != NULL) {
        const rip_dims *o = &chain->stages[n - 1].output_dims;
        res = align4(o->w * o->c);
    }
    run.res_row = ctx->buf;
    /* built whole (share 0); stage_share sets a CONV_2D stage's part on two cores */
    run.work = (rip_context){.buf = ctx->buf + res, .size = ctx->size - res};
    run.core = ctx->share == RIP_SHARE_WHOLE ? -1 : (int)(ctx->share - RIP_SHARE_CORE0);
    for (int32_t j = 0; j < n; ++j) {
        run.next[j] = 0;
        run.at[j] = NULL;
    }
    for (int32_t y = 0; y < chain->stages[n - 1].output_dims.h; ++y) {
        const rip_status st = pull(&run, n - 1, y);
        if (st != RIP_OK) {
            return st;
        }
    }
    /* the rows no stage reads (below the last window) are still the frame's: consume them */
    return streamed ? deliver(&run, chain->stages[0].input_dims.h - 1) : RIP_OK;
}

rip_status rip_fused_chain_s8(const rip_context *ctx, const rip_fused_chain *chain,
                              const int8_t *input, int8_t *const *rings, int8_t *output) {
    return run_chain(ctx, chain, NULL, input, rings, output);
}

rip_status rip_fused_chain_streamed_s8(const rip_context *ctx, const rip_fused_chain *chain,
                                       const rip_row_source *source, int8_t *source_ring,
                                       int8_t *const *rings, int8_t *output) {
    if (source == NULL || source->read == NULL) {
        return RIP_ERROR_SOURCE; /* no source was set: no row can arrive */
    }
    return run_chain(ctx, chain, source, source_ring, rings, output);
}
