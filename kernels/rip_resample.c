/* rip kernels: int8 resampling (see rip_resample.h for the contract). */
#include "rip_resample.h"

/* Source coordinate of output index o in 1/1024 units, and the two input indices around it. */
static void source_span(int32_t o, int32_t scale_10, int32_t half_pixel, int32_t in_size,
                        int32_t *pos, int32_t *lo, int32_t *hi) {
    *pos = half_pixel ? o * scale_10 + scale_10 / 2 - (1 << 9) : o * scale_10;
    /* C division truncates toward zero, as the reference's does (pos may be negative). */
    *lo = rip_max32(*pos / (1 << 10), 0);
    *hi = rip_min32((*pos + (1 << 10) - 1) / (1 << 10), in_size - 1);
}

rip_status rip_resize_bilinear_s8(const rip_resize_bilinear_params *params,
                                  const rip_dims *input_dims, const int8_t *input,
                                  const rip_dims *output_dims, int8_t *output) {
    const int32_t c = input_dims->c;
    const int32_t h_in = input_dims->h;
    const int32_t w_in = input_dims->w;
    if (output_dims->n != input_dims->n || output_dims->c != c || h_in <= 0 || w_in <= 0) {
        return RIP_ERROR_ARGUMENT;
    }
    int8_t *dst = output;
    for (int32_t b = 0; b < input_dims->n; ++b) {
        const int8_t *batch = input + b * h_in * w_in * c;
        for (int32_t y = 0; y < output_dims->h; ++y) {
            int32_t py, y0, y1;
            source_span(y, params->scale_h_10, params->half_pixel_centers, h_in, &py, &y0, &y1);
            const int64_t dy = py - (1 << 10) * y0; /* weight of row y1, 1/1024 */
            for (int32_t x = 0; x < output_dims->w; ++x) {
                int32_t px, x0, x1;
                source_span(x, params->scale_w_10, params->half_pixel_centers, w_in, &px, &x0,
                            &x1);
                const int64_t dx = px - (1 << 10) * x0;
                const int8_t *p00 = batch + (y0 * w_in + x0) * c;
                const int8_t *p10 = batch + (y1 * w_in + x0) * c;
                const int8_t *p01 = batch + (y0 * w_in + x1) * c;
                const int8_t *p11 = batch + (y1 * w_in + x1) * c;
                for (int32_t ch = 0; ch < c; ++ch) {
                    const int64_t sum = (int64_t)p00[ch] * ((1 << 10) - dy) * ((1 << 10) - dx) +
                                        (int64_t)p10[ch] * dy * ((1 << 10) - dx) +
                                        (int64_t)p01[ch] * ((1 << 10) - dy) * dx +
                                        (int64_t)p11[ch] * dy * dx;
                    const int64_t round = sum > 0 ? (1 << 19) : -(1 << 19);
                    *dst++ = (int8_t)((sum + round) / (1 << 20));
                }
            }
        }
    }
    return RIP_OK;
}
