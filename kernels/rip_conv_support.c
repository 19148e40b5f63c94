/*
 * rip kernels: the receptive-field gather every gather-first kernel shares (the reference
 * and fast CONV_2D, the GEMV) and the tap ranges of the depthwise borders. See
 * rip_conv_support.h.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_conv_support.h"

/* Taps k in [0, k_size) with 0 <= origin + k * dilation < extent form one run [*lo, *hi):
 * counted, not divided (k_size is a kernel dimension). */
void rip_conv_tap_range(int32_t origin, int32_t dilation, int32_t k_size,
                               int32_t extent, int32_t *lo, int32_t *hi) {
    int32_t a = 0;
    while (a < k_size && origin + a * dilation < 0) {
        ++a;
    }
    int32_t b = a;
    while (b < k_size && origin + b * dilation < extent) {
        ++b;
    }
    *lo = a;
    *hi = b;
}

/* Copy one receptive-field row of n bytes. Short rows inline, a library memcpy of a few
 * bytes costing more than the copy: word by word where unaligned words load, else byte by
 * byte, the empty asm keeping GCC from turning the loop back into a memcpy call. */
static inline void rip_copy_row(int8_t *dst, const int8_t *src, size_t n) {
#if defined(__ARM_ARCH_6M__) || defined(__ARM_FEATURE_UNALIGNED)
    if (n <= 64) {
        size_t j = 0;
#if !defined(__ARM_ARCH_6M__)
        for (; j + 4 <= n; j += 4) {
            int32_t v;
            __asm__("ldr %0, [%1]" : "=r"(v) : "r"(src + j) : "memory");
            __asm__("str %0, [%1]" : : "r"(v), "r"(dst + j) : "memory");
        }
#endif
        for (; j < n; ++j) {
            dst[j] = src[j];
            __asm__("" : : : "memory");
        }
        return;
    }
#endif
    memcpy(dst, src, n);
}

/* Copy output pixel (oy, ox)'s receptive field into dst (KH * KW * C_in bytes), padded
 * taps filled with the input zero point. */
void rip_conv_gather_s8(const int8_t *in, const rip_dims *input_dims,
                        const rip_dims *filter_dims, const rip_conv_params *params, int32_t oy,
                        int32_t ox, int8_t *dst) {
    const int32_t h = input_dims->h, w = input_dims->w, c_in = input_dims->c;
    const int32_t kh = filter_dims->h, kw = filter_dims->w;
    const int32_t dh = params->dilation.h, dw = params->dilation.w;
    const int pad_byte = (int)(int8_t)(-params->input_offset);
    const int32_t iy0 = oy * params->stride.h - params->padding.h;
    const int32_t ix0 = ox * params->stride.w - params->padding.w;
    int32_t ky_lo, ky_hi, kx_lo, kx_hi;
    rip_conv_tap_range(iy0, dh, kh, h, &ky_lo, &ky_hi);
    rip_conv_tap_range(ix0, dw, kw, w, &kx_lo, &kx_hi);
    const size_t pixel_in = (size_t)c_in;
    const size_t row_bytes = (size_t)kw * pixel_in;
    for (int32_t ky = 0; ky < kh; ++ky) {
        if (ky < ky_lo || ky >= ky_hi) {
            memset(dst, pad_byte, row_bytes);
            dst += row_bytes;
            continue;
        }
        const int8_t *row = in + ((size_t)(iy0 + ky * dh) * w) * pixel_in;
        const size_t left = (size_t)kx_lo * pixel_in;
        const size_t right = (size_t)(kw - kx_hi) * pixel_in;
        if (left != 0) {
            memset(dst, pad_byte, left);
            dst += left;
        }
        if (dw == 1) {
            const size_t run = (size_t)(kx_hi - kx_lo) * pixel_in;
            rip_copy_row(dst, row + (size_t)(ix0 + kx_lo) * pixel_in, run);
            dst += run;
        } else {
            for (int32_t kx = kx_lo; kx < kx_hi; ++kx) {
                memcpy(dst, row + (size_t)(ix0 + kx * dw) * pixel_in, pixel_in);
                dst += pixel_in;
            }
        }
        if (right != 0) {
            memset(dst, pad_byte, right);
            dst += right;
        }
    }
}
