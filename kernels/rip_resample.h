/*
 * rip kernels: int8 resampling (RESIZE_BILINEAR, and TRANSPOSE_CONV, a learned upsampling).
 *
 * The arithmetic is TFLite Micro's reference ResizeBilinearInteger (reference/resize_bilinear.h,
 * without TFLITE_SINGLE_ROUNDING): source coordinates in 1/1024 steps, the four neighbours
 * weighted in 64-bit and rounded half away from zero by a division by 2^20. Parameters come from
 * rip.codegen.resample_params. No scratch; `output` must be disjoint from `input` (every output
 * row reads two input rows, so no traversal order protects an overlapped input).
 */
#ifndef RIP_RESAMPLE_H
#define RIP_RESAMPLE_H

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* scale_h_10, scale_w_10: input size per output step in units of 1/1024, as the reference
 * rounds them (align_corners uses the sizes minus one). */
typedef struct {
    int32_t half_pixel_centers;
    int32_t scale_h_10;
    int32_t scale_w_10;
} rip_resize_bilinear_params;

rip_status rip_resize_bilinear_s8(const rip_resize_bilinear_params *params,
                                  const rip_dims *input_dims, const int8_t *input,
                                  const rip_dims *output_dims, int8_t *output);

/* TRANSPOSE_CONV, as TFLite Micro's reference_integer_ops::TransposeConv defines it: every
 * input pixel (iy, ix) adds (input + input_offset) * filter[oc][ky][kx][ic] to output pixel
 * (iy * stride.h - padding.h + ky, ix * stride.w - padding.w + kx); then bias, per-channel
 * requantization, output offset and clamp. This kernel gathers instead of scattering: each
 * output sums the taps that reach it (the same int32 sum in another order), so it needs no
 * int32 scratch of the output's size. `output` must be disjoint from `input`. */
typedef struct {
    int32_t input_offset;  /* -input zero point */
    int32_t output_offset; /* output zero point */
    rip_hw stride;
    rip_hw padding; /* top, left */
    rip_activation activation;
} rip_transpose_conv_params;

/* filter_dims: [C_out, KH, KW, C_in]; bias may be NULL. */
rip_status rip_transpose_conv_s8(const rip_transpose_conv_params *params,
                                 const rip_per_channel_quant *quant, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const int32_t *bias,
                                 const rip_dims *output_dims, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_RESAMPLE_H */
