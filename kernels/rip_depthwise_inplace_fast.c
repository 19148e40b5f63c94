/*
 * rip kernels: DEPTHWISE_CONV_2D channel in place, fast, by channel planes. See
 * rip_depthwise_inplace_fast.h for the API and the in-place contract.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_depthwise_inplace_fast.h"
#include "rip_cores.h"
#include "rip_dw_plane_engine.h"
#include "rip_dw_row_engine.h"

static rip_status rip_dw_planes(const rip_context *ctx, const rip_dw_conv_params *params,
                                const rip_dw_rq *q, const void *bias,
                                const rip_dims *input_dims, int8_t *data,
                                const rip_dims *filter_dims, const int8_t *filter,
                                const rip_dims *output_dims) {
    rip_dw_plane g;
    const int32_t plane = output_dims->h * output_dims->w;
    if (rip_dw_plane_init(&g, params, input_dims, filter_dims, bias, output_dims) != RIP_OK ||
        plane > input_dims->h * input_dims->w || ctx == NULL || ctx->buf == NULL ||
        ctx->size < plane || !rip_share_ok(ctx, RIP_SHARE_CORE1)) {
        return RIP_ERROR_ARGUMENT;
    }
    const size_t in_batch = (size_t)g.h * g.w * g.c;
    const size_t out_batch = (size_t)plane * g.c;
    int8_t *buf = ctx->buf;
    int32_t size = ctx->size;
    /* Two cores: this core's channels, its planes in its own half of the scratch both share
     * (no synchronisation: a channel's plane reads and overwrites that channel only); where
     * a half holds no plane, core 0 runs every channel in the whole scratch. */
    int32_t c_lo = 0, c_hi = g.c;
    if (ctx->share != RIP_SHARE_WHOLE) {
        const int32_t half = (size / 2) & ~3;
        if (half >= plane) {
            rip_share_groups(ctx->share, g.c, &c_lo, &c_hi);
            buf += ctx->share == RIP_SHARE_CORE1 ? half : 0;
            size = half;
        } else if (ctx->share == RIP_SHARE_CORE1) {
            return RIP_OK;
        }
    }
    /* Channel groups: as many channels per pass as the scratch holds planes of, a multiple
     * of four (all of them for a small plane). Group [c0, c0 + n) reads input channels
     * [c0, c0 + n) only, computes their planes into ctx->buf (pixel-major, n bytes a pixel)
     * and then scatters them over the same channels, which no later group reads. */
    int32_t group = rip_min32(g.c, (size / plane) & ~3);
    if (group >= 4 && g.kh <= RIP_DW_ROWS_MAX_KH) {
        for (int32_t b = 0; b < input_dims->n; ++b) {
            const int8_t *in = data + b * in_batch;
            int8_t *out = data + b * out_batch;
            for (int32_t c0 = c_lo; c0 < c_hi; c0 += group) {
                const int32_t n = rip_min32(group, c_hi - c0);
                rip_dw_group(&g, in, filter, q, c0, n, buf, n);
                if (n == g.c) {
                    memcpy(out, buf, (size_t)plane * (size_t)n);
                    continue;
                }
                const int8_t *s = buf;
                int8_t *o = out + c0;
                for (int32_t p = 0; p < plane; ++p, s += n, o += g.c) {
                    int32_t j = 0;
                    for (; j + 4 <= n; j += 4) {
                        int32_t v;
                        memcpy(&v, s + j, 4);
                        memcpy(o + j, &v, 4);
                    }
                    for (; j < n; ++j) {
                        o[j] = s[j];
                    }
                }
            }
        }
        return RIP_OK;
    }
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = data + b * in_batch;
        int8_t *out = data + b * out_batch;
        for (int32_t ch = c_lo; ch < c_hi; ++ch) {
            /* Channel ch's plane reads channel ch only, which no scatter has touched yet. */
            rip_dw_channel(&g, in, filter, ch, rip_dw_rq_bias(q, ch), rip_dw_rq_m(q, ch),
                           rip_dw_rq_s(q, ch), buf, 1);
            int8_t *o = out + ch;
            for (int32_t p = 0; p < plane; ++p) {
                o[(size_t)p * g.c] = buf[p];
            }
        }
    }
    return RIP_OK;
}

rip_status rip_depthwise_conv2d_inplace_fast_s8(const rip_context *ctx,
                                         const rip_dw_conv_params *params,
                                         const rip_per_channel_quant *quant,
                                         const rip_dims *input_dims, int8_t *data,
                                         const rip_dims *filter_dims, const int8_t *filter,
                                         const rip_dims *bias_dims, const int32_t *bias,
                                         const rip_dims *output_dims) {
    (void)bias_dims;
    const rip_dw_rq q = rip_dw_rq_exact(bias, quant);
    return rip_dw_planes(ctx, params, &q, bias, input_dims, data, filter_dims, filter,
                         output_dims);
}

rip_status rip_depthwise_conv2d_inplace_fast_rq_s8(const rip_context *ctx,
                                                   const rip_dw_conv_params *params,
                                                   const rip_fast_channel *channels,
                                                   const rip_dims *input_dims, int8_t *data,
                                                   const rip_dims *filter_dims,
                                                   const int8_t *filter,
                                                   const rip_dims *output_dims) {
    const rip_dw_rq q = rip_dw_rq_cheap(channels, params);
    return rip_dw_planes(ctx, params, &q, channels, input_dims, data, filter_dims, filter,
                         output_dims);
}
