/*
 * rip kernels: DEPTHWISE_CONV_2D, one output row from row pointers (the fused chains'
 * stages). See rip_depthwise_row_fast.h for the API.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_depthwise_row_fast.h"
#include "rip_dw_row_engine.h"

/* The row engine over every channel of one output row: rows[ky] as rip_dw_row takes them
 * (the row's input rows, NULL outside the input), so a caller whose rows are not stored
 * contiguously (a ring) runs the same inner loops as the whole-tensor kernels. */
static rip_status rip_dw_row_entry(const rip_dw_conv_params *params, const rip_dw_rq *q,
                                   const void *bias, const rip_dims *input_dims,
                                   const int8_t *const *rows, const rip_dims *filter_dims,
                                   const int8_t *filter, const rip_dims *output_dims,
                                   int32_t c0, int32_t n_ch, int8_t *output) {
    rip_dw_plane g;
    if (rows == NULL ||
        rip_dw_plane_init(&g, params, input_dims, filter_dims, bias, output_dims) != RIP_OK) {
        return RIP_ERROR_ARGUMENT;
    }
    if (n_ch < 0) {
        n_ch = g.c;
    }
    if (c0 < 0 || n_ch > g.c - c0) {
        return RIP_ERROR_ARGUMENT;
    }
    if (n_ch > 0) {
        rip_dw_row(&g, rows, filter, q, c0, n_ch, output + c0, g.c);
    }
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_row_fast_s8(const rip_dw_conv_params *params,
                                            const rip_per_channel_quant *quant,
                                            const rip_dims *input_dims,
                                            const int8_t *const *rows,
                                            const rip_dims *filter_dims, const int8_t *filter,
                                            const int32_t *bias, const rip_dims *output_dims,
                                            int8_t *output) {
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_row_entry(params, &q, bias, input_dims, rows, filter_dims, filter,
                            output_dims, 0, -1, output);
}

rip_status rip_depthwise_conv2d_row_fast_rq_s8(const rip_dw_conv_params *params,
                                               const rip_fast_channel *channels,
                                               const rip_dims *input_dims,
                                               const int8_t *const *rows,
                                               const rip_dims *filter_dims,
                                               const int8_t *filter,
                                               const rip_dims *output_dims, int8_t *output) {
    const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
    return rip_dw_row_entry(params, &q, channels, input_dims, rows, filter_dims, filter,
                            output_dims, 0, -1, output);
}

rip_status rip_depthwise_conv2d_row_part_s8(const rip_dw_conv_params *params,
                                            const rip_fast_channel *channels,
                                            const rip_per_channel_quant *quant,
                                            const int32_t *bias, const rip_dims *input_dims,
                                            const int8_t *const *rows,
                                            const rip_dims *filter_dims, const int8_t *filter,
                                            const rip_dims *output_dims, int32_t c0,
                                            int32_t n_ch, int8_t *output) {
    if (n_ch < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    if (channels != NULL) {
        const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
        return rip_dw_row_entry(params, &q, channels, input_dims, rows, filter_dims, filter,
                                output_dims, c0, n_ch, output);
    }
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_row_entry(params, &q, bias, input_dims, rows, filter_dims, filter, output_dims,
                            c0, n_ch, output);
}
