/*
 * rip kernels: int8 pooling and global average pooling. See rip_pool.h.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include <string.h>
#include "rip_pool.h"
#include "rip_support.h"

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

/* One output pixel's window clipped to the input: `rows` runs of `cols` cells, c bytes from
 * one cell to the next within a run and `row_step` bytes from one run to the next. */
typedef struct {
    const int8_t *first; /* channel 0 of the first real cell */
    int32_t rows, cols;
    int32_t row_step;
} rip_window;

/* TFLite's rounded average: half away from zero, C's truncating division. */
static int32_t rip_round_div(int32_t sum, int32_t count) {
    return sum > 0 ? (sum + count / 2) / count : (sum - count / 2) / count;
}

/* Without a divide instruction (ARMv6-M: a library call per channel) rip_round_div is
 * sign(sum) * floor((|sum| + h) / count), h = count / 2, and the floor a multiply by
 * m = ceil(2^24 / count) and a shift: with m * count = 2^24 + r, 0 <= r < count,
 * x * m / 2^24 = x / count + x * r / (count * 2^24), whose floor is floor(x / count)
 * whenever x * r < 2^24. Here x <= 128 * count + h, so x * (count - 1) < 2^24 holds for
 * count <= RIP_RECIP_MAX_COUNT (and the unsigned x * m < 2^32); larger windows divide. */
#define RIP_RECIP_MAX_COUNT 361
#if !defined(__ARM_FEATURE_IDIV)
static uint32_t rip_recip(int32_t count) {
    return count <= RIP_RECIP_MAX_COUNT ? ((1u << 24) + (uint32_t)count - 1u) / (uint32_t)count
                                        : 0u;
}

static int32_t rip_round_recip(int32_t sum, int32_t count, uint32_t recip) {
    if (recip == 0u) {
        return rip_round_div(sum, count);
    }
    const uint32_t x = (uint32_t)(sum < 0 ? -sum : sum) + (uint32_t)(count / 2);
    const int32_t q = (int32_t)((x * recip) >> 24);
    return sum < 0 ? -q : q;
}
#endif

/* One channel's sum (or max, from `init`) over the window's real cells. */
static int32_t rip_window_reduce(enum rip_pool_kind kind, const rip_window *win, int32_t c,
                                 int32_t ch, int32_t init) {
    int32_t v = init;
    const int8_t *row = win->first + ch;
    for (int32_t r = win->rows; r > 0; --r, row += win->row_step) {
        const int8_t *px = row;
        for (int32_t k = win->cols; k > 0; --k, px += c) {
            v = kind == RIP_POOL_AVG ? v + *px : rip_max32(v, *px);
        }
    }
    return v;
}

#if defined(__ARM_FEATURE_DSP)
/* Four channels a word. Unaligned word loads are legal on v8-M Main. */
static inline uint32_t rip_load4(const int8_t *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* Bytes 0 and 2 (ror 0) or 1 and 3 (ror 8) of v, sign-extended, added to the two 16-bit
 * lanes of acc. */
static inline uint32_t rip_sxtab16(uint32_t acc, uint32_t v) {
    __asm__("sxtab16 %0, %0, %1" : "+r"(acc) : "r"(v));
    return acc;
}
static inline uint32_t rip_sxtab16_ror8(uint32_t acc, uint32_t v) {
    __asm__("sxtab16 %0, %0, %1, ror #8" : "+r"(acc) : "r"(v));
    return acc;
}

/* Lane-wise signed byte max and min: SSUB8 sets a GE bit per byte where a >= b, SEL picks
 * by them (one asm block: nothing may touch the GE bits in between). */
static inline uint32_t rip_max_s8x4(uint32_t a, uint32_t b) {
    uint32_t t;
    __asm__("ssub8 %1, %0, %2\n\tsel %0, %0, %2" : "+r"(a), "=&r"(t) : "r"(b) : "cc");
    return a;
}
static inline uint32_t rip_min_s8x4(uint32_t a, uint32_t b) {
    uint32_t t;
    __asm__("ssub8 %1, %0, %2\n\tsel %0, %2, %0" : "+r"(a), "=&r"(t) : "r"(b) : "cc");
    return a;
}

/* The rounding term of rip_round_div on two 16-bit lane sums s, with h = count / 2 in both
 * lanes of `halves`: s + h where s >= h, else s - h. For 0 < s < h both give quotient 0
 * (|s +- h| < 2h <= count), so this is TFLite's s > 0 test. Lanes stay exact while
 * 128 * count + h < 2^15, i.e. count <= 255. */
static inline uint32_t rip_round_lanes(uint32_t s, uint32_t halves) {
    uint32_t up;
    __asm__("sadd16 %1, %0, %2\n\tssub16 %0, %0, %2\n\tsel %0, %1, %0"
            : "+r"(s), "=&r"(up)
            : "r"(halves)
            : "cc");
    return s;
}

/* Four channels' averages from their lane sums (s02: channels 0 and 2, s13: 1 and 3). */
static inline void rip_avg_store4(uint32_t s02, uint32_t s13, uint32_t halves, int32_t count,
                                  int clamp, rip_activation act, int8_t *dst) {
    const uint32_t r02 = rip_round_lanes(s02, halves), r13 = rip_round_lanes(s13, halves);
    int32_t q[4] = {(int16_t)(r02 & 0xFFFFu) / count, (int16_t)(r13 & 0xFFFFu) / count,
                    ((int32_t)r02 >> 16) / count, ((int32_t)r13 >> 16) / count};
    for (int i = 0; i < 4; ++i) {
        dst[i] = (int8_t)(clamp ? rip_clamp32(q[i], act.min, act.max) : q[i]);
    }
}

/* The averages of channels [0, 4 * (c / 4)) into dst, eight or four channels at a time:
 * the window sums in 16-bit lanes (SXTAB16) starting from `init` (the padded cells' sum in
 * both lanes), exact for count <= 255 (|sum| <= 128 * count). Returns the first channel
 * left to the scalar loop. */
__attribute__((noinline)) static int32_t rip_avg_groups(const rip_window *win, int32_t c,
                                                        uint32_t init, int32_t count,
                                                        int clamp, rip_activation act,
                                                        int8_t *dst) {
    const uint32_t halves = (uint32_t)(count / 2) * 0x00010001u;
    const int32_t rows = win->rows, cols = win->cols, row_step = win->row_step;
    int32_t ch = 0;
    for (; ch + 8 <= c; ch += 8) {
        uint32_t a02 = init, a13 = init, b02 = init, b13 = init;
        const int8_t *row = win->first + ch;
        for (int32_t r = rows; r > 0; --r, row += row_step) {
            const int8_t *px = row;
            for (int32_t k = cols; k > 0; --k, px += c) {
                const uint32_t v = rip_load4(px), u = rip_load4(px + 4);
                a02 = rip_sxtab16(a02, v);
                a13 = rip_sxtab16_ror8(a13, v);
                b02 = rip_sxtab16(b02, u);
                b13 = rip_sxtab16_ror8(b13, u);
            }
        }
        rip_avg_store4(a02, a13, halves, count, clamp, act, dst + ch);
        rip_avg_store4(b02, b13, halves, count, clamp, act, dst + ch + 4);
    }
    if (ch + 4 <= c) {
        uint32_t a02 = init, a13 = init;
        const int8_t *row = win->first + ch;
        for (int32_t r = rows; r > 0; --r, row += row_step) {
            const int8_t *px = row;
            for (int32_t k = cols; k > 0; --k, px += c) {
                const uint32_t v = rip_load4(px);
                a02 = rip_sxtab16(a02, v);
                a13 = rip_sxtab16_ror8(a13, v);
            }
        }
        rip_avg_store4(a02, a13, halves, count, clamp, act, dst + ch);
        ch += 4;
    }
    return ch;
}

/* The maxima of channels [0, 4 * (c / 4)) into dst, sixteen or four channels at a time,
 * starting from `init` (INT8_MIN, or the padded cells' value, in every byte). Returns the
 * first channel left to the scalar loop. */
__attribute__((noinline)) static int32_t rip_max_groups(const rip_window *win, int32_t c,
                                                        uint32_t init, int8_t *dst) {
    const int32_t rows = win->rows, cols = win->cols, row_step = win->row_step;
    int32_t ch = 0;
    for (; ch + 16 <= c; ch += 16) {
        uint32_t m0 = init, m1 = init, m2 = init, m3 = init;
        const int8_t *row = win->first + ch;
        for (int32_t r = rows; r > 0; --r, row += row_step) {
            const int8_t *px = row;
            for (int32_t k = cols; k > 0; --k, px += c) {
                m0 = rip_max_s8x4(m0, rip_load4(px));
                m1 = rip_max_s8x4(m1, rip_load4(px + 4));
                m2 = rip_max_s8x4(m2, rip_load4(px + 8));
                m3 = rip_max_s8x4(m3, rip_load4(px + 12));
            }
        }
        memcpy(dst + ch, &m0, 4);
        memcpy(dst + ch + 4, &m1, 4);
        memcpy(dst + ch + 8, &m2, 4);
        memcpy(dst + ch + 12, &m3, 4);
    }
    for (; ch + 4 <= c; ch += 4) {
        uint32_t m = init;
        const int8_t *row = win->first + ch;
        for (int32_t r = rows; r > 0; --r, row += row_step) {
            const int8_t *px = row;
            for (int32_t k = cols; k > 0; --k, px += c) {
                m = rip_max_s8x4(m, rip_load4(px));
            }
        }
        memcpy(dst + ch, &m, 4);
    }
    return ch;
}

/* Channels [0, n) of dst (n a multiple of 4) clamped to the activation range. */
static void rip_clamp_groups(int8_t *dst, int32_t n, rip_activation act) {
    const uint32_t lo = (uint32_t)(uint8_t)act.min * 0x01010101u;
    const uint32_t hi = (uint32_t)(uint8_t)act.max * 0x01010101u;
    for (int32_t ch = 0; ch < n; ch += 4) {
        uint32_t m;
        memcpy(&m, dst + ch, 4);
        m = rip_min_s8x4(rip_max_s8x4(m, lo), hi);
        memcpy(dst + ch, &m, 4);
    }
}
#endif

/* Inlined into each entry point, so that `kind` is a constant in each copy. */
static inline __attribute__((always_inline)) rip_status
rip_pool(enum rip_pool_kind kind, const rip_context *ctx, const rip_pool_params *params,
         const rip_dims *input_dims, const int8_t *input, const rip_dims *filter_dims,
         const rip_dims *output_dims, int8_t *output) {
    const int32_t h = input_dims->h, w = input_dims->w, c = input_dims->c;
    const int32_t fh = filter_dims->h, fw = filter_dims->w;
    const int32_t h_out = output_dims->h, w_out = output_dims->w;
    const int32_t sh = params->stride.h, sw = params->stride.w;
    const rip_activation act = params->activation;
    int8_t *stage = (int8_t *)rip_acc_buffer(ctx, c);
    if (stage == NULL || c < 1 || output_dims->c != c || input_dims->n != output_dims->n ||
        fh < 1 || fw < 1 || sh < 1 || sw < 1 || act.min > act.max || act.min < -128 ||
        act.max > 127) {
        return RIP_ERROR_ARGUMENT;
    }
    if (!params->pad_counts &&
        !(rip_windows_touch_input(params->padding.h, sh, fh, h, h_out) &&
          rip_windows_touch_input(params->padding.w, sw, fw, w, w_out))) {
        return RIP_ERROR_ARGUMENT;
    }
    const int clamp = act.min > INT8_MIN || act.max < INT8_MAX;
    const size_t in_bytes = (size_t)input_dims->n * h * w * c;
    const size_t out_bytes = (size_t)output_dims->n * h_out * w_out * c;
    /* The planner's gap assumes each output pixel is stored only after its whole window is
     * read. Storing channels as they are done keeps that result whenever input and output
     * are disjoint, or lie a multiple of C bytes apart: then the byte of channel k lands on
     * channel k of some cell, which this pixel has read already, and later pixels see the
     * same writes as before. Otherwise (a gap that is no multiple of C) the pixel is staged
     * in scratch and copied out after its window. */
    const uintptr_t in_at = (uintptr_t)input, out_at = (uintptr_t)output;
    const int overlap = out_at < in_at + in_bytes && in_at < out_at + out_bytes;
    const uintptr_t apart = in_at > out_at ? in_at - out_at : out_at - in_at;
    const int staged = overlap && apart % (uintptr_t)c != 0;
#if !defined(__ARM_FEATURE_IDIV)
    int32_t recip_count = 0;
    uint32_t recip = 0u;
#endif
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * h * w * c;
        int8_t *out = output + (size_t)b * h_out * w_out * c;
        for (int32_t oy = 0; oy < h_out; ++oy) {
            const int32_t iy0 = oy * sh - params->padding.h;
            const int32_t fy_lo = rip_max32(0, -iy0);
            const int32_t rows = rip_max32(rip_min32(fh, h - iy0) - fy_lo, 0);
            for (int32_t ox = 0; ox < w_out; ++ox) {
                const int32_t ix0 = ox * sw - params->padding.w;
                const int32_t fx_lo = rip_max32(0, -ix0);
                const int32_t cols = rip_max32(rip_min32(fw, w - ix0) - fx_lo, 0);
                rip_window win = {in + ((size_t)(iy0 + fy_lo) * w + (ix0 + fx_lo)) * c,
                                  rows, cols, w * c};
                if (cols == w) { /* whole rows: one run of cells */
                    win.cols = rows * cols;
                    win.rows = rows > 0;
                }
                /* A folded PAD: the window lies inside the padded tensor, whose border cells
                 * hold the zero point and count like real ones. */
                const int32_t padded = params->pad_counts ? fh * fw - rows * cols : 0;
                const int32_t count = rows * cols + padded;
                const int32_t init = kind == RIP_POOL_AVG ? padded * params->pad_value
                                     : padded > 0         ? params->pad_value
                                                          : INT8_MIN;
                int8_t *px_out = out + ((size_t)oy * w_out + ox) * c;
                int8_t *dst = staged ? stage : px_out;
                int32_t ch = 0;
#if defined(__ARM_FEATURE_DSP)
                if (kind == RIP_POOL_MAX) {
                    ch = rip_max_groups(&win, c, (uint32_t)(uint8_t)init * 0x01010101u, dst);
                    if (clamp) {
                        rip_clamp_groups(dst, ch, act);
                    }
                } else if (count <= 255) {
                    ch = rip_avg_groups(&win, c, (uint32_t)(uint16_t)init * 0x00010001u, count,
                                        clamp, act, dst);
                }
#endif
#if !defined(__ARM_FEATURE_IDIV)
                if (kind == RIP_POOL_AVG && count != recip_count) {
                    recip_count = count; /* one division a distinct window size */
                    recip = rip_recip(count);
                }
#endif
                for (; ch < c; ++ch) {
                    int32_t v = rip_window_reduce(kind, &win, c, ch, init);
                    if (kind == RIP_POOL_AVG) {
#if defined(__ARM_FEATURE_IDIV)
                        v = rip_round_div(v, count);
#else
                        v = rip_round_recip(v, count, recip);
#endif
                    }
                    dst[ch] = (int8_t)(clamp ? rip_clamp32(v, act.min, act.max) : v);
                }
                if (staged) {
                    memcpy(px_out, stage, (size_t)c);
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
