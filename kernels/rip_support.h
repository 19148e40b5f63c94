/*
 * rip kernels: the support library every kernel family shares (CMSIS-NN's
 * NNSupportFunctions): TFLite's reference fixed-point arithmetic, the fast kernels'
 * requantisation, and the SIMD lane helpers. Everything here is static inline: a helper
 * moved into a function of its own would change what the compiler inlines, and with it the
 * kernels' instruction counts. Not part of the generated code's API (rip_common.h is).
 *
 * The TFLite arithmetic reproduces tensorflow/lite/kernels/internal/common.h (without
 * TFLITE_SINGLE_ROUNDING) and gemmlowp's fixedpoint/fixedpoint.h bit for bit.
 */
#ifndef RIP_SUPPORT_H
#define RIP_SUPPORT_H

#include <stdint.h>
#include <string.h>

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The hand-scheduled inner loops (inline asm: the packed GEMM and GEMV, the ring copy)
 * claim most registers, r7 included, which GCC keeps as the frame pointer at -O0 and which
 * ARMv6-M code at -Os cannot spare: those builds (a Pico project's Debug or MinSizeRel)
 * take the C loops beside them, with the same arithmetic and the same memory order. */
#if defined(__GNUC__) && defined(__OPTIMIZE__) && \
    !(defined(__ARM_ARCH_6M__) && (defined(__OPTIMIZE_SIZE__) || defined(RIP_BUILT_FOR_SIZE)))
#define RIP_HAND_ASM 1
#else
#define RIP_HAND_ASM 0
#endif

/* The head of a hand-written loop (its label 1), word-aligned: on the M33 a branch back to
 * a 32-bit instruction that straddles two fetch words costs a cycle more every pass; the
 * padding NOP, where one is needed, runs once per entry. */
#define RIP_ASM_LOOP_HEAD ".p2align 2\n1:\n"

/* A hand-written GROUP (an asm string that moves the operand named PTR on) run n times:
 * once alone where n is odd, then two a pass in a RIP_ASM_LOOP_HEAD loop until PTR reaches
 * END. OPERANDS: the asm's output operands (a macro naming PTR's among them). */
#define RIP_ASM_GROUPS(n, GROUP, OPERANDS, PTR, END)                                           \
    do {                                                                                       \
        if ((n) & 1) {                                                                         \
            __asm__ volatile(GROUP : OPERANDS : : "cc", "memory");                             \
        }                                                                                      \
        if ((n) >= 2) {                                                                        \
            __asm__ volatile(RIP_ASM_LOOP_HEAD GROUP GROUP "cmp %[" PTR "], %[end]\n"          \
                             "bne 1b\n"                                                        \
                             : OPERANDS                                                        \
                             : [end] "r"(END)                                                  \
                             : "cc", "memory");                                                \
        }                                                                                      \
    } while (0)

static inline int32_t rip_min32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t rip_max32(int32_t a, int32_t b) { return a > b ? a : b; }
static inline int32_t rip_clamp32(int32_t x, int32_t lo, int32_t hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

/* Leading zero bits of x (32 for 0). */
static inline int rip_clz32(uint32_t x) {
#if defined(__GNUC__)
    return x ? __builtin_clz(x) : 32;
#else
    int n = 0;
    if (!x) {
        return 32;
    }
    while (!(x & 0x80000000u)) {
        x <<= 1;
        ++n;
    }
    return n;
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* TFLite's reference fixed point (int32)                                                   */
/* ---------------------------------------------------------------------------------------- */

/* gemmlowp's SaturatingRoundingDoublingHighMul. */
static inline int32_t rip_sat_rounding_doubling_high_mul(int32_t a, int32_t b) {
    if (a == b && a == INT32_MIN) {
        return INT32_MAX;
    }
    int64_t ab = (int64_t)a * (int64_t)b;
    int32_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp's RoundingDivideByPOT: round half away from zero. */
static inline int32_t rip_rounding_divide_by_pot(int32_t x, int exponent) {
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* The product of two fixed-point values (a raw int32 in Qm.(31-m)), gemmlowp's operator*:
 * SaturatingRoundingDoublingHighMul, whose result has the sum of their integer bits. */
static inline int32_t rip_fp_mul(int32_t a, int32_t b) {
    return rip_sat_rounding_doubling_high_mul(a, b);
}

/* gemmlowp's SaturatingRoundingMultiplyByPOT: x * 2^exponent, a saturating left shift or a
 * rounding right shift. */
static inline int32_t rip_fp_mul_pot(int32_t x, int exponent) {
    if (exponent > 0) {
        const int32_t threshold = (int32_t)((1u << (31 - exponent)) - 1u);
        if (x > threshold) {
            return INT32_MAX;
        }
        if (x < -threshold) {
            return INT32_MIN;
        }
        return (int32_t)((uint32_t)x << exponent);
    }
    if (exponent < 0) {
        return rip_rounding_divide_by_pot(x, -exponent);
    }
    return x;
}

/* gemmlowp's RoundingHalfSum: (a + b) / 2 rounded half away from zero, without overflow. */
static inline int32_t rip_rounding_half_sum(int32_t a, int32_t b) {
    const int64_t sum = (int64_t)a + (int64_t)b;
    return (int32_t)((sum + (sum >= 0 ? 1 : -1)) / 2);
}

/* Saturating and wrapping int32 sums (gemmlowp's SaturatingAdd and its raw + / -). */
static inline int32_t rip_sat_add32(int32_t a, int32_t b) {
    const int64_t s = (int64_t)a + (int64_t)b;
    return (int32_t)(s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : s));
}

static inline int32_t rip_sat_sub32(int32_t a, int32_t b) {
    const int64_t s = (int64_t)a - (int64_t)b;
    return (int32_t)(s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : s));
}

/* A signed little-endian value of `bytes` (1, 2 or 4) at p, any alignment (an int16 or
 * int32 tensor of the arena or a model input: ARMv6-M faults on an unaligned halfword). */
static inline int32_t rip_load_le(const int8_t *p, int32_t bytes) {
    const uint8_t *u = (const uint8_t *)p;
    if (bytes == 1) {
        return p[0];
    }
    if (bytes == 2) {
        return (int16_t)(uint16_t)(u[0] | ((uint32_t)u[1] << 8));
    }
    return (int32_t)(u[0] | ((uint32_t)u[1] << 8) | ((uint32_t)u[2] << 16) |
                     ((uint32_t)u[3] << 24));
}

/* Store the low `bytes` (1, 2 or 4) of v at p, little-endian, any alignment. */
static inline void rip_store_le(int8_t *p, int32_t v, int32_t bytes) {
    const uint32_t u = (uint32_t)v;
    for (int32_t k = 0; k < bytes; ++k) {
        p[k] = (int8_t)(uint8_t)(u >> (8 * k));
    }
}

static inline int32_t rip_wrap_add32(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

static inline int32_t rip_wrap_sub32(int32_t a, int32_t b) {
    return (int32_t)((uint32_t)a - (uint32_t)b);
}

/* TFLite's MultiplyByQuantizedMultiplier (double rounding). The left shift wraps in 32
 * bits exactly as the reference's int32 multiply does. */
static inline int32_t rip_multiply_by_quantized_multiplier(int32_t x, int32_t multiplier,
                                                           int32_t shift) {
    const int left_shift = shift > 0 ? shift : 0;
    const int right_shift = shift > 0 ? 0 : -shift;
    const int32_t shifted = (int32_t)((uint32_t)x << left_shift);
    return rip_rounding_divide_by_pot(rip_sat_rounding_doubling_high_mul(shifted, multiplier),
                                      right_shift);
}

/* TFLite's 16-bit reduced multiplier of MultiplyByQuantizedMultiplier(int64). */
static inline int32_t rip_reduced_multiplier(int32_t multiplier) {
    return multiplier < 0x7FFF0000 ? (multiplier + (1 << 15)) >> 16 : 0x7FFF;
}

/* TFLite's MultiplyByQuantizedMultiplier of an int64 (|x| < 2^47; the 16x8 kernels' sums):
 * the multiplier rounded to 16 bits, one rounding shift by 15 - shift; the result's low 32
 * bits. */
static inline int32_t rip_multiply_by_quantized_multiplier64(int64_t x, int32_t multiplier,
                                                             int32_t shift) {
    const int32_t total_shift = 15 - shift;
    const int64_t r =
        x * (int64_t)rip_reduced_multiplier(multiplier) + ((int64_t)1 << (total_shift - 1));
    return (int32_t)(uint32_t)(uint64_t)(r >> total_shift);
}

/* TFLite's MultiplyByQuantizedMultiplierSmallerThanOneExp (shift <= 0). */
static inline int32_t rip_multiply_by_quantized_multiplier_smaller_than_one(int32_t x,
                                                                            int32_t multiplier,
                                                                            int32_t shift) {
    return rip_rounding_divide_by_pot(rip_sat_rounding_doubling_high_mul(x, multiplier), -shift);
}

/* TFLite's MultiplyByQuantizedMultiplierGreaterThanOne (shift >= 0). */
static inline int32_t rip_multiply_by_quantized_multiplier_greater_than_one(int32_t x,
                                                                            int32_t multiplier,
                                                                            int32_t shift) {
    return rip_sat_rounding_doubling_high_mul((int32_t)((uint32_t)x << shift), multiplier);
}

/* ---------------------------------------------------------------------------------------- */
/* The same in int16 (TFLite's hard swish)                                                  */
/* ---------------------------------------------------------------------------------------- */

static inline int16_t rip_sat_rounding_doubling_high_mul16(int16_t a, int16_t b) {
    if (a == b && a == INT16_MIN) {
        return INT16_MAX;
    }
    const int32_t ab = (int32_t)a * (int32_t)b;
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));
    return (int16_t)((ab + nudge) / (1 << 15));
}

/* Truncating (not rounding) doubling high multiply, like SQDMULH: it cancels the bias of the
 * rounding one above, which is why TFLite uses it for the final product. */
static inline int16_t rip_sat_doubling_high_mul16(int16_t a, int16_t b) {
    if (a == b && a == INT16_MIN) {
        return INT16_MAX;
    }
    return (int16_t)(((int32_t)a * (int32_t)b) / (1 << 15));
}

/* gemmlowp's RoundingDivideByPOT evaluated in int16 arithmetic. */
static inline int16_t rip_rounding_divide_by_pot16(int16_t x, int exponent) {
    const int16_t mask = (int16_t)(((int64_t)1 << exponent) - 1);
    const int16_t remainder = (int16_t)(x & mask);
    const int16_t threshold = (int16_t)((mask >> 1) + (x < 0 ? 1 : 0));
    return (int16_t)((x >> exponent) + (remainder > threshold ? 1 : 0));
}

static inline int16_t rip_saturating_left_shift16(int16_t value, int amount) {
    const int64_t result = (int64_t)value * ((int64_t)1 << amount);
    return (int16_t)(result > INT16_MAX ? INT16_MAX : (result < INT16_MIN ? INT16_MIN : result));
}

/* ---------------------------------------------------------------------------------------- */
/* The fast kernels' requantisation                                                         */
/* ---------------------------------------------------------------------------------------- */

/* TFLite's MultiplyByQuantizedMultiplier + output offset + activation clamp. The high half
 * of (x * m + 2^30) >> 31 equals SaturatingRoundingDoublingHighMul(x, m) for m != INT32_MIN:
 * for x * m >= 0 both round half up; for x * m < 0 the reference truncates
 * (x * m + 1 - 2^30) / 2^31 towards zero, which is floor((x * m + 2^30) / 2^31). */
/* (a * b + 2^30) >> 31, the low 32 bits. ARMv6-M has no 32 x 32 -> 64 multiply (GCC would
 * call __aeabi_lmul): a * b + 2^30 = hh 2^32 + (lh + hl) 2^16 + ll + 2^30 from four 16 x 16
 * products; split lh and hl at bit 16, the whole multiples of 2^32 contribute twice their
 * count, and the rest (low halves of lh and hl, ll's high half and 2^14 for the rounding,
 * below 2^18) contributes its bits above 15, ll's low half never carrying. */
static inline int32_t rip_mul_round31(int32_t a, int32_t b) {
#if defined(__ARM_ARCH_6M__)
    const uint32_t al = (uint32_t)a & 0xFFFFu, bl = (uint32_t)b & 0xFFFFu;
    const int32_t ah = a >> 16, bh = b >> 16;
    const int32_t lh = ah * (int32_t)bl, hl = (int32_t)al * bh;
    const uint32_t mid = ((al * bl) >> 16) + ((uint32_t)lh & 0xFFFFu) +
                         ((uint32_t)hl & 0xFFFFu) + 0x4000u;
    const uint32_t high = (uint32_t)(ah * bh) + (uint32_t)(lh >> 16) + (uint32_t)(hl >> 16);
    return (int32_t)((high << 1) + (mid >> 15));
#else
    const int64_t product = (int64_t)a * b + ((int64_t)1 << 30);
    return (int32_t)(uint32_t)((uint64_t)product >> 31);
#endif
}

static inline int32_t rip_fast_requantize(int32_t acc, int32_t multiplier, int32_t shift,
                                          int32_t output_offset, int32_t act_min,
                                          int32_t act_max) {
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    const int32_t shifted = (int32_t)((uint32_t)acc << left);
    int32_t x = rip_mul_round31(shifted, multiplier);
    const int32_t mask = (int32_t)((1u << right) - 1u);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    x = (x >> right) + (remainder > threshold ? 1 : 0) + output_offset;
    return x < act_min ? act_min : (x > act_max ? act_max : x);
}

/* The cheap requantisation: the same value as rip_fast_requantize wherever the generator
 * has proven its preconditions for a layer (rip.codegen.requant.cheap_channels):
 *   shift < 0, so e = -shift >= 1 and there is no left shift;
 *   |acc| < 2^30, so 2 * acc fits in int32;
 *   round = 2^(e - 1) + output_offset * 2^e, and |t| + |round| + 1 < 2^31.
 * Then SaturatingRoundingDoublingHighMul(acc, m) = (acc * m + 2^30) >> 31
 * = (2 * acc * m + 2^31) >> 32 = SMMULR(2 * acc, m) = t, and RoundingDivideByPOT(t, e)
 * = (t + 2^(e - 1) - [t < 0]) >> e (with t = q * 2^e + r, the sum carries into q exactly
 * when r > (2^e - 1) / 2 - 1 + [t < 0], the reference's threshold). The output offset,
 * a multiple of 2^e in `round`, passes through the shift unchanged; SMMLAR adds `round`
 * to t in the multiply. */
static inline int32_t rip_smmulr(int32_t a, int32_t b) {
#if defined(__ARM_FEATURE_DSP)
    int32_t r;
    __asm__("smmulr %0, %1, %2" : "=r"(r) : "r"(a), "r"(b));
    return r;
#elif defined(__ARM_ARCH_6M__)
    /* No 32 x 32 -> 64 multiply (GCC would call __aeabi_lmul): four 16 x 16 products.
     * a * b + 2^31 = hh 2^32 + (lh + hl) 2^16 + ll + 2^31; each cross product fits in
     * int32 (|a >> 16| <= 2^15, low halves < 2^16), and their low halves, ll's high half
     * and the rounding 2^15 sum below 2^18, whose carry is the rest of the high word. */
    const uint32_t al = (uint32_t)a & 0xFFFFu, bl = (uint32_t)b & 0xFFFFu;
    const int32_t ah = a >> 16, bh = b >> 16;
    const int32_t lh = ah * (int32_t)bl, hl = (int32_t)al * bh;
    const uint32_t mid = ((al * bl) >> 16) + ((uint32_t)lh & 0xFFFFu) +
                         ((uint32_t)hl & 0xFFFFu) + 0x8000u;
    return ah * bh + (lh >> 16) + (hl >> 16) + (int32_t)(mid >> 16);
#else
    return (int32_t)(((int64_t)a * b + ((int64_t)1 << 31)) >> 32);
#endif
}

/* round + SMMULR(a, b) in one SMMLAR where there is one. */
static inline int32_t rip_smmlar(int32_t a, int32_t b, int32_t round) {
#if defined(__ARM_FEATURE_DSP)
    int32_t r;
    __asm__("smmlar %0, %1, %2, %3" : "=r"(r) : "r"(a), "r"(b), "r"(round));
    return r;
#else
    return round + rip_smmulr(a, b);
#endif
}

/* The sign correction reads acc's sign instead of t's: with m >= 0, t < 0 only if acc < 0,
 * and acc < 0 gives t <= 0; where they differ (t = 0, acc < 0), (round - 1) >> e and
 * round >> e are both output_offset, as 0 <= 2^(e - 1) - 1 < 2^(e - 1) < 2^e. */
static inline int32_t rip_cheap_requantize(int32_t acc, int32_t multiplier, int32_t round,
                                           int32_t shift) {
    const int32_t a2 = acc + acc;
    return (rip_smmlar(a2, multiplier, round) + (a2 >> 31)) >> shift;
}

/* rip_cheap_requantize in three 32-bit products, for ARMv6-M (no 32 x 32 -> 64 multiply:
 * rip_smmulr's four 16 x 16 products and their carries cost some 30 instructions, more than
 * a 3x3 depthwise pixel's nine MACs). With m = m2 2^22 + m1 2^11 + m0 (m0, m1 < 2^11,
 * m2 < 2^9) and |acc| < 2^20, every product and partial sum fits in int32, and
 *   S = acc m2 + ((acc m1 + ((acc m0) >> 11)) >> 11) = floor(acc m / 2^22)
 * (floor((a + floor(b / 2^s)) / 2^r) = floor((a 2^s + b) / 2^(r + s))), so
 *   t = floor((acc m + 2^30) / 2^31) = (S + 2^8) >> 9 and
 *   y = (t + round + sign) >> e = (S + 2^8 + 2^9 round + 2^9 sign) >> (e + 9):
 * one constant `rnd` = 2^8 + 2^9 round and one shift `sh` = e + 9 a channel. */
typedef struct {
    int32_t m0, m1, m2, rnd, sh;
} rip_rq3;

/* A channel's words for rip_rq3_requantize, or 0 where its arithmetic is not proven:
 * max_abs_acc (a bound on |acc|) < 2^20, m >= 0 (so t's sign is acc's), |round| < 2^20
 * (|S| < 2^29 and |rnd| < 2^29 + 2^8: the sum fits) and e + 9 < 32. */
static inline int rip_rq3_prepare(int32_t multiplier, int32_t round, int32_t shift,
                                  uint32_t max_abs_acc, rip_rq3 *r) {
    if (max_abs_acc >= (1u << 20) || multiplier < 0 || round <= -(1 << 20) ||
        round >= (1 << 20) || shift < 0 || shift > 22) {
        return 0;
    }
    r->m0 = multiplier & 0x7FF;
    r->m1 = (multiplier >> 11) & 0x7FF;
    r->m2 = multiplier >> 22;
    r->rnd = 256 + round * 512;
    r->sh = shift + 9;
    return 1;
}

/* rip_cheap_requantize(acc, ...) of the channel rip_rq3_prepare accepted. */
static inline int32_t rip_rq3_requantize(const rip_rq3 *r, int32_t acc) {
    const int32_t s = acc * r->m2 + ((acc * r->m1 + ((acc * r->m0) >> 11)) >> 11);
    return (s + r->rnd + (acc >> 31) * 512) >> r->sh;
}

/* Clamp to [-128, 127] (one SSAT where there is one). */
static inline int32_t rip_sat_s8(int32_t x) {
#if defined(__ARM_FEATURE_SAT)
    return __ssat(x, 8);
#else
    return x < -128 ? -128 : (x > 127 ? 127 : x);
#endif
}

/* ---------------------------------------------------------------------------------------- */
/* SIMD lanes                                                                               */
/* ---------------------------------------------------------------------------------------- */

/* Four int8 in one word, byte k = p[k] (the kernels run on little-endian cores). */
static inline int32_t rip_fast_load_s8x4(const int8_t *p) {
    int32_t v;
    memcpy(&v, p, 4); /* one LDR: unaligned word loads are legal on v8-M Mainline */
    return v;
}

/* A field's last n (1 to 3) int8 as rip_fast_load_s8x4 reads four, the missing bytes 0 (as
 * the packed filter's padding taps are), never reading past p + n. */
static inline int32_t rip_fast_load_s8_tail(const int8_t *p, int32_t n) {
    int8_t t[4] = {0, 0, 0, 0};
    memcpy(t, p, (size_t)n);
    return rip_fast_load_s8x4(t);
}

#if defined(__ARM_FEATURE_DSP)
/* SXTB16 with its rotate folded in (GCC 12 does not fold a separate ROR into it). */
static inline int32_t rip_fast_sxtb16_ror8(int32_t x) {
    int32_t r;
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

/* GCC 12's arm_acle.h has no __ror; this shape compiles to one ROR. */
static inline uint32_t rip_ror32(uint32_t x, uint32_t n) { return (x >> n) | (x << (32u - n)); }
#endif

#ifdef __cplusplus
}
#endif

#endif /* RIP_SUPPORT_H */
