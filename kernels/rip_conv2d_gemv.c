/*
 * rip kernels: CONV_2D on the packed GEMV, one gathered receptive field at a time against
 * the packed filter. See rip_conv2d_gemv.h for the API and the in-place contract.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_conv2d_gemv.h"
#include "rip_gemv.h"

RIP_INLINE void rip_rq_conv_gemv_run(const rip_conv_params *params, const rip_dims *input_dims,
                                     const int8_t *input, const rip_dims *filter_dims,
                                     const int8_t *filter, const rip_dims *output_dims,
                                     int8_t *output, int8_t *col, int32_t *xw,
                                     const rip_fast_channel *ch, const int mode) {
    const int32_t h = input_dims->h, w = input_dims->w, c_in = input_dims->c;
    const int32_t c_out = output_dims->c;
    const int32_t taps = filter_dims->h * filter_dims->w * c_in;
    const int32_t lo = params->activation.min, hi = params->activation.max;
    (void)xw; /* DSP cores only */
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *in = input + (size_t)b * h * w * c_in;
        int8_t *out = output + (size_t)b * output_dims->h * output_dims->w * c_out;
        for (int32_t oy = 0; oy < output_dims->h; ++oy) {
            for (int32_t ox = 0; ox < output_dims->w; ++ox) {
                /* Gather (sigma = 0): every read for this pixel before any of its writes. */
                rip_conv_gather_s8(in, input_dims, filter_dims, params, oy, ox, col);
#if defined(__ARM_FEATURE_DSP)
                if (xw != NULL) {
                    rip_rq_widen_1px(col, taps, xw);
                    rip_rq_gemv_1x2(xw, rip_rq_k4(taps), filter, c_out, ch, mode, lo, hi, out);
                    out += c_out;
                    continue;
                }
#endif
                rip_rq_gemv(col, taps, filter, c_out, ch, mode, lo, hi, out);
                out += c_out;
            }
        }
    }
}

rip_status rip_conv2d_gemv_rq_s8(const rip_context *ctx, const rip_conv_params *params,
                                 const rip_fast_channel *channels, const rip_dims *input_dims,
                                 const int8_t *input, const rip_dims *filter_dims,
                                 const int8_t *filter, const rip_dims *output_dims,
                                 int8_t *output) {
    const int32_t taps = filter_dims->h * filter_dims->w * input_dims->c;
    if (channels == NULL || ctx == NULL || ctx->buf == NULL || ctx->size < taps ||
        filter_dims->c != input_dims->c || filter_dims->n != output_dims->c ||
        input_dims->n != output_dims->n || params->stride.h < 1 || params->stride.w < 1 ||
        params->dilation.h < 1 || params->dilation.w < 1 ||
        !rip_conv_valid_act(params->activation) || ((uintptr_t)filter & 3u) != 0) {
        return RIP_ERROR_ARGUMENT;
    }
    /* With DSP, a filter streaming from flash (rip_rq_streams) where the scratch holds the
     * field widened too (2 * k4 bytes, word-aligned after it: the planner reserves every
     * CONV_2D rip_conv2d_fast_rq_s8's scratch) is swept pair by pair in address order
     * (rip_rq_gemv_1x2); elsewhere the 1 x 4 tiles take fewer instructions. */
    int32_t *xw = NULL;
#if defined(__ARM_FEATURE_DSP)
    const uintptr_t at = ((uintptr_t)ctx->buf + (uintptr_t)taps + 3u) & ~(uintptr_t)3u;
    if (rip_rq_streams(filter, rip_rq_k4(taps), output_dims->c) &&
        at + 2u * (uintptr_t)rip_rq_k4(taps) <= (uintptr_t)ctx->buf + (uintptr_t)ctx->size) {
        xw = (int32_t *)at;
    }
#endif
    if (params->activation.min == -128 && params->activation.max == 127) {
        rip_rq_conv_gemv_run(params, input_dims, input, filter_dims, filter, output_dims, output,
                             ctx->buf, xw, channels, RIP_RQ_CHEAP_SAT);
    } else {
        rip_rq_conv_gemv_run(params, input_dims, input, filter_dims, filter, output_dims, output,
                             ctx->buf, xw, channels, RIP_RQ_CHEAP_CLAMP);
    }
    return RIP_OK;
}
