/*
 * rip kernels: int8 data movement (RESIZE_NEAREST_NEIGHBOR, CONCATENATION, TRANSPOSE, PAD).
 *
 * Bytes are moved as TFLite Micro's reference kernels move them (reference/
 * resize_nearest_neighbor.h, concatenation.h, transpose.h, pad.h); only a concatenation input
 * with its own requantization does arithmetic, the same as a QUANTIZE op before it.
 * Parameters come from rip.codegen.elementwise_params. No kernel uses scratch.
 *
 * Only resize_nearest may run in place (below); the others need `output` disjoint from every
 * input.
 */
#ifndef RIP_SHAPE_H
#define RIP_SHAPE_H

#include "rip_activation.h"
#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* scale_h, scale_w: integer factors S when TFLite's float index map equals y / S at every
 * output index (the code generator checks this), so the kernel uses integer division; 0 means
 * the kernel evaluates TFLite's float32 map itself.
 *
 * reverse: traverse output pixels last to first. Required when `output` and `input` share a
 * base address (in-place upsampling, Theorem 14 of the paper, Sec. I.1). Exact whenever every
 * output pixel reads an input pixel at or below its own linear index (n, y, x): descending
 * order then never overwrites an input pixel a later (lower) output still needs. That holds
 * for every upsampling (H_out >= H_in, W_out >= W_in) except align_corners combined with
 * half_pixel_centers; rip.codegen.elementwise_params.resize_in_place_safe checks it. Forward
 * order with output == input corrupts as soon as S >= 2. */
typedef struct {
    int32_t align_corners;
    int32_t half_pixel_centers;
    int32_t scale_h;
    int32_t scale_w;
    int32_t reverse;
} rip_resize_nearest_params;

/* Concatenation of num_inputs tensors along one axis, flattened: outer_size is the product of
 * the dims before the axis, inner_size of the dims after it, and input k contributes
 * axis_sizes[k] * inner_size contiguous bytes to every one of the outer_size rows.
 * requantize[k] == NULL copies input k's bytes (TFLite Micro's only int8 case: it requires
 * equal quantization); otherwise input k is requantized as rip_quantize_s8 does. `requantize`
 * itself may be NULL (all copies). */
typedef struct {
    int32_t num_inputs;
    int32_t outer_size;
    int32_t inner_size;
    const int32_t *axis_sizes;
    const rip_requantize_params *const *requantize;
} rip_concat_params;

/* Output axis k is input axis perm[k], input axis j of extent dims[j]: up to five axes after
 * the generator merges the neighbours that stay neighbours (TFLite Micro's TRANSPOSE takes
 * at most 5-D), lower ranks extended with leading 1s. */
#define RIP_TRANSPOSE_MAX_RANK 5
typedef struct {
    int32_t perm[RIP_TRANSPOSE_MAX_RANK];
    int32_t dims[RIP_TRANSPOSE_MAX_RANK];
} rip_transpose_params;

/* Padding before and after each of the four axes (n, h, w, c), filled with pad_value (PAD:
 * the output zero point). */
typedef struct {
    rip_dims before;
    rip_dims after;
    int32_t pad_value;
} rip_pad_params;

rip_status rip_resize_nearest_s8(const rip_resize_nearest_params *params, const rip_dims *input_dims,
                          const int8_t *input, const rip_dims *output_dims, int8_t *output);

rip_status rip_concatenation_s8(const rip_concat_params *params, const int8_t *const *inputs,
                         int8_t *output);

/* output dims are input dims permuted. */
rip_status rip_transpose_s8(const rip_transpose_params *params, const int8_t *input,
                            int8_t *output);

/* output dims are input dims plus before and after. */
rip_status rip_pad_s8(const rip_pad_params *params, const rip_dims *input_dims, const int8_t *input,
               int8_t *output);

/* ---- slicing, block moves, gather, mirror pad ------------------------------------
 * Each moves bytes as TFLite Micro's reference kernel does (reference/strided_slice.h, slice.h,
 * split, unpack, depth_to_space.h, space_to_depth.h, gather.cc, mirror_pad.cc) and needs
 * `output` disjoint from `input`. PACK runs as rip_concatenation_s8 and PADV2 as rip_pad_s8. */

/* STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK (one call per output): output element
 * (i0, i1, i2, i3) of output_dims is input byte offset + i0 * step[0] + ... + i3 * step[3]
 * (steps in bytes of the input, negative for a reversed axis). */
typedef struct {
    int32_t offset;
    int32_t step[4];
} rip_slice_params;

/* DEPTH_TO_SPACE (up = 1: channels to b x b blocks of pixels) and SPACE_TO_DEPTH (up = 0),
 * TFLite's DCR order: output channel c of block cell (dy, dx) is input channel
 * (dy * b + dx) * c_out + c. */
typedef struct {
    int32_t block;
    int32_t up;
} rip_depth_space_params;

/* GATHER with constant coordinates: for every (batch, outer, k), inner contiguous bytes from
 * input row coords[batch * coord_size + k] of axis_size rows. */
typedef struct {
    int32_t batch_size;
    int32_t outer_size;
    int32_t axis_size;
    int32_t inner_size;
    int32_t coord_size;
    const int32_t *coords;
} rip_gather_params;

/* MIRROR_PAD of up to 4 axes (n, h, w, c): before and after per axis, mirrored about the edge
 * (REFLECT, symmetric = 0) or repeating it (SYMMETRIC, symmetric = 1). */
typedef struct {
    rip_dims before;
    rip_dims after;
    int32_t symmetric;
} rip_mirror_pad_params;

rip_status rip_slice_s8(const rip_slice_params *params, const int8_t *input,
                        const rip_dims *output_dims, int8_t *output);

/* output dims follow from input dims and the block. */
rip_status rip_depth_space_s8(const rip_depth_space_params *params, const rip_dims *input_dims,
                              const int8_t *input, int8_t *output);

rip_status rip_gather_s8(const rip_gather_params *params, const int8_t *input, int8_t *output);

rip_status rip_mirror_pad_s8(const rip_mirror_pad_params *params, const rip_dims *input_dims,
                             const int8_t *input, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_SHAPE_H */
