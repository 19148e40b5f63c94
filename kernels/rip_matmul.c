/*
 * rip kernels: int8 BATCH_MATMUL (see rip_matmul.h for the contract).
 *
 * One product is C(i, j) = sum_k (P(i, k) + p_offset) * (Q(k, j) + q_offset) over a left
 * operand P whose depth axis is contiguous (the left operand, or the right one with the
 * output walked transposed when only that one is contiguous in depth). The offsets fold:
 * only P's is added in the loops, to the widened lanes of P (SXTAB16, free beside SXTB16),
 * and q_offset * sum_k (P(i, k) + p_offset), one sum per row of P, starts the accumulators:
 *   sum_k (P + p_offset) (Q + q_offset) = sum_k (P + p_offset) Q + q_offset sum_k (P + p_offset),
 * the same integer as the reference's sum (every term an int8 lane product, no overflow
 * for any depth below 2^15). Three loops:
 *   - dots (Q also contiguous in depth: Q K^T, adj_y): 2 x 2 outputs a step, SMLAD on word
 *     pairs, 20 instructions per 16 MACs on the Cortex-M33;
 *   - rows (Q contiguous along j: scores V): 1 x 4 outputs walking the rows of Q, one word
 *     of four columns a row widened once and multiplied by the right half of P's pair
 *     (SMLAxy), 33 instructions per 16 MACs;
 *   - any other steps (adj_x without adj_y): the reference loop.
 * Neither scratch nor a transposed copy: memory plans are those of the reference kernel.
 * The requantisation is TFLite's (rip_fast_requantize), or the cheap one (SMMLAR) where
 * the depth and the multiplier prove it the same (mm_cheap_round).
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_matmul.h"
#include "rip_support.h"

#define MM_INLINE static inline __attribute__((always_inline))

/* One product in the kernel's terms: P (i, k) at i * p_row + k * p_depth, Q (k, j) at
 * k * q_depth + j * q_col, C (i, j) at i * out_row + j * out_col (element steps). */
typedef struct {
    int32_t rows, cols, depth;
    int32_t p_row, p_depth, q_depth, q_col, out_row, out_col;
    int32_t p_offset, q_offset;
} mm_view;

/* The output stage: TFLite's requantisation, or the cheap one with its rounding term. */
typedef struct {
    int32_t multiplier, shift, output_offset;
    int32_t round, right; /* rip_cheap_requantize's round and shift */
} mm_requant;

/* rip_cheap_requantize's preconditions (rip_support.h), checked once a call: a right shift
 * e in [1, 22], |acc| <= depth * 255^2 < 2^30 (P + p_offset and Q + q_offset lie in
 * [-255, 255]), and |t| + |round| + 1 < 2^31 with |t| <= |acc| + 1 (m < 2^31). 1 and the
 * rounding term in *round where they hold, else 0. */
static int mm_cheap_round(const rip_batch_matmul_params *p, int32_t *round) {
    if (p->shift >= 0 || p->shift < -22 || p->multiplier < 0 || p->depth > 16000 ||
        p->output_offset < -255 || p->output_offset > 255) {
        return 0;
    }
    const int32_t e = -p->shift;
    const uint32_t acc_max = (uint32_t)p->depth * 65025u;
    const uint32_t off = (uint32_t)(p->output_offset < 0 ? -p->output_offset : p->output_offset);
    const uint32_t round_max = (1u << (e - 1)) + (off << e);
    if (acc_max >= (1u << 30) || acc_max + 2u + round_max >= (1u << 31)) {
        return 0;
    }
    *round = (int32_t)(1u << (e - 1)) + p->output_offset * (int32_t)(1u << e);
    return 1;
}

MM_INLINE int8_t mm_out(const mm_requant *r, const int cheap, int32_t acc) {
    if (cheap) {
        return (int8_t)rip_sat_s8(rip_cheap_requantize(acc, r->multiplier, r->round, r->right));
    }
    return (int8_t)rip_fast_requantize(acc, r->multiplier, r->shift, r->output_offset, -128,
                                       127);
}

/* q_offset * sum_k (P(i, k) + p_offset) of a row of P contiguous in depth: the
 * accumulators' start. */
MM_INLINE int32_t mm_row_start(const mm_view *v, const int8_t *a) {
    int32_t sum = v->depth * v->p_offset;
    int32_t k = 0;
#if defined(__ARM_FEATURE_DSP)
    /* USADA8 sums unsigned bytes: each byte + 128 (its top bit flipped), 128 a byte back. */
    uint32_t biased = 0;
    for (; k + 4 <= v->depth; k += 4) {
        biased = __usada8((uint32_t)rip_fast_load_s8x4(a + k) ^ 0x80808080u, 0u, biased);
    }
    sum += (int32_t)biased - 128 * k;
#endif
    for (; k < v->depth; ++k) {
        sum += a[k];
    }
    return v->q_offset * sum;
}

/* ---------------------------------------------------------------------------------------- */
/* dots: P and Q both contiguous in depth                                                   */
/* ---------------------------------------------------------------------------------------- */

/* sum_k (a[k] + p_offset) * b[k] over k in [k0, depth). */
MM_INLINE int32_t mm_dot_from(const int8_t *a, const int8_t *b, int32_t k0, int32_t depth,
                              int32_t p_offset) {
    int32_t acc = 0;
    for (int32_t k = k0; k < depth; ++k) {
        acc += ((int32_t)a[k] + p_offset) * b[k];
    }
    return acc;
}

#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
/* Two rows of P (a, a + s) against two columns of Q (b, b + s), the same step s (both
 * operands [n, depth]), `groups` words of depth: 20 instructions per 16 MACs (the loop runs
 * two groups a pass, its end read from the stack: every register else is taken). */
MM_INLINE void mm_dot_2x2(const int8_t *a, const int8_t *b, int32_t s, int32_t groups,
                          int32_t off2, int32_t acc[4]) {
    int32_t c00 = acc[0], c01 = acc[1], c10 = acc[2], c11 = acc[3];
    int32_t x02, x13, y02, y13, w, t;
#define MM_DOT_GROUP                                                                     \
    "ldr %[w], [%[b], %[s]]\n"                                                           \
    "sxtb16 %[y13], %[w], ror #8\n"                                                      \
    "sxtb16 %[y02], %[w]\n"                                                              \
    "ldr %[w], [%[b]], #4\n"                                                             \
    "sxtb16 %[t], %[w], ror #8\n"                                                        \
    "sxtb16 %[w], %[w]\n"                                                                \
    "ldr %[x02], [%[a], %[s]]\n"                                                         \
    "sxtab16 %[x13], %[off2], %[x02], ror #8\n"                                          \
    "sxtab16 %[x02], %[off2], %[x02]\n"                                                  \
    "smlad %[c10], %[x02], %[w], %[c10]\n"                                               \
    "smlad %[c10], %[x13], %[t], %[c10]\n"                                               \
    "smlad %[c11], %[x02], %[y02], %[c11]\n"                                             \
    "smlad %[c11], %[x13], %[y13], %[c11]\n"                                             \
    "ldr %[x02], [%[a]], #4\n"                                                           \
    "sxtab16 %[x13], %[off2], %[x02], ror #8\n"                                          \
    "sxtab16 %[x02], %[off2], %[x02]\n"                                                  \
    "smlad %[c00], %[x02], %[w], %[c00]\n"                                               \
    "smlad %[c00], %[x13], %[t], %[c00]\n"                                               \
    "smlad %[c01], %[x02], %[y02], %[c01]\n"                                             \
    "smlad %[c01], %[x13], %[y13], %[c01]\n"
#define MM_DOT_OPERANDS                                                                  \
    [c00] "+r"(c00), [c01] "+r"(c01), [c10] "+r"(c10), [c11] "+r"(c11), [a] "+r"(a),       \
        [b] "+r"(b), [x02] "=&r"(x02), [x13] "=&r"(x13), [y02] "=&r"(y02),                 \
        [y13] "=&r"(y13), [w] "=&r"(w), [t] "=&r"(t)
    if (groups & 1) {
        __asm__ volatile(MM_DOT_GROUP : MM_DOT_OPERANDS : [s] "r"(s), [off2] "r"(off2) : "memory");
    }
    if (groups >= 2) {
        const int8_t *const end = a + 4 * (groups & ~1);
        __asm__ volatile(RIP_ASM_LOOP_HEAD MM_DOT_GROUP MM_DOT_GROUP "ldr %[t], %[end]\n"
                         "cmp %[a], %[t]\n"
                         "bne 1b\n"
                         : MM_DOT_OPERANDS
                         : [s] "r"(s), [off2] "r"(off2), [end] "m"(end)
                         : "cc", "memory");
    }
#undef MM_DOT_GROUP
#undef MM_DOT_OPERANDS
    acc[0] = c00;
    acc[1] = c01;
    acc[2] = c10;
    acc[3] = c11;
}
#endif

/* One output of the dot form on any core: rip_dot-style, the tail scalar. */
MM_INLINE int32_t mm_dot(const int8_t *a, const int8_t *b, int32_t depth, int32_t p_offset) {
    int32_t acc = 0, k = 0;
#if defined(__ARM_FEATURE_DSP)
    const uint32_t lo = (uint32_t)p_offset & 0xFFFFu;
    const int32_t off2 = (int32_t)(lo | (lo << 16));
    for (; k + 4 <= depth; k += 4) {
        const int32_t av = rip_fast_load_s8x4(a + k), bv = rip_fast_load_s8x4(b + k);
        acc = __smlad(__sxtab16(off2, av), __sxtb16(bv), acc);
        acc = __smlad(__sxtab16(off2, (int32_t)rip_ror32((uint32_t)av, 8)),
                      rip_fast_sxtb16_ror8(bv), acc);
    }
#endif
    return acc + mm_dot_from(a, b, k, depth, p_offset);
}

/* Four outputs of a row of P against columns b0..b3 (any may repeat) on a core without the
 * DSP extension: each P value loaded and offset once for the four. */
MM_INLINE void mm_dot_1x4(const int8_t *a, const int8_t *b0, const int8_t *b1,
                          const int8_t *b2, const int8_t *b3, int32_t depth, int32_t p_offset,
                          int32_t acc[4]) {
    int32_t c0 = acc[0], c1 = acc[1], c2 = acc[2], c3 = acc[3];
    for (int32_t k = 0; k < depth; ++k) {
        const int32_t x = (int32_t)a[k] + p_offset;
        c0 += x * b0[k];
        c1 += x * b1[k];
        c2 += x * b2[k];
        c3 += x * b3[k];
    }
    acc[0] = c0;
    acc[1] = c1;
    acc[2] = c2;
    acc[3] = c3;
}

MM_INLINE void mm_dots(const mm_view *v, const mm_requant *r, const int cheap,
                       const int8_t *p, const int8_t *q, int8_t *out) {
    const int32_t depth = v->depth;
    int32_t i = 0;
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
    if (v->p_row == v->q_col) {
        const uint32_t lo = (uint32_t)v->p_offset & 0xFFFFu;
        const int32_t off2 = (int32_t)(lo | (lo << 16)), s = v->p_row;
        const int32_t groups = depth >> 2, k0 = groups << 2;
        for (; i + 2 <= v->rows; i += 2) {
            const int8_t *a0 = p + i * s, *a1 = a0 + s;
            const int32_t s0 = mm_row_start(v, a0), s1 = mm_row_start(v, a1);
            int8_t *o0 = out + i * v->out_row, *o1 = o0 + v->out_row;
            int32_t j = 0;
            for (; j + 2 <= v->cols; j += 2) {
                const int8_t *b0 = q + j * s, *b1 = b0 + s;
                int32_t acc[4] = {s0, s0, s1, s1};
                mm_dot_2x2(a0, b0, s, groups, off2, acc);
                if (k0 < depth) {
                    acc[0] += mm_dot_from(a0, b0, k0, depth, v->p_offset);
                    acc[1] += mm_dot_from(a0, b1, k0, depth, v->p_offset);
                    acc[2] += mm_dot_from(a1, b0, k0, depth, v->p_offset);
                    acc[3] += mm_dot_from(a1, b1, k0, depth, v->p_offset);
                }
                o0[j * v->out_col] = mm_out(r, cheap, acc[0]);
                o0[(j + 1) * v->out_col] = mm_out(r, cheap, acc[1]);
                o1[j * v->out_col] = mm_out(r, cheap, acc[2]);
                o1[(j + 1) * v->out_col] = mm_out(r, cheap, acc[3]);
            }
            if (j < v->cols) {
                const int8_t *b = q + j * s;
                o0[j * v->out_col] = mm_out(r, cheap, s0 + mm_dot(a0, b, depth, v->p_offset));
                o1[j * v->out_col] = mm_out(r, cheap, s1 + mm_dot(a1, b, depth, v->p_offset));
            }
        }
    }
    for (; i < v->rows; ++i) {
        const int8_t *a = p + i * v->p_row;
        const int32_t start = mm_row_start(v, a);
        int8_t *o = out + i * v->out_row;
        for (int32_t j = 0; j < v->cols; ++j) {
            o[j * v->out_col] =
                mm_out(r, cheap, start + mm_dot(a, q + j * v->q_col, depth, v->p_offset));
        }
    }
#else
    for (; i < v->rows; ++i) {
        const int8_t *a = p + i * v->p_row;
        const int32_t start = mm_row_start(v, a);
        int8_t *o = out + i * v->out_row;
        for (int32_t j = 0; j < v->cols; j += 4) {
            const int32_t n = v->cols - j < 4 ? v->cols - j : 4;
            const int8_t *b0 = q + j * v->q_col;
            const int8_t *b1 = n > 1 ? b0 + v->q_col : b0;
            const int8_t *b2 = n > 2 ? b1 + v->q_col : b1;
            const int8_t *b3 = n > 3 ? b2 + v->q_col : b2;
            int32_t acc[4] = {start, start, start, start};
            mm_dot_1x4(a, b0, b1, b2, b3, depth, v->p_offset, acc);
            for (int32_t c = 0; c < n; ++c) {
                o[(j + c) * v->out_col] = mm_out(r, cheap, acc[c]);
            }
        }
    }
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* rows: P contiguous in depth, Q along j (its rows walked)                                 */
/* ---------------------------------------------------------------------------------------- */

/* Four adjacent columns at q (row step ldq) against a row of P, depth rows from k0. */
MM_INLINE void mm_rows_1x4_from(const int8_t *a, const int8_t *q, int32_t ldq, int32_t k0,
                                int32_t depth, int32_t p_offset, int32_t acc[4]) {
    int32_t c0 = acc[0], c1 = acc[1], c2 = acc[2], c3 = acc[3];
    const int8_t *row = q + k0 * ldq;
    for (int32_t k = k0; k < depth; ++k, row += ldq) {
        const int32_t x = (int32_t)a[k] + p_offset;
        c0 += x * row[0];
        c1 += x * row[1];
        c2 += x * row[2];
        c3 += x * row[3];
    }
    acc[0] = c0;
    acc[1] = c1;
    acc[2] = c2;
    acc[3] = c3;
}

#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
/* The same over `groups` words of P's row: P's word widened to its pairs (k0, k2) and
 * (k1, k3) with the offset, each row of Q's four columns to (j0, j2) and (j1, j3), and
 * SMLAxy picks the halves: 33 instructions per 16 MACs. */
MM_INLINE void mm_rows_1x4(const int8_t *a, const int8_t *q, int32_t ldq, int32_t groups,
                           int32_t off2, int32_t acc[4]) {
    int32_t c0 = acc[0], c1 = acc[1], c2 = acc[2], c3 = acc[3];
    int32_t x02, x13, w, y;
#define MM_ROW(X, H, ADDR)                                                               \
    "ldr %[w], " ADDR "\n"                                                               \
    "sxtb16 %[y], %[w]\n"                                                                \
    "sxtb16 %[w], %[w], ror #8\n"                                                        \
    "smla" H "b %[c0], %[" X "], %[y], %[c0]\n"                                          \
    "smla" H "t %[c2], %[" X "], %[y], %[c2]\n"                                          \
    "smla" H "b %[c1], %[" X "], %[w], %[c1]\n"                                          \
    "smla" H "t %[c3], %[" X "], %[w], %[c3]\n"
#define MM_ROWS_GROUP                                                                    \
    "ldr %[x02], [%[a]], #4\n"                                                           \
    "sxtab16 %[x13], %[off2], %[x02], ror #8\n"                                          \
    "sxtab16 %[x02], %[off2], %[x02]\n"                                                  \
    MM_ROW("x02", "b", "[%[q]]")                                                         \
    MM_ROW("x13", "b", "[%[q], %[ldq]]")                                                 \
    "add %[q], %[q], %[ldq], lsl #1\n"                                                   \
    MM_ROW("x02", "t", "[%[q]]")                                                         \
    MM_ROW("x13", "t", "[%[q], %[ldq]]")                                                 \
    "add %[q], %[q], %[ldq], lsl #1\n"
#define MM_ROWS_OPERANDS                                                                 \
    [c0] "+r"(c0), [c1] "+r"(c1), [c2] "+r"(c2), [c3] "+r"(c3), [a] "+r"(a), [q] "+r"(q), \
        [x02] "=&r"(x02), [x13] "=&r"(x13), [w] "=&r"(w), [y] "=&r"(y)
    if (groups & 1) {
        __asm__ volatile(MM_ROWS_GROUP
                         : MM_ROWS_OPERANDS
                         : [ldq] "r"(ldq), [off2] "r"(off2)
                         : "memory");
    }
    if (groups >= 2) {
        const int8_t *const end = a + 4 * (groups & ~1);
        __asm__ volatile(RIP_ASM_LOOP_HEAD MM_ROWS_GROUP MM_ROWS_GROUP "cmp %[a], %[end]\n"
                         "bne 1b\n"
                         : MM_ROWS_OPERANDS
                         : [ldq] "r"(ldq), [off2] "r"(off2), [end] "r"(end)
                         : "cc", "memory");
    }
#undef MM_ROW
#undef MM_ROWS_GROUP
#undef MM_ROWS_OPERANDS
    acc[0] = c0;
    acc[1] = c1;
    acc[2] = c2;
    acc[3] = c3;
}
#endif

MM_INLINE void mm_rows(const mm_view *v, const mm_requant *r, const int cheap,
                       const int8_t *p, const int8_t *q, int8_t *out) {
    const int32_t depth = v->depth, ldq = v->q_depth;
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
    const uint32_t lo = (uint32_t)v->p_offset & 0xFFFFu;
    const int32_t off2 = (int32_t)(lo | (lo << 16));
    const int32_t groups = depth >> 2, k0 = groups << 2;
#else
    const int32_t k0 = 0;
#endif
    for (int32_t i = 0; i < v->rows; ++i) {
        const int8_t *a = p + i * v->p_row;
        const int32_t start = mm_row_start(v, a);
        int8_t *o = out + i * v->out_row;
        int32_t j = 0;
        for (; j + 4 <= v->cols; j += 4) {
            int32_t acc[4] = {start, start, start, start};
#if defined(__ARM_FEATURE_DSP) && RIP_HAND_ASM
            mm_rows_1x4(a, q + j, ldq, groups, off2, acc);
#endif
            mm_rows_1x4_from(a, q + j, ldq, k0, depth, v->p_offset, acc);
            o[j * v->out_col] = mm_out(r, cheap, acc[0]);
            o[(j + 1) * v->out_col] = mm_out(r, cheap, acc[1]);
            o[(j + 2) * v->out_col] = mm_out(r, cheap, acc[2]);
            o[(j + 3) * v->out_col] = mm_out(r, cheap, acc[3]);
        }
        for (; j < v->cols; ++j) { /* the last cols % 4 columns */
            int32_t acc = start;
            const int8_t *col = q + j;
            for (int32_t k = 0; k < depth; ++k, col += ldq) {
                acc += ((int32_t)a[k] + v->p_offset) * col[0];
            }
            o[j * v->out_col] = mm_out(r, cheap, acc);
        }
    }
}

/* ---------------------------------------------------------------------------------------- */
/* any steps                                                                                */
/* ---------------------------------------------------------------------------------------- */

MM_INLINE void mm_generic(const mm_view *v, const mm_requant *r, const int cheap,
                          const int8_t *p, const int8_t *q, int8_t *out) {
    for (int32_t i = 0; i < v->rows; ++i) {
        const int8_t *row = p + i * v->p_row;
        for (int32_t j = 0; j < v->cols; ++j) {
            const int8_t *col = q + j * v->q_col;
            int32_t acc = 0;
            for (int32_t k = 0; k < v->depth; ++k) {
                acc += ((int32_t)row[k * v->p_depth] + v->p_offset) *
                       ((int32_t)col[k * v->q_depth] + v->q_offset);
            }
            out[i * v->out_row + j * v->out_col] = mm_out(r, cheap, acc);
        }
    }
}

MM_INLINE void mm_product(const mm_view *v, const mm_requant *r, const int cheap,
                          const int8_t *p, const int8_t *q, int8_t *out) {
    if (v->p_depth == 1 && v->q_depth == 1) {
        mm_dots(v, r, cheap, p, q, out);
    } else if (v->p_depth == 1 && v->q_col == 1) {
        mm_rows(v, r, cheap, p, q, out);
    } else {
        mm_generic(v, r, cheap, p, q, out);
    }
}

/* Every batch index of the output; `swap`: P is the right operand (the output transposed). */
MM_INLINE void mm_batches(const rip_batch_matmul_params *p, const mm_view *v,
                          const mm_requant *r, const int cheap, const int swap,
                          const int8_t *lhs, const int8_t *rhs, int8_t *output) {
    const int32_t matrix = p->rows * p->cols;
    for (int32_t b0 = 0; b0 < p->batch[0]; ++b0) {
        for (int32_t b1 = 0; b1 < p->batch[1]; ++b1) {
            for (int32_t b2 = 0; b2 < p->batch[2]; ++b2) {
                const int8_t *a = lhs + b0 * p->lhs_batch_stride[0] +
                                  b1 * p->lhs_batch_stride[1] + b2 * p->lhs_batch_stride[2];
                const int8_t *b = rhs + b0 * p->rhs_batch_stride[0] +
                                  b1 * p->rhs_batch_stride[1] + b2 * p->rhs_batch_stride[2];
                mm_product(v, r, cheap, swap ? b : a, swap ? a : b, output);
                output += matrix;
            }
        }
    }
}

rip_status rip_batch_matmul_s8(const rip_batch_matmul_params *params, const int8_t *lhs,
                               const int8_t *rhs, int8_t *output) {
    const rip_batch_matmul_params *p = params;
    if (p->rows <= 0 || p->cols <= 0 || p->depth <= 0) {
        return RIP_ERROR_ARGUMENT;
    }
    /* P is the operand contiguous in depth, the left one where both or neither are. */
    const int swap = p->lhs_depth_step != 1 && p->rhs_depth_step == 1;
    mm_view v;
    v.depth = p->depth;
    if (swap) {
        v.rows = p->cols;
        v.cols = p->rows;
        v.p_row = p->rhs_col_step;
        v.p_depth = p->rhs_depth_step;
        v.q_depth = p->lhs_depth_step;
        v.q_col = p->lhs_row_step;
        v.out_row = 1;
        v.out_col = p->cols;
        v.p_offset = p->rhs_offset;
        v.q_offset = p->lhs_offset;
    } else {
        v.rows = p->rows;
        v.cols = p->cols;
        v.p_row = p->lhs_row_step;
        v.p_depth = p->lhs_depth_step;
        v.q_depth = p->rhs_depth_step;
        v.q_col = p->rhs_col_step;
        v.out_row = p->cols;
        v.out_col = 1;
        v.p_offset = p->lhs_offset;
        v.q_offset = p->rhs_offset;
    }
    mm_requant r = {p->multiplier, p->shift, p->output_offset, 0, -p->shift};
    if (mm_cheap_round(p, &r.round)) {
        mm_batches(p, &v, &r, 1, swap, lhs, rhs, output);
    } else {
        mm_batches(p, &v, &r, 0, swap, lhs, rhs, output);
    }
    return RIP_OK;
}
