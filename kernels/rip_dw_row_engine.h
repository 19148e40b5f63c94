/*
 * rip kernels: the fast depthwise row engine (not part of the generated code's API; the
 * scheme is described in rip_depthwise_fast.h): one output row of a channel group from row
 * pointers (rip_dw_row), and every row of a group from a whole tensor (rip_dw_group). Every
 * fast depthwise kernel runs on it.
 */
#ifndef RIP_DW_ROW_ENGINE_H
#define RIP_DW_ROW_ENGINE_H

#include "rip_dw_geometry.h"

#define RIP_DW4_MAX_TAPS 49 /* staged kernels up to 7x7; larger ones take the generic path */
#define RIP_DW_ROWS_MAX_KH 16 /* the row engine's kernel rows (its callers' row arrays) */
#define RIP_DW_SEGMENT_WORDS 160 /* a border segment's words (at least RIP_DW4_MAX_TAPS) */
#define RIP_DW1_SEGMENT_BYTES 256 /* ARMv6-M's, one channel a byte (at least 49) */

/* ARMv6-M (no SIMD, eight low registers, no unaligned words) runs the same rows one channel
 * at a time (rip_dw_row_engine.c); every other core four channels a word. */
#if defined(__arm__) && !defined(__ARM_FEATURE_DSP)
#define RIP_DW_V6M 1
#else
#define RIP_DW_V6M 0
#endif

/* Channels [c0, c0 + n_ch) of output row oy into o (channel c0 + j of pixel ox at
 * o[ox * ostep + j]) from rows[ky], input row oy * sh - ph + ky * dh (NULL outside the
 * input), in the order rip_dw_row_engine.c states. One definition, in that file, which
 * every fast depthwise kernel calls: the engines' specialised runs are compiled once. */
void rip_dw_row(const rip_dw_plane *g, const int8_t *const *rows, const int8_t *filter,
                const rip_dw_rq *q, int32_t c0, int32_t n_ch, int8_t *o, ptrdiff_t ostep);

/* Channels [c0, c0 + n_ch) (whole groups of four from a group's first channel) of every
 * output row from `in` into `out` (pixel p, channel c at p * C + c) a group of four
 * channels at a time, rows in order within a group, where the column-pair engine takes the
 * layer that way (rip_dw_cols_engine.h); 1 if it did, 0 if the layer is not one it takes
 * (nothing written). In place (in == out) it takes a layer only where that order reads every
 * input byte before an output byte reaches it. ARMv6-M takes any channels a channel at a
 * time, output rows in bands from a window of their input rows (rip_dw_row_engine.c), in
 * place under the same rule for that order. */
int rip_dw_plane_cols(const rip_dw_plane *g, const int8_t *in, const int8_t *filter,
                      const rip_dw_rq *q, int8_t *out, int32_t c0, int32_t n_ch);

/* Channels [c0, c0 + n_ch) of every output pixel into dst: channel c0 + j of pixel p at
 * dst[p * dst_stride + j]. Reads input channels [c0, c0 + n_ch) only. */
static inline void rip_dw_group(const rip_dw_plane *g, const int8_t *in, const int8_t *filter,
                         const rip_dw_rq *q, int32_t c0, int32_t n_ch, int8_t *dst,
                         int32_t dst_stride) {
    const int8_t *rows[RIP_DW_ROWS_MAX_KH];
    const size_t row_in = (size_t)g->w * (size_t)g->c;
    for (int32_t oy = 0; oy < g->h_out; ++oy) {
        const int32_t iy0 = oy * g->sh - g->ph;
        for (int32_t ky = 0; ky < g->kh; ++ky) {
            const int32_t iy = iy0 + ky * g->dh;
            rows[ky] = iy < 0 || iy >= g->h ? NULL : in + (size_t)iy * row_in;
        }
        rip_dw_row(g, rows, filter, q, c0, n_ch, dst + (size_t)oy * g->w_out * dst_stride,
                   dst_stride);
    }
}

#endif /* RIP_DW_ROW_ENGINE_H */
