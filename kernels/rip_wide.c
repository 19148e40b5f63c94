/* rip kernels: the 16x8 kernels (see rip_wide.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_wide.h"

#include <stddef.h>
#include <string.h>

#include "rip_support.h"

#define WIDE_INLINE static inline __attribute__((always_inline))
#define WIDE_NOINLINE static __attribute__((noinline))

/* Output channels a panel (and depthwise channels a pass); products an int32 sum takes:
 * |x w| <= 2^15 * 2^7, so 511 of them (and no more) sum to below 2^31 whatever the values,
 * 127 blocks of four and a tail of three at most. */
enum { PANEL = 4, MAX_TERMS = 511, CHUNK_BLOCKS = 127 };

/* Byte j of a block word holds input j's weight at BLOCK_BYTE(j): v0 v2 v1 v3. */
#define BLOCK_BYTE(j) ((((j) & 1) << 1) | ((j) >> 1))

/* ---------------------------------------------------------------------------------------- */
/* TFLite Micro's scaling                                                                   */
/* ---------------------------------------------------------------------------------------- */

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

/* How a kernel's sums become its int16 outputs, TFLite Micro's reference epilogue: the sum
 * in int64 with the 64-bit MultiplyByQuantizedMultiplier (wide), or in int32 with the
 * double-rounding one (the int32 sum is the int64 one's low 32 bits: the reference's int32
 * additions wrap alike); the output offset (wrapping) and the clamp. */
typedef struct {
    const void *bias;
    const int32_t *multiplier, *shift;
    int32_t bias_bytes, wide, per_channel, output_offset, lo, hi;
} wide_out;

/* Output o of the sum acc. */
static int32_t wide_out_one(const wide_out *e, int64_t acc, int32_t o) {
    const int32_t q = e->per_channel ? o : 0;
    const int64_t bias = bias_at(e->bias, e->bias_bytes, o);
    int32_t v;
    if (e->wide) {
        v = rip_multiply_by_quantized_multiplier64(acc + bias, e->multiplier[q], e->shift[q]);
    } else {
        const int32_t low = rip_wrap_add32((int32_t)(uint32_t)(uint64_t)acc, (int32_t)bias);
        v = rip_multiply_by_quantized_multiplier(low, e->multiplier[q], e->shift[q]);
    }
    return rip_clamp32(rip_wrap_add32(v, e->output_offset), e->lo, e->hi);
}

/* The epilogue of up to PANEL channels o .. o + g - 1 with int32 sums, made ready once for
 * every pixel they run over (mode WIDE_FOLDED or WIDE_INT32 for all of them, else
 * WIDE_ANY: wide_out_one each).
 *
 * WIDE_FOLDED: the sum is wide and the total shift s = 15 - shift is 16 to 46 (shift -31
 * to -1): the bias, the multiplier and the rounding fold into one multiply-accumulate,
 * r = add + acc * mult, the output (r >> 32) >> post. With m the reduced multiplier, the
 * reference's ((acc + bias) * m + 2^(s - 1)) >> s takes, for s <= 32, mult = m << (32 - s)
 * (below 2^31 as s >= 16), add = bias * mult + 2^31 and post 0: r's high word is bits s to
 * s + 31 of the reference's sum, which arithmetic modulo 2^64 keeps (s + 31 <= 63); for
 * s > 32, mult = m, add = bias * m + 2^(s - 1) and post = s - 32.
 *
 * WIDE_INT32: an int32 sum, add the bias, mult and post the multiplier and shift of
 * rip_fast_requantize, TFLite's MultiplyByQuantizedMultiplier for any multiplier but
 * INT32_MIN (which QuantizeMultiplier never gives). */
enum { WIDE_ANY, WIDE_FOLDED, WIDE_INT32 };

typedef struct {
    int64_t add[PANEL];
    int32_t mult[PANEL];
    int32_t post[PANEL];
    int32_t mode;
} wide_consts;

static void wide_consts_init(const wide_out *e, int32_t o, int32_t g, wide_consts *k) {
    k->mode = e->wide ? WIDE_FOLDED : WIDE_INT32;
    for (int32_t c = 0; c < g; ++c) {
        const int32_t q = e->per_channel ? o + c : 0;
        const int32_t m = e->multiplier[q], s = 15 - e->shift[q];
        const int64_t bias = bias_at(e->bias, e->bias_bytes, o + c);
        if (!e->wide) {
            k->add[c] = bias;
            k->mult[c] = m;
            k->post[c] = e->shift[q];
            if (m == INT32_MIN) {
                k->mode = WIDE_ANY;
            }
            continue;
        }
        if (s < 16 || s > 46 || m < 0) {
            k->mode = WIDE_ANY;
            return;
        }
        const int32_t up = s < 32 ? 32 - s : 0;
        const int32_t mult = rip_reduced_multiplier(m) << up;
        k->mult[c] = mult;
        k->post[c] = s - 32 + up;
        k->add[c] = (int64_t)((uint64_t)bias * (uint64_t)(int64_t)mult +
                              ((uint64_t)1 << (s + up - 1)));
    }
}

/* The high word of add + acc * mult (one SMLAL where there is one). */
WIDE_INLINE int32_t fold_high(int64_t add, int32_t acc, int32_t mult) {
#if defined(__ARM_FEATURE_DSP)
    uint32_t lo = (uint32_t)(uint64_t)add, hi = (uint32_t)((uint64_t)add >> 32);
    __asm__("smlal %0, %1, %2, %3" : "+r"(lo), "+r"(hi) : "r"(acc), "r"(mult));
    return (int32_t)hi;
#else
    return (int32_t)(uint32_t)((uint64_t)(add + (int64_t)acc * mult) >> 32);
#endif
}

/* Channel c's output of the int32 sum acc (channel o + c of the epilogue), mode `mode`. */
WIDE_INLINE int16_t wide_consts_out(const wide_out *e, const wide_consts *k, int32_t c,
                                    int32_t o, int32_t acc, const int32_t mode) {
    int32_t v;
    if (mode == WIDE_FOLDED) {
        v = fold_high(k->add[c], acc, k->mult[c]) >> k->post[c];
    } else if (mode == WIDE_INT32) {
        v = rip_fast_requantize(rip_wrap_add32(acc, (int32_t)k->add[c]), k->mult[c],
                                k->post[c], 0, INT32_MIN, INT32_MAX);
    } else {
        return (int16_t)wide_out_one(e, acc, o + c);
    }
    return (int16_t)rip_clamp32(rip_wrap_add32(v, e->output_offset), e->lo, e->hi);
}

/* The outputs of a panel's int32 sums a[0 .. g) at y[0 .. g). */
WIDE_INLINE void wide_consts_put(const wide_out *e, const wide_consts *k, int32_t o, int32_t g,
                                 const int32_t *a, int16_t *y) {
    if (g == PANEL && k->mode == WIDE_FOLDED) {
        for (int32_t c = 0; c < PANEL; ++c) {
            y[c] = wide_consts_out(e, k, c, o, a[c], WIDE_FOLDED);
        }
    } else if (g == PANEL && k->mode == WIDE_INT32) {
        for (int32_t c = 0; c < PANEL; ++c) {
            y[c] = wide_consts_out(e, k, c, o, a[c], WIDE_INT32);
        }
    } else {
        for (int32_t c = 0; c < g; ++c) {
            y[c] = wide_consts_out(e, k, c, o, a[c], WIDE_ANY);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* The packed panels' dot products                                                          */
/* ---------------------------------------------------------------------------------------- */

#if defined(__ARM_FEATURE_DSP)
/* Two int16, the first in the low half, in one word: one LDR, which may be unaligned on
 * the cores with DSP. */
WIDE_INLINE int32_t load_s16x2(const int16_t *p) {
    int32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* One channel's block: v its weight word, x01 and x23 the four inputs. */
WIDE_INLINE int32_t block_mac(int32_t x01, int32_t x23, int32_t v, int32_t acc) {
    return __smlad(x23, rip_fast_sxtb16_ror8(v), __smlad(x01, __sxtb16(v), acc));
}
#endif

/* A full panel (four channels, its words at w) against k = 4 * blocks + tail inputs x,
 * added to a[0..3] (int32: at most MAX_TERMS products). */
WIDE_INLINE void dot_panel4(const int16_t *x, const int8_t *w, int32_t blocks, int32_t tail,
                            int32_t *a) {
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
    /* 23 instructions per 16 products (two blocks a pass): two input words, four weight
     * words each widened into the pairs matching the inputs' halves, eight SMLADs */
#define WIDE_BLOCK                                                                      \
    "ldr %[x01], [%[x]], #4\n"                                                          \
    "ldr %[x23], [%[x]], #4\n"                                                          \
    "ldr %[v], [%[w]], #4\n"                                                            \
    "sxtb16 %[t], %[v]\n"                                                               \
    "smlad %[a0], %[x01], %[t], %[a0]\n"                                                \
    "sxtb16 %[t], %[v], ror #8\n"                                                       \
    "smlad %[a0], %[x23], %[t], %[a0]\n"                                                \
    "ldr %[v], [%[w]], #4\n"                                                            \
    "sxtb16 %[t], %[v]\n"                                                               \
    "smlad %[a1], %[x01], %[t], %[a1]\n"                                                \
    "sxtb16 %[t], %[v], ror #8\n"                                                       \
    "smlad %[a1], %[x23], %[t], %[a1]\n"                                                \
    "ldr %[v], [%[w]], #4\n"                                                            \
    "sxtb16 %[t], %[v]\n"                                                               \
    "smlad %[a2], %[x01], %[t], %[a2]\n"                                                \
    "sxtb16 %[t], %[v], ror #8\n"                                                       \
    "smlad %[a2], %[x23], %[t], %[a2]\n"                                                \
    "ldr %[v], [%[w]], #4\n"                                                            \
    "sxtb16 %[t], %[v]\n"                                                               \
    "smlad %[a3], %[x01], %[t], %[a3]\n"                                                \
    "sxtb16 %[t], %[v], ror #8\n"                                                       \
    "smlad %[a3], %[x23], %[t], %[a3]\n"
#define WIDE_OPERANDS                                                                   \
    [a0] "+r"(a0), [a1] "+r"(a1), [a2] "+r"(a2), [a3] "+r"(a3), [x] "+r"(x), [w] "+r"(w), \
        [x01] "=&r"(x01), [x23] "=&r"(x23), [v] "=&r"(v), [t] "=&r"(t)
    if (blocks > 0) {
        int32_t x01, x23, v, t;
        const int8_t *const end = w + 16 * (ptrdiff_t)blocks;
        RIP_ASM_GROUPS(blocks, WIDE_BLOCK, WIDE_OPERANDS, "w", end);
    }
#undef WIDE_BLOCK
#undef WIDE_OPERANDS
#elif defined(__ARM_FEATURE_DSP)
    for (int32_t b = 0; b < blocks; ++b, x += 4, w += 16) {
        const int32_t x01 = load_s16x2(x), x23 = load_s16x2(x + 2);
        a0 = block_mac(x01, x23, rip_fast_load_s8x4(w), a0);
        a1 = block_mac(x01, x23, rip_fast_load_s8x4(w + 4), a1);
        a2 = block_mac(x01, x23, rip_fast_load_s8x4(w + 8), a2);
        a3 = block_mac(x01, x23, rip_fast_load_s8x4(w + 12), a3);
    }
#else
    for (int32_t b = 0; b < blocks; ++b, x += 4, w += 16) {
        for (int32_t j = 0; j < 4; ++j) {
            const int32_t v = x[j];
            a0 += v * w[BLOCK_BYTE(j)];
            a1 += v * w[4 + BLOCK_BYTE(j)];
            a2 += v * w[8 + BLOCK_BYTE(j)];
            a3 += v * w[12 + BLOCK_BYTE(j)];
        }
    }
#endif
#if defined(__ARM_FEATURE_DSP)
    /* a tail input's four channel weights in one word: pairs 0, 2 and 1, 3 */
    for (int32_t t = 0; t < tail; ++t, w += 4) {
        const int32_t v = x[t], ws = rip_fast_load_s8x4(w);
        const int32_t w02 = __sxtb16(ws), w13 = rip_fast_sxtb16_ror8(ws);
        a0 = __smlabb(v, w02, a0);
        a1 = __smlabb(v, w13, a1);
        a2 = __smlabt(v, w02, a2);
        a3 = __smlabt(v, w13, a3);
    }
#else
    for (int32_t t = 0; t < tail; ++t, w += 4) {
        const int32_t v = x[t];
        a0 += v * w[0];
        a1 += v * w[1];
        a2 += v * w[2];
        a3 += v * w[3];
    }
#endif
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

/* A panel of g < 4 channels, channel by channel (the last panel of a group). */
WIDE_INLINE void dot_panel_narrow(const int16_t *x, const int8_t *w, int32_t blocks,
                                  int32_t tail, int32_t g, int32_t *a) {
    const int8_t *const w_tail = w + 4 * g * (ptrdiff_t)blocks;
    for (int32_t c = 0; c < g; ++c) {
        const int16_t *xc = x;
        const int8_t *wc = w + 4 * c;
        int32_t acc = a[c];
        for (int32_t b = 0; b < blocks; ++b, xc += 4, wc += 4 * g) {
#if defined(__ARM_FEATURE_DSP)
            acc = block_mac(load_s16x2(xc), load_s16x2(xc + 2), rip_fast_load_s8x4(wc), acc);
#else
            for (int32_t j = 0; j < 4; ++j) {
                acc += xc[j] * wc[BLOCK_BYTE(j)];
            }
#endif
        }
        for (int32_t t = 0; t < tail; ++t) {
            acc += xc[t] * w_tail[g * t + c];
        }
        a[c] = acc;
    }
}

/* A panel of g channels against k = 4 * blocks + tail inputs into the int64 sums s[0..g):
 * int32 sums of at most CHUNK_BLOCKS blocks, the tail with the last. */
WIDE_INLINE void dot_panel_long(const int16_t *x, const int8_t *w, int32_t blocks,
                                int32_t tail, int32_t g, int64_t *s) {
    do {
        const int32_t n = blocks < CHUNK_BLOCKS ? blocks : CHUNK_BLOCKS;
        int32_t a[PANEL] = {0, 0, 0, 0};
        blocks -= n;
        if (g == PANEL) {
            dot_panel4(x, w, n, blocks == 0 ? tail : 0, a);
        } else {
            dot_panel_narrow(x, w, n, blocks == 0 ? tail : 0, g, a);
        }
        for (int32_t c = 0; c < g; ++c) {
            s[c] += a[c];
        }
        x += 4 * n;
        w += 4 * g * (ptrdiff_t)n;
    } while (blocks > 0);
}

/* The weight of output channel o (of a group of per_group), tap t, input channel i in a
 * filter packed as rip_wide.h says (taps of k inputs). */
static int32_t packed_weight(const int8_t *w, int32_t k, int32_t taps, int32_t per_group,
                             int32_t o, int32_t t, int32_t i) {
    const int32_t local = o % per_group, first = o - local % PANEL;
    const int32_t g = rip_min32(PANEL, per_group - local + local % PANEL), c = local % PANEL;
    const int8_t *tap = w + ((ptrdiff_t)first * taps + (ptrdiff_t)t * g) * k;
    if (i < (k & ~3)) {
        return tap[4 * g * (i >> 2) + 4 * c + BLOCK_BYTE(i & 3)];
    }
    return tap[4 * g * (k >> 2) + g * (i & 3) + c];
}

/* ---------------------------------------------------------------------------------------- */
/* CONV_2D and DEPTHWISE_CONV_2D                                                            */
/* ---------------------------------------------------------------------------------------- */

/* Taps k in [0, size) with 0 <= origin + k * dilation < extent: [*lo, *hi), empty
 * (*lo == *hi) where none is inside; a division only for a dilation above 1. */
static inline void tap_range(int32_t origin, int32_t dilation, int32_t size, int32_t extent,
                             int32_t *lo, int32_t *hi) {
    int32_t a, b;
    if (dilation == 1) {
        a = origin < 0 ? -origin : 0;
        b = extent - origin;
    } else {
        a = origin < 0 ? (dilation - 1 - origin) / dilation : 0;
        b = extent - origin > 0 ? (extent - origin + dilation - 1) / dilation : 0;
    }
    b = rip_min32(b, size);
    *lo = a;
    *hi = b > a ? b : a;
}

/* A window's taps through one panel of g channels: rows x cols taps from x (rows `row`
 * apart, columns `col`) and w (rows `w_row` apart, taps g * fc bytes), int32 sums added to
 * a[0 .. g) (the whole window at most MAX_TERMS products). */
WIDE_INLINE void window_narrow(const int16_t *x, const int8_t *w, int32_t rows, int32_t cols,
                               ptrdiff_t row, ptrdiff_t col, ptrdiff_t w_row, int32_t fc,
                               int32_t g, int32_t *a) {
    const ptrdiff_t tap = (ptrdiff_t)g * fc;
    for (int32_t r = 0; r < rows; ++r, x += row, w += w_row) {
        const int16_t *xt = x;
        const int8_t *wt = w;
        for (int32_t k = 0; k < cols; ++k, xt += col, wt += tap) {
            if (g == PANEL) {
                dot_panel4(xt, wt, fc >> 2, fc & 3, a);
            } else {
                dot_panel_narrow(xt, wt, fc >> 2, fc & 3, g, a);
            }
        }
    }
}

/* The same for one input channel and a full panel (a stem): a tap is one input and one
 * word of four weights. */
WIDE_INLINE void window_narrow_c1(const int16_t *x, const int8_t *w, int32_t rows, int32_t cols,
                                  ptrdiff_t row, ptrdiff_t col, ptrdiff_t w_row, int32_t *a) {
    int32_t a0 = a[0], a1 = a[1], a2 = a[2], a3 = a[3];
    for (int32_t r = 0; r < rows; ++r, x += row, w += w_row) {
        const int16_t *xt = x;
        const int8_t *wt = w;
        for (int32_t k = 0; k < cols; ++k, xt += col, wt += PANEL) {
            const int32_t v = *xt;
#if defined(__ARM_FEATURE_DSP)
            const int32_t ws = rip_fast_load_s8x4(wt);
            const int32_t w02 = __sxtb16(ws), w13 = rip_fast_sxtb16_ror8(ws);
            a0 = __smlabb(v, w02, a0);
            a1 = __smlabb(v, w13, a1);
            a2 = __smlabt(v, w02, a2);
            a3 = __smlabt(v, w13, a3);
#else
            a0 += v * wt[0];
            a1 += v * wt[1];
            a2 += v * wt[2];
            a3 += v * wt[3];
#endif
        }
    }
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

/* The same into int64 sums s[0 .. g), a tap's products in int32 chunks. */
static void window_long(const int16_t *x, const int8_t *w, int32_t rows, int32_t cols,
                        ptrdiff_t row, ptrdiff_t col, ptrdiff_t w_row, int32_t fc, int32_t g,
                        int64_t *s) {
    const ptrdiff_t tap = (ptrdiff_t)g * fc;
    for (int32_t r = 0; r < rows; ++r, x += row, w += w_row) {
        const int16_t *xt = x;
        const int8_t *wt = w;
        for (int32_t k = 0; k < cols; ++k, xt += col, wt += tap) {
            dot_panel_long(xt, wt, fc >> 2, fc & 3, g, s);
        }
    }
}

/* One full panel (channels o .. o + 3, their filter at w, their inputs from channel
 * x_channel on) over every output pixel, int32 sums (the window at most MAX_TERMS
 * products), each pixel its window's taps inside the input (a padded tap contributes
 * nothing); c1: one input channel a tap (a stem). */
WIDE_INLINE void conv_panel4_run(const rip_conv_s16_params *p, const wide_out *e,
                                 const int16_t *x, const int8_t *w, int32_t x_channel,
                                 int32_t o, int16_t *y, const int c1) {
    const int32_t in_h = p->input.h, in_w = p->input.w, in_c = p->input.c;
    const int32_t kh = p->kh, kw = p->kw, fc = c1 ? 1 : p->filter_channels;
    const int32_t dh = p->dilation_h, dw = p->dilation_w, sw = p->stride_w, pw = p->pad_w;
    const int32_t out_w = p->output.w, out_c = p->output.c;
    const ptrdiff_t row = (ptrdiff_t)dh * in_w * in_c, col = (ptrdiff_t)dw * in_c;
    const ptrdiff_t tap = (ptrdiff_t)PANEL * fc, w_row = kw * tap;
    wide_consts k = {{0}, {0}, {0}, 0}; /* -Og cannot see wide_consts_init fill it */
    wide_consts_init(e, o, PANEL, &k);
    y += o;
    for (int32_t b = 0; b < p->output.n; ++b) {
        for (int32_t oy = 0; oy < p->output.h; ++oy) {
            const int32_t iy0 = oy * p->stride_h - p->pad_h;
            int32_t ky0, ky1;
            tap_range(iy0, dh, kh, in_h, &ky0, &ky1);
            /* the first row inside, its column 0 and channel x_channel */
            const ptrdiff_t x_row =
                (((ptrdiff_t)b * in_h + iy0 + ky0 * dh) * in_w) * in_c + x_channel;
            const int8_t *w_row0 = w + (ptrdiff_t)ky0 * w_row;
            for (int32_t ox = 0, ix0 = -pw; ox < out_w; ++ox, ix0 += sw, y += out_c) {
                int32_t kx0, kx1;
                tap_range(ix0, dw, kw, in_w, &kx0, &kx1);
                const int32_t cols = kx1 - kx0;
                const int32_t rows = cols > 0 ? ky1 - ky0 : 0;
                const int16_t *xr =
                    rows > 0 ? x + x_row + (ptrdiff_t)(ix0 + kx0 * dw) * in_c : x;
                const int8_t *wr = w_row0 + kx0 * tap;
                int32_t a[PANEL] = {0, 0, 0, 0};
                if (c1) {
                    window_narrow_c1(xr, wr, rows, cols, row, col, w_row, a);
                } else {
                    window_narrow(xr, wr, rows, cols, row, col, w_row, fc, PANEL, a);
                }
                wide_consts_put(e, &k, o, PANEL, a, y);
            }
        }
    }
}

WIDE_NOINLINE void conv_panel4(const rip_conv_s16_params *p, const wide_out *e,
                               const int16_t *x, const int8_t *w, int32_t x_channel, int32_t o,
                               int16_t *y) {
    if (p->filter_channels == 1) {
        conv_panel4_run(p, e, x, w, x_channel, o, y, 1);
    } else {
        conv_panel4_run(p, e, x, w, x_channel, o, y, 0);
    }
}

/* Any panel (g channels o .. o + g - 1) over every output pixel, int32 sums (narrow) or
 * int64 ones. */
WIDE_NOINLINE void conv_panel(const rip_conv_s16_params *p, const wide_out *e, const int16_t *x,
                              const int8_t *w, int32_t x_channel, int32_t o, int32_t g,
                              int narrow, int16_t *y) {
    const rip_dims *in = &p->input, *out = &p->output;
    const int32_t fc = p->filter_channels;
    const ptrdiff_t row = (ptrdiff_t)p->dilation_h * in->w * in->c;
    const ptrdiff_t col = (ptrdiff_t)p->dilation_w * in->c;
    const ptrdiff_t tap = (ptrdiff_t)g * fc, w_row = p->kw * tap;
    wide_consts k = {{0}, {0}, {0}, 0}; /* -Og cannot see wide_consts_init fill it */
    wide_consts_init(e, o, g, &k);
    y += o;
    for (int32_t b = 0; b < out->n; ++b) {
        for (int32_t oy = 0; oy < out->h; ++oy) {
            const int32_t iy0 = oy * p->stride_h - p->pad_h;
            int32_t ky0, ky1;
            tap_range(iy0, p->dilation_h, p->kh, in->h, &ky0, &ky1);
            for (int32_t ox = 0; ox < out->w; ++ox, y += out->c) {
                const int32_t ix0 = ox * p->stride_w - p->pad_w;
                int32_t kx0, kx1;
                tap_range(ix0, p->dilation_w, p->kw, in->w, &kx0, &kx1);
                const int32_t cols = kx1 - kx0;
                const int32_t rows = cols > 0 ? ky1 - ky0 : 0;
                const int16_t *xt =
                    rows > 0 ? x + (((ptrdiff_t)b * in->h + iy0 + ky0 * p->dilation_h) * in->w +
                                    ix0 + kx0 * p->dilation_w) *
                                       in->c +
                                   x_channel
                             : x;
                const int8_t *wt = w + (ptrdiff_t)(ky0 * p->kw + kx0) * tap;
                if (narrow) {
                    int32_t a[PANEL] = {0, 0, 0, 0};
                    window_narrow(xt, wt, rows, cols, row, col, w_row, fc, g, a);
                    wide_consts_put(e, &k, o, g, a, y);
                } else {
                    int64_t s[PANEL] = {0, 0, 0, 0};
                    window_long(xt, wt, rows, cols, row, col, w_row, fc, g, s);
                    for (int32_t c = 0; c < g; ++c) {
                        y[c] = (int16_t)wide_out_one(e, s[c], o + c);
                    }
                }
            }
        }
    }
}

/* One panel over `rows` rows of k inputs (x, x + x_step, ...; FULLY_CONNECTED's batches, a
 * pointwise CONV_2D's pixels), the outputs at y, y + y_step, ... */
WIDE_NOINLINE void rows_panel(const wide_out *e, const int16_t *x, ptrdiff_t x_step, int32_t rows,
                       int32_t k, const int8_t *w, int32_t o, int32_t g, int16_t *y,
                       ptrdiff_t y_step) {
    const int32_t blocks = k >> 2, tail = k & 3;
    wide_consts kc;
    wide_consts_init(e, o, g, &kc);
    if (g == PANEL && k <= MAX_TERMS) {
        for (int32_t r = 0; r < rows; ++r, x += x_step, y += y_step) {
            int32_t a[PANEL] = {0, 0, 0, 0};
            dot_panel4(x, w, blocks, tail, a);
            wide_consts_put(e, &kc, o, PANEL, a, y);
        }
        return;
    }
    for (int32_t r = 0; r < rows; ++r, x += x_step, y += y_step) {
        if (k <= MAX_TERMS) {
            int32_t a[PANEL] = {0, 0, 0, 0};
            dot_panel_narrow(x, w, blocks, tail, g, a);
            wide_consts_put(e, &kc, o, g, a, y);
        } else {
            int64_t s[PANEL] = {0, 0, 0, 0};
            dot_panel_long(x, w, blocks, tail, g, s);
            for (int32_t c = 0; c < g; ++c) {
                y[c] = (int16_t)wide_out_one(e, s[c], o + c);
            }
        }
    }
}

/* CONV_2D (any groups) over the packed filter, int16 tensors at even addresses: panel by
 * panel, each over every pixel (a pointwise one's pixels as rows). */
static void conv_packed(const rip_conv_s16_params *p, const wide_out *e, const int16_t *x,
                        const int8_t *filter, int16_t *y) {
    const rip_dims *in = &p->input, *out = &p->output;
    const int32_t fc = p->filter_channels, groups = in->c / fc;
    const int32_t per_group = out->c / groups, taps = p->kh * p->kw;
    const int narrow = (int64_t)taps * fc <= MAX_TERMS;
    const int pointwise = taps == 1 && p->stride_h == 1 && p->stride_w == 1 && p->pad_h == 0 &&
                          p->pad_w == 0 && in->h == out->h && in->w == out->w;
    for (int32_t gi = 0; gi < groups; ++gi) {
        const int32_t o0 = gi * per_group;
        for (int32_t oc = 0; oc < per_group; oc += PANEL) {
            const int8_t *w = filter + ((ptrdiff_t)o0 + oc) * taps * fc;
            const int32_t g = rip_min32(PANEL, per_group - oc);
            if (pointwise) {
                rows_panel(e, x + (ptrdiff_t)gi * fc, in->c, out->n * out->h * out->w, fc, w,
                           o0 + oc, g, y + o0 + oc, out->c);
            } else if (g == PANEL && narrow) {
                conv_panel4(p, e, x, w, gi * fc, o0 + oc, y);
            } else {
                conv_panel(p, e, x, w, gi * fc, o0 + oc, g, narrow, y);
            }
        }
    }
}

/* Four depthwise channels' window: rows x cols taps from x (rows `row` apart, columns
 * `col`) and w (rows `w_row` apart, columns `w_col`), int32 sums into a[0 .. 4). */
WIDE_INLINE void dw_window4(const int16_t *x, const int8_t *w, int32_t rows, int32_t cols,
                            ptrdiff_t row, ptrdiff_t col, ptrdiff_t w_row, ptrdiff_t w_col,
                            int32_t *a) {
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int32_t r = 0; r < rows; ++r, x += row, w += w_row) {
        const int16_t *xt = x;
        const int8_t *wt = w;
        for (int32_t k = 0; k < cols; ++k, xt += col, wt += w_col) {
#if defined(__ARM_FEATURE_DSP)
            /* 9 instructions per 4 products: the halfword multiplies pick each channel's
             * input and weight halves */
            const int32_t x01 = load_s16x2(xt), x23 = load_s16x2(xt + 2);
            const int32_t ws = rip_fast_load_s8x4(wt);
            const int32_t w02 = __sxtb16(ws), w13 = rip_fast_sxtb16_ror8(ws);
            a0 = __smlabb(x01, w02, a0);
            a1 = __smlatb(x01, w13, a1);
            a2 = __smlabt(x23, w02, a2);
            a3 = __smlatt(x23, w13, a3);
#else
            a0 += xt[0] * wt[0];
            a1 += xt[1] * wt[1];
            a2 += xt[2] * wt[2];
            a3 += xt[3] * wt[3];
#endif
        }
    }
    a[0] = a0;
    a[1] = a1;
    a[2] = a2;
    a[3] = a3;
}

/* DEPTHWISE_CONV_2D of multiplier 1 with at most MAX_TERMS taps, int16 tensors at even
 * addresses: four channels at a time over every pixel (a tap's four weights one word),
 * the last one to three likewise one by one. */
WIDE_NOINLINE void depthwise_m1(const rip_conv_s16_params *p, const wide_out *e, const int16_t *x,
                         const int8_t *filter, int16_t *y) {
    const rip_dims *in = &p->input, *out = &p->output;
    const int32_t ch = in->c;
    const ptrdiff_t row = (ptrdiff_t)p->dilation_h * in->w * ch;
    const ptrdiff_t col = (ptrdiff_t)p->dilation_w * ch;
    const ptrdiff_t w_row = (ptrdiff_t)p->kw * ch;
    for (int32_t c = 0; c < ch; c += PANEL) {
        const int32_t g = rip_min32(PANEL, ch - c);
        wide_consts k = {{0}, {0}, {0}, 0}; /* -Og cannot see wide_consts_init fill it */
        wide_consts_init(e, c, g, &k);
        int16_t *yp = y + c;
        for (int32_t b = 0; b < out->n; ++b) {
            for (int32_t oy = 0; oy < out->h; ++oy) {
                const int32_t iy0 = oy * p->stride_h - p->pad_h;
                int32_t ky0, ky1;
                tap_range(iy0, p->dilation_h, p->kh, in->h, &ky0, &ky1);
                const ptrdiff_t x_row =
                    (((ptrdiff_t)b * in->h + iy0 + ky0 * p->dilation_h) * in->w) * ch + c;
                for (int32_t ox = 0; ox < out->w; ++ox, yp += ch) {
                    const int32_t ix0 = ox * p->stride_w - p->pad_w;
                    int32_t kx0, kx1;
                    tap_range(ix0, p->dilation_w, p->kw, in->w, &kx0, &kx1);
                    int32_t rows = ky1 - ky0;
                    const int32_t cols = kx1 - kx0;
                    if (cols <= 0) {
                        rows = 0; /* no tap inside: the sums are 0 */
                    }
                    const int16_t *xt =
                        rows > 0 ? x + x_row + (ptrdiff_t)(ix0 + kx0 * p->dilation_w) * ch : x;
                    const int8_t *wt = filter + (ptrdiff_t)(ky0 * p->kw + kx0) * ch + c;
                    int32_t a[PANEL] = {0, 0, 0, 0};
                    if (g == PANEL) {
                        dw_window4(xt, wt, rows, cols, row, col, w_row, ch, a);
                    } else {
                        for (int32_t r = 0; r < rows; ++r, xt += row, wt += w_row) {
                            for (int32_t kx = 0; kx < cols; ++kx) {
                                for (int32_t j = 0; j < g; ++j) {
                                    a[j] += xt[kx * col + j] * wt[kx * ch + j];
                                }
                            }
                        }
                    }
                    wide_consts_put(e, &k, c, g, a, yp);
                }
            }
        }
    }
}

/* Any of them, any address: TFLite Micro's loops, a value at a time in int64. */
WIDE_NOINLINE void conv_reference(const rip_conv_s16_params *p, const wide_out *e, const int8_t *x,
                           const int8_t *filter, int8_t *y) {
    const rip_dims *in = &p->input, *out = &p->output;
    const int32_t m = p->depth_multiplier, fc = p->filter_channels;
    const int32_t taps_c = m > 0 ? 1 : fc;
    const int32_t per_group = m > 0 ? 0 : out->c / (in->c / fc);
    for (int32_t b = 0; b < out->n; ++b) {
        for (int32_t oy = 0; oy < out->h; ++oy) {
            for (int32_t ox = 0; ox < out->w; ++ox) {
                for (int32_t oc = 0; oc < out->c; ++oc) {
                    /* the first input channel this output reads */
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
                            const int32_t t = ky * p->kw + kx;
                            for (int32_t j = 0; j < taps_c; ++j) {
                                const int32_t v = rip_load_le(x + 2 * (at + j), 2);
                                const int32_t w =
                                    m > 0 ? filter[(ptrdiff_t)t * out->c + oc]
                                          : packed_weight(filter, fc, p->kh * p->kw, per_group,
                                                          oc, t, j);
                                acc += (int64_t)w * v;
                            }
                        }
                    }
                    const ptrdiff_t o = (((ptrdiff_t)b * out->h + oy) * out->w + ox) * out->c + oc;
                    rip_store_le(y + 2 * o, wide_out_one(e, acc, oc), 2);
                }
            }
        }
    }
}

rip_status rip_conv_s16(const rip_conv_s16_params *p, const void *input, const int8_t *filter,
                        const void *bias, void *output) {
    const rip_dims *in = &p->input, *out = &p->output;
    const int32_t m = p->depth_multiplier, bb = p->bias_bytes, fc = p->filter_channels;
    if (in->c < 1 || out->c < 1 || p->kh < 1 || p->kw < 1 || p->dilation_h < 1 ||
        p->dilation_w < 1 || (bb != 0 && bb != 4 && bb != 8) ||
        (bb != 0 && bias == NULL) || (m > 0 && out->c != in->c * m) ||
        (m == 0 && (fc < 1 || in->c % fc != 0 || out->c % (in->c / fc) != 0))) {
        return RIP_ERROR_ARGUMENT;
    }
    const wide_out e = {.bias = bias,
                        .multiplier = p->multiplier,
                        .shift = p->shift,
                        .bias_bytes = bb,
                        .wide = p->wide_sum != 0,
                        .per_channel = 1,
                        .output_offset = 0,
                        .lo = p->activation_min,
                        .hi = p->activation_max};
    const int even = (((uintptr_t)input | (uintptr_t)output) & 1u) == 0;
    if (even && m == 0) {
        conv_packed(p, &e, (const int16_t *)input, filter, (int16_t *)output);
    } else if (even && m == 1 && (int64_t)p->kh * p->kw <= MAX_TERMS) {
        depthwise_m1(p, &e, (const int16_t *)input, filter, (int16_t *)output);
    } else {
        conv_reference(p, &e, (const int8_t *)input, filter, (int8_t *)output);
    }
    return RIP_OK;
}

/* ---------------------------------------------------------------------------------------- */
/* FULLY_CONNECTED                                                                          */
/* ---------------------------------------------------------------------------------------- */

rip_status rip_fully_connected_s16(const rip_fully_connected_s16_params *p, const void *input,
                                   const int8_t *filter, const void *bias, void *output) {
    const int32_t n = p->input_depth, m = p->output_depth, bb = p->bias_bytes;
    if (p->batches < 1 || n < 1 || m < 1 || (bb != 0 && bb != 4 && bb != 8) ||
        (bb != 0 && bias == NULL)) {
        return RIP_ERROR_ARGUMENT;
    }
    const wide_out e = {.bias = bias,
                        .multiplier = p->multiplier,
                        .shift = p->shift,
                        .bias_bytes = bb,
                        .wide = p->wide_sum != 0,
                        .per_channel = p->per_channel != 0,
                        .output_offset = p->output_offset,
                        .lo = p->activation_min,
                        .hi = p->activation_max};
    if ((((uintptr_t)input | (uintptr_t)output) & 1u) == 0 && p->input_offset == 0) {
        for (int32_t o = 0; o < m; o += PANEL) {
            rows_panel(&e, (const int16_t *)input, n, p->batches, n, filter + (ptrdiff_t)o * n,
                       o, rip_min32(PANEL, m - o), (int16_t *)output + o, m);
        }
        return RIP_OK;
    }
    /* an odd address or an input offset: TFLite Micro's loop, a value at a time */
    const int8_t *x = (const int8_t *)input;
    int8_t *y = (int8_t *)output;
    for (int32_t b = 0; b < p->batches; ++b) {
        for (int32_t o = 0; o < m; ++o) {
            int64_t acc = 0;
            for (int32_t d = 0; d < n; ++d) {
                const int32_t v = rip_load_le(x + 2 * ((ptrdiff_t)b * n + d), 2);
                acc += (int64_t)packed_weight(filter, n, 1, m, o, 0, d) * (v + p->input_offset);
            }
            rip_store_le(y + 2 * ((ptrdiff_t)b * m + o), wide_out_one(&e, acc, o), 2);
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
