/*
 * rip kernels: FULLY_CONNECTED on the packed GEMV. See rip_fully_connected_fast.h for the API.
 */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_fully_connected_fast.h"
#include "rip_gemv.h"

RIP_INLINE void rip_rq_fc_run(const int8_t *input, int32_t batches, int32_t depth,
                              const int8_t *filter, int32_t units, const rip_fast_channel *ch,
                              const int mode, int32_t lo, int32_t hi, int8_t *output) {
    for (int32_t b = 0; b < batches; ++b) {
        rip_rq_gemv(input + (size_t)b * depth, depth, filter, units, ch, mode, lo, hi,
                    output + (size_t)b * units);
    }
}

rip_status rip_fully_connected_fast_rq_s8(const rip_context *ctx, const rip_fc_params *params,
                                          const rip_fast_channel *channels,
                                          const rip_dims *input_dims, const int8_t *input,
                                          const rip_dims *filter_dims, const int8_t *filter,
                                          const rip_dims *output_dims, int8_t *output) {
    (void)ctx;
    const int32_t depth = filter_dims->c, units = output_dims->c;
    const int32_t batches = output_dims->n * output_dims->h * output_dims->w;
    const int32_t in_count = input_dims->n * input_dims->h * input_dims->w * input_dims->c;
    if (channels == NULL || depth < 1 || units < 1 || units != filter_dims->n ||
        params->filter_offset != 0 ||
        in_count != batches * depth || !rip_conv_valid_act(params->activation) ||
        ((uintptr_t)filter & 3u) != 0) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t lo = params->activation.min, hi = params->activation.max;
    if (lo == -128 && hi == 127) {
        rip_rq_fc_run(input, batches, depth, filter, units, channels, RIP_RQ_CHEAP_SAT, lo, hi,
                      output);
    } else {
        rip_rq_fc_run(input, batches, depth, filter, units, channels, RIP_RQ_CHEAP_CLAMP, lo,
                      hi, output);
    }
    return RIP_OK;
}
