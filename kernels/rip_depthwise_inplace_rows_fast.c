/*
 * rip kernels: DEPTHWISE_CONV_2D in place, row-streamed with a ring of saved input rows.
 * See rip_depthwise_inplace_rows_fast.h for the API and the in-place contract.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_depthwise_inplace_rows_fast.h"
#include "rip_cores.h"
#include "rip_dw_row_engine.h"

/* The schedule (rip.allocator.planning.scratch.depthwise_ring_slots is its Python twin,
 * and rip.allocator.theory.simulate.simulate_depthwise_rows executes it over a tracked
 * workspace): output rows r = 0 .. H_out - 1 in order, each written at data + r * W_out * C
 * (output base == input base, gap 0). Before row r is written, every input row i that row
 * r's bytes reach for the first time (clobber(i) == r) and that a later output row still
 * reads (last_reader(i) > r), or that row r itself reads at a byte one of its earlier pixels
 * has stored (rip_dw_rows_self_safe), is copied into the next slot of a FIFO ring; from
 * then on its taps read the ring. Saves happen in increasing i, so the live saved rows are a
 * window of the save order; the ring has as many slots as that window's widest extent. The generator
 * bakes the schedule into the call (each input row's ring slot, -1 for a row never saved,
 * and the ring's row count): the kernel itself only copies and reads, no per-call
 * schedule arithmetic. The functions below count the same schedule for the scratch
 * formula's C twin (get_buffer_size). */

/* The first output row whose bytes reach input row i: (r + 1) * W_out > i * W. */
static inline int32_t rip_dw_rows_clobber(const rip_dw_plane *g, int32_t i) {
    if (g->w_ratio > 0) { /* W_out divides W (every stride-1 and most stride-2 layers) */
        return i * g->w_ratio;
    }
    const int64_t p = (int64_t)i * g->w; /* a 32-bit division wherever it fits (always, in
                                            practice): no 64-bit division call per row */
    return p <= INT32_MAX ? (int32_t)p / g->w_out : (int32_t)(p / g->w_out);
}

/* The bytes of an n-byte row copy that rip_dw_rows_copy moves a block at a time: 64 bytes a
 * step (two LDM / STM pairs of eight registers) on Arm cores where both ends are 4-aligned,
 * as every row is when C is a multiple of 4 (ARMv6-M: 32 bytes, its LDM and STM take the
 * low registers only, four at a time); 0 elsewhere. The kernel asks once per call. */
#if RIP_DW_V6M
#define RIP_DW_COPY_STEP 32u
#else
#define RIP_DW_COPY_STEP 64u
#endif
static size_t rip_dw_rows_block_bytes(const int8_t *a, const int8_t *b, size_t row, size_t n) {
#if defined(__arm__)
    return (((uintptr_t)a | (uintptr_t)b | row) & 3u) == 0 ? n - n % RIP_DW_COPY_STEP : 0;
#else
    (void)a;
    (void)b;
    (void)row;
    (void)n;
    return 0;
#endif
}

/* Copy one input row (n bytes) into its ring slot: the first `blocks` bytes (a multiple of
 * RIP_DW_COPY_STEP, both ends 4-aligned: rip_dw_rows_block_bytes) a block at a time
 * (rip_dw_rows_copy_blocks, Arm cores), the rest a byte at a time. */
#if defined(__arm__) && RIP_HAND_ASM
static __attribute__((noinline)) void rip_dw_rows_copy_blocks(int8_t *d, const int8_t *s,
                                                              const int8_t *end) {
    do {
#if RIP_DW_V6M
        __asm__ volatile("ldmia %0!, {r4, r5, r6, r7}\n\tstmia %1!, {r4, r5, r6, r7}\n\t"
                         "ldmia %0!, {r4, r5, r6, r7}\n\tstmia %1!, {r4, r5, r6, r7}"
                         : "+l"(s), "+l"(d)
                         :
                         : "r4", "r5", "r6", "r7", "memory");
#else
        __asm__ volatile("ldmia %0!, {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"
                         "stmia %1!, {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"
                         "ldmia %0!, {r4, r5, r6, r7, r8, r9, r10, r11}\n\t"
                         "stmia %1!, {r4, r5, r6, r7, r8, r9, r10, r11}"
                         : "+r"(s), "+r"(d)
                         :
                         : "r4", "r5", "r6", "r7", "r8", "r9", "r10", "r11", "memory");
#endif
    } while (s != end);
}
#endif

/* Channels [c0, c0 + n_ch) of one input row of w pixels of c channels into its ring slot
 * (the same places in it): what one of two cores that share the ring saves, its own
 * channels only, so that the other core's channels of the slot stay the other's. */
static void rip_dw_rows_copy_channels(int8_t *dst, const int8_t *src, int32_t w, int32_t c,
                                      int32_t c0, int32_t n_ch) {
    dst += c0;
    src += c0;
    if (((c | c0 | n_ch) & 3) == 0 && (((uintptr_t)dst | (uintptr_t)src) & 3u) == 0) {
        for (int32_t x = 0; x < w; ++x, dst += c, src += c) {
            for (int32_t j = 0; j < n_ch; j += 4) {
                *(int32_t *)(void *)(dst + j) = *(const int32_t *)(const void *)(src + j);
            }
        }
        return;
    }
    for (int32_t x = 0; x < w; ++x, dst += c, src += c) {
        for (int32_t j = 0; j < n_ch; ++j) {
            dst[j] = src[j];
        }
    }
}

static inline void rip_dw_rows_copy(int8_t *dst, const int8_t *src, size_t blocks, size_t n) {
    size_t i = 0;
#if defined(__arm__) && RIP_HAND_ASM
    if (blocks > 0) {
        rip_dw_rows_copy_blocks(dst, src, src + blocks);
    }
    i = blocks;
#else
    (void)blocks;
#endif
    for (; i < n; ++i) {
        dst[i] = src[i];
    }
}

/* The last output row reading input row i, -1 if none does. */
static int32_t rip_dw_rows_last_reader(const rip_dw_plane *g, int32_t i) {
    for (int32_t ky = 0; ky < g->kh; ++ky) {
        const int32_t t = i + g->ph - ky * g->dh;
        if (t < 0) {
            break;
        }
        if (g->sh == 1) { /* no division on the common stride */
            if (t < g->h_out) {
                return t;
            }
        } else if (t % g->sh == 0 && t / g->sh < g->h_out) {
            return t / g->sh;
        }
    }
    return -1;
}

/* Whether output row r, whose bytes reach input row i first and which is its last reader,
 * reads row i in place safely (rip.allocator.planning.scratch._self_safe): the engine walks
 * each channel group's pixels left to right, each reading all its taps before storing, so
 * only a tap wanting a byte an earlier pixel of row r stored goes wrong. */
static int rip_dw_rows_self_safe(const rip_dw_plane *g, int32_t i, int32_t r) {
    const int64_t shift = (int64_t)i * g->w - (int64_t)r * g->w_out;
    for (int32_t x2 = 0; x2 < g->w_out; ++x2) {
        for (int32_t kx = 0; kx < g->kw; ++kx) {
            const int32_t ix = x2 * g->sw - g->pw + kx * g->dw;
            if (ix >= 0 && ix < g->w && shift + ix >= 0 && shift + ix < x2) {
                return 0;
            }
        }
    }
    return 1;
}

/* Whether the schedule saves input row i: a later output row than the first its bytes
 * reach still reads it, or that first row is its last reader but cannot read it in place. */
static int rip_dw_rows_saved(const rip_dw_plane *g, int32_t i) {
    const int32_t r = rip_dw_rows_clobber(g, i);
    if (r >= g->h_out) {
        return 0;
    }
    const int32_t last = rip_dw_rows_last_reader(g, i);
    return last > r || (last == r && !rip_dw_rows_self_safe(g, i, r));
}

/* Ring slots the schedule needs: the widest window of saved rows still read. */
static int32_t rip_dw_rows_ring(const rip_dw_plane *g) {
    int32_t next = 0, saves = 0, live_row = 0, live = 0, ring = 0;
    for (int32_t r = 0; r < g->h_out; ++r) {
        for (; next < g->h && rip_dw_rows_clobber(g, next) <= r; ++next) {
            saves += rip_dw_rows_saved(g, next);
        }
        /* advance past saved rows no output >= r reads (and rows never saved) */
        for (; live_row < next; ++live_row) {
            if (!rip_dw_rows_saved(g, live_row)) {
                continue;
            }
            if (rip_dw_rows_last_reader(g, live_row) >= r) {
                break;
            }
            ++live;
        }
        ring = rip_max32(ring, saves - live);
    }
    return ring;
}


static int rip_dw_rows_geometry_ok(const rip_dw_plane *g, int32_t batches) {
    return batches == 1 && g->kh <= RIP_DW_ROWS_MAX_KH && g->h_out * g->w_out <= g->h * g->w &&
           g->h < 32768;
}

static int32_t rip_dw_rows_scratch(const rip_dw_plane *g) {
    return rip_dw_rows_ring(g) * g->w * g->c;
}

int32_t rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size(
    const rip_dw_conv_params *params, const rip_dims *input_dims, const rip_dims *filter_dims,
    const rip_dims *output_dims) {
    rip_dw_plane g;
    static const int32_t one = 1;
    /* the geometry only: a stand-in bias pointer satisfies the argument check */
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, &one, output_dims) != RIP_OK) {
        return -1;
    }
    return rip_dw_rows_scratch(&g);
}

int32_t rip_depthwise_conv2d_scratch_get_buffer_size(const rip_dw_conv_params *params,
                                                      const rip_dims *input_dims,
                                                      const rip_dims *filter_dims,
                                                      const rip_dims *output_dims) {
    const int32_t plane = output_dims->h * output_dims->w;
    rip_dw_plane g;
    static const int32_t one = 1;
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, &one, output_dims) != RIP_OK ||
        !rip_dw_rows_geometry_ok(&g, input_dims->n)) {
        return plane;
    }
    return rip_max32(plane, rip_dw_rows_scratch(&g));
}

/* The baked schedule over `data`: ring_slots[i] is input row i's ring slot (-1: never
 * saved), ring_rows the ring's row count (ctx->buf holds ring_rows input rows). */
static rip_status rip_dw_rows_run(const rip_context *ctx, const rip_dw_conv_params *params,
                                  const rip_dw_rq *q, const void *bias,
                                  const rip_dims *input_dims, int8_t *data,
                                  const rip_dims *filter_dims, const int8_t *filter,
                                  const rip_dims *output_dims, const int16_t *ring_slots,
                                  int32_t ring_rows) {
    rip_dw_plane g;
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, bias, output_dims) != RIP_OK ||
        !rip_dw_rows_geometry_ok(&g, input_dims->n) || ring_slots == NULL || ring_rows < 0 ||
        (ring_rows > 0 && (ctx == NULL || ctx->buf == NULL)) ||
        !rip_share_ok(ctx, RIP_SHARE_CORE1)) {
        return RIP_ERROR_ARGUMENT;
    }
    const size_t row_in = (size_t)g.w * (size_t)g.c;
    if (ring_rows > 0 && (int64_t)ctx->size < (int64_t)ring_rows * (int64_t)row_in) {
        return RIP_ERROR_ARGUMENT;
    }
    /* Two cores: this core's channels. Both cores share the ring, each saving and reading
     * its own channels of a slot only, which only it writes: no synchronisation, and the
     * ring of one core (the slots of the same schedule). */
    int32_t c0 = 0, c1 = g.c;
    if (ctx != NULL && ctx->share != RIP_SHARE_WHOLE) {
        rip_share_groups(ctx->share, g.c, &c0, &c1);
    }
    const int32_t n_ch = c1 - c0;
    if (n_ch == 0) {
        return RIP_OK;
    }
    if (rip_dw_plane_cols(&g, data, filter, q, data, c0, n_ch)) {
        return RIP_OK; /* a group at a time, in an order that needs no saved rows */
    }
    if (ring_rows == 0) { /* nothing saved: the out-of-place row loop over the shared base */
        for (int32_t i = 0; i < g.h; ++i) {
            if (ring_slots[i] >= 0) {
                return RIP_ERROR_ARGUMENT;
            }
        }
        rip_dw_group(&g, data, filter, q, c0, n_ch, data + c0, g.c);
        return RIP_OK;
    }
    int8_t *const ring = ctx->buf;
    const size_t blocks = rip_dw_rows_block_bytes(ring, data, row_in, row_in);
    const int8_t *rows[RIP_DW_ROWS_MAX_KH];
    const int32_t h = g.h, kh = g.kh, dh = g.dh;
    const ptrdiff_t out_row = (ptrdiff_t)g.w_out * g.c;
    int8_t *out = data;
    int32_t iy0 = -g.ph;
    int32_t next = 0; /* input rows [0, next) have been reached (and saved if listed) */
    for (int32_t oy = 0; oy < g.h_out; ++oy, iy0 += g.sh, out += out_row) {
        /* save the input rows this output row reaches first that the schedule lists */
        for (; next < h && rip_dw_rows_clobber(&g, next) <= oy; ++next) {
            const int32_t k = ring_slots[next];
            if (k >= 0) {
                if (k >= ring_rows) {
                    return RIP_ERROR_ARGUMENT;
                }
                if (n_ch == g.c) {
                    rip_dw_rows_copy(ring + (size_t)k * row_in, data + (size_t)next * row_in,
                                     blocks, row_in);
                } else {
                    rip_dw_rows_copy_channels(ring + (size_t)k * row_in,
                                              data + (size_t)next * row_in, g.w, g.c, c0, n_ch);
                }
            }
        }
        /* a row already reached that the schedule saved is read from its slot */
        int32_t iy = iy0;
        for (int32_t ky = 0; ky < kh; ++ky, iy += dh) {
            const int8_t *r = NULL;
            if ((uint32_t)iy < (uint32_t)h) {
                const int32_t k = iy < next ? ring_slots[iy] : -1;
                r = k >= 0 ? ring + (size_t)k * row_in : data + (size_t)iy * row_in;
            }
            rows[ky] = r;
        }
        /* every row this output row reaches and still reads is in the ring: any order */
        rip_dw_row(&g, rows, filter, q, c0, n_ch, out + c0, g.c);
    }
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_inplace_rows_fast_s8(
    const rip_context *ctx, const rip_dw_conv_params *params, const rip_per_channel_quant *quant,
    const rip_dims *input_dims, int8_t *data, const rip_dims *filter_dims, const int8_t *filter,
    const rip_dims *bias_dims, const int32_t *bias, const rip_dims *output_dims,
    const int16_t *ring_slots, int32_t ring_rows) {
    (void)bias_dims;
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_rows_run(ctx, params, &q, bias, input_dims, data, filter_dims, filter,
                           output_dims, ring_slots, ring_rows);
}

rip_status rip_depthwise_conv2d_inplace_rows_fast_rq_s8(
    const rip_context *ctx, const rip_dw_conv_params *params, const rip_fast_channel *channels,
    const rip_dims *input_dims, int8_t *data, const rip_dims *filter_dims, const int8_t *filter,
    const rip_dims *output_dims, const int16_t *ring_slots, int32_t ring_rows) {
    const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
    return rip_dw_rows_run(ctx, params, &q, channels, input_dims, data, filter_dims, filter,
                           output_dims, ring_slots, ring_rows);
}
