/*
 * rip kernels: DEPTHWISE_CONV_2D out of place, fast. See rip_depthwise_fast.h for the API.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_depthwise_fast.h"
#include "rip_cores.h"
#include "rip_dw_plane_engine.h"
#include "rip_dw_row_engine.h"

static rip_status rip_dw_fast(const rip_context *ctx, const rip_dw_conv_params *params,
                              const rip_dw_rq *q,
                              const void *bias, const rip_dims *input_dims, const int8_t *input,
                              const rip_dims *filter_dims, const int8_t *filter,
                              const rip_dims *output_dims, int8_t *output) {
    rip_dw_plane g;
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, bias, output_dims) != RIP_OK ||
        !rip_share_ok(ctx, RIP_SHARE_CORE1)) {
        return RIP_ERROR_ARGUMENT;
    }
    const size_t in_batch = (size_t)g.h * g.w * g.c;
    const size_t out_batch = (size_t)g.h_out * g.w_out * g.c;
    /* two cores: this core's channels (no synchronisation: a channel is its own) */
    int32_t c0 = 0, c1 = g.c;
    if (ctx != NULL && ctx->share != RIP_SHARE_WHOLE) {
        rip_share_groups(ctx->share, g.c, &c0, &c1);
    }
    const int32_t n_ch = c1 - c0;
    for (int32_t b = 0; b < input_dims->n && n_ch > 0; ++b) {
        if (rip_dw_plane_cols(&g, input + b * in_batch, filter, q, output + b * out_batch, c0,
                              n_ch)) {
            continue;
        }
        if (g.kh <= RIP_DW_ROWS_MAX_KH) {
            rip_dw_group(&g, input + b * in_batch, filter, q, c0, n_ch,
                         output + b * out_batch + c0, g.c);
            continue;
        }
        for (int32_t ch = c0; ch < c1; ++ch) {
            rip_dw_channel(&g, input + b * in_batch, filter, ch, rip_dw_rq_bias(q, ch),
                           rip_dw_rq_m(q, ch), rip_dw_rq_s(q, ch), output + b * out_batch + ch,
                           g.c);
        }
    }
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_fast_s8(const rip_context *ctx, const rip_dw_conv_params *params,
                                 const rip_per_channel_quant *quant,
                                 const rip_dims *input_dims, const int8_t *input,
                                 const rip_dims *filter_dims, const int8_t *filter,
                                 const rip_dims *bias_dims, const int32_t *bias,
                                 const rip_dims *output_dims, int8_t *output) {
    (void)bias_dims;
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_fast(ctx, params, &q, bias, input_dims, input, filter_dims, filter, output_dims,
                       output);
}

rip_status rip_depthwise_conv2d_fast_rq_s8(const rip_context *ctx,
                                           const rip_dw_conv_params *params,
                                           const rip_fast_channel *channels,
                                           const rip_dims *input_dims, const int8_t *input,
                                           const rip_dims *filter_dims, const int8_t *filter,
                                           const rip_dims *output_dims, int8_t *output) {
    const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
    return rip_dw_fast(ctx, params, &q, channels, input_dims, input, filter_dims, filter,
                       output_dims, output);
}
