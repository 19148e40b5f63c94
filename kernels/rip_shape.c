/* rip kernels: int8 data movement (see rip_shape.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_shape.h"
#include "rip_support.h"

/* ---- RESIZE_NEAREST_NEIGHBOR ----------------------------------------------------------- */

/* TfLiteRound (half away from zero) and floor for the non-negative floats the index map
 * produces, without libm: t + frac is exact below 2^24, and larger floats are integers. */
static int32_t round_nonnegative(float v) {
    const int32_t t = (int32_t)v;
    return t + ((v - (float)t) >= 0.5f ? 1 : 0);
}

/* TFLite's GetNearestNeighbor, in float32 exactly as the reference evaluates it, unless the
 * code generator proved the integer map o / scale identical. */
static int32_t nearest_index(int32_t o, int32_t in_size, int32_t out_size, int32_t scale,
                             const rip_resize_nearest_params *p) {
    int32_t index;
    if (scale > 0) {
        index = o / scale;
    } else {
        const float ratio = (p->align_corners && out_size > 1)
                                ? (float)(in_size - 1) / (float)(out_size - 1)
                                : (float)in_size / (float)out_size;
        const float v = ((float)o + (p->half_pixel_centers ? 0.5f : 0.0f)) * ratio;
        index = p->align_corners ? round_nonnegative(v) : (int32_t)v; /* v >= 0: floor */
    }
    index = rip_min32(index, in_size - 1);
    return p->half_pixel_centers ? rip_max32(index, 0) : index;
}

rip_status rip_resize_nearest_s8(const rip_resize_nearest_params *params, const rip_dims *input_dims,
                          const int8_t *input, const rip_dims *output_dims, int8_t *output) {
    const int32_t n = input_dims->n;
    const int32_t c = input_dims->c;
    const int32_t h_in = input_dims->h;
    const int32_t w_in = input_dims->w;
    const int32_t h_out = output_dims->h;
    const int32_t w_out = output_dims->w;
    if (output_dims->n != n || output_dims->c != c || h_in <= 0 || w_in <= 0 || h_out <= 0 ||
        w_out <= 0 || c <= 0 || n <= 0) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t in_row = w_in * c;
    const int32_t in_batch = h_in * in_row;
    const int32_t out_batch = h_out * w_out * c;
    if (!params->reverse) {
        int8_t *dst = output;
        for (int32_t b = 0; b < n; ++b) {
            const int8_t *src_batch = input + b * in_batch;
            for (int32_t y = 0; y < h_out; ++y) {
                const int8_t *src_row =
                    src_batch + nearest_index(y, h_in, h_out, params->scale_h, params) * in_row;
                for (int32_t x = 0; x < w_out; ++x) {
                    const int32_t in_x = nearest_index(x, w_in, w_out, params->scale_w, params);
                    memcpy(dst, src_row + in_x * c, (size_t)c);
                    dst += c;
                }
            }
        }
        return RIP_OK;
    }
    /* Reverse: the write frontier descends from the top of the output while the read
     * frontier descends S^2 times more slowly below it (Theorem 14). Pixel (0, 0) of batch 0
     * may copy onto itself, hence memmove. */
    for (int32_t b = n - 1; b >= 0; --b) {
        const int8_t *src_batch = input + b * in_batch;
        for (int32_t y = h_out - 1; y >= 0; --y) {
            const int8_t *src_row =
                src_batch + nearest_index(y, h_in, h_out, params->scale_h, params) * in_row;
            int8_t *dst = output + b * out_batch + (y * w_out + (w_out - 1)) * c;
            for (int32_t x = w_out - 1; x >= 0; --x) {
                const int32_t in_x = nearest_index(x, w_in, w_out, params->scale_w, params);
                memmove(dst, src_row + in_x * c, (size_t)c);
                dst -= c;
            }
        }
    }
    return RIP_OK;
}

/* ---- CONCATENATION --------------------------------------------------------------------- */

rip_status rip_concatenation_s8(const rip_concat_params *params, const int8_t *const *inputs,
                         int8_t *output) {
    if (params->num_inputs < 1 || params->outer_size < 0 || params->inner_size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    int8_t *dst = output;
    for (int32_t o = 0; o < params->outer_size; ++o) {
        for (int32_t k = 0; k < params->num_inputs; ++k) {
            const int32_t chunk = params->axis_sizes[k] * params->inner_size;
            const int8_t *src = inputs[k] + o * chunk;
            const rip_requantize_params *rq =
                params->requantize != NULL ? params->requantize[k] : NULL;
            if (rq != NULL) {
                rip_quantize_s8(rq, chunk, src, dst);
            } else {
                memcpy(dst, src, (size_t)chunk);
            }
            dst += chunk;
        }
    }
    return RIP_OK;
}

/* ---- TRANSPOSE ------------------------------------------------------------------------- */

rip_status rip_transpose_s8(const rip_transpose_params *params, const int8_t *input,
                            int8_t *output) {
    enum { R = RIP_TRANSPOSE_MAX_RANK };
    int32_t in_strides[R];
    int32_t acc = 1;
    for (int j = R - 1; j >= 0; --j) {
        if (params->dims[j] < 1) {
            return RIP_ERROR_ARGUMENT;
        }
        in_strides[j] = acc;
        acc *= params->dims[j];
    }
    int32_t seen = 0;
    int32_t out_dims[R];
    int32_t stride[R]; /* input stride of each output axis */
    for (int k = 0; k < R; ++k) {
        const int32_t axis = params->perm[k];
        if (axis < 0 || axis >= R || (seen & (1 << axis))) {
            return RIP_ERROR_ARGUMENT;
        }
        seen |= 1 << axis;
        out_dims[k] = params->dims[axis];
        stride[k] = in_strides[axis];
    }
    /* the innermost output axis a row at a time, the outer ones by an odometer */
    int32_t index[R - 1] = {0};
    const int8_t *src = input;
    int8_t *dst = output;
    for (;;) {
        for (int32_t i = 0; i < out_dims[R - 1]; ++i) {
            *dst++ = src[i * stride[R - 1]];
        }
        int k = R - 2;
        for (; k >= 0; --k) {
            src += stride[k];
            if (++index[k] < out_dims[k]) {
                break;
            }
            src -= out_dims[k] * stride[k];
            index[k] = 0;
        }
        if (k < 0) {
            return RIP_OK;
        }
    }
}

/* ---- PAD ------------------------------------------------------------------------------- */

rip_status rip_pad_s8(const rip_pad_params *params, const rip_dims *input_dims, const int8_t *input,
               int8_t *output) {
    const rip_dims *lo = &params->before;
    const rip_dims *hi = &params->after;
    if (lo->n < 0 || lo->h < 0 || lo->w < 0 || lo->c < 0 || hi->n < 0 || hi->h < 0 ||
        hi->w < 0 || hi->c < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    const int32_t n_out = input_dims->n + lo->n + hi->n;
    const int32_t h_out = input_dims->h + lo->h + hi->h;
    const int32_t w_out = input_dims->w + lo->w + hi->w;
    const int32_t c_in = input_dims->c;
    const int32_t c_out = c_in + lo->c + hi->c;
    const int value = (int)(int8_t)params->pad_value;
    const int8_t *src = input;
    int8_t *dst = output;
    for (int32_t b = 0; b < n_out; ++b) {
        const int pad_b = b < lo->n || b >= lo->n + input_dims->n;
        for (int32_t y = 0; y < h_out; ++y) {
            const int pad_y = pad_b || y < lo->h || y >= lo->h + input_dims->h;
            for (int32_t x = 0; x < w_out; ++x) {
                if (pad_y || x < lo->w || x >= lo->w + input_dims->w) {
                    memset(dst, value, (size_t)c_out);
                } else {
                    /* Input pixels are visited in their own row-major order. */
                    memset(dst, value, (size_t)lo->c);
                    memcpy(dst + lo->c, src, (size_t)c_in);
                    memset(dst + lo->c + c_in, value, (size_t)hi->c);
                    src += c_in;
                }
                dst += c_out;
            }
        }
    }
    return RIP_OK;
}

/* ---- slicing, block moves, gather, mirror pad ------------------------------------------ */

rip_status rip_slice_s8(const rip_slice_params *params, const int8_t *input,
                        const rip_dims *output_dims, int8_t *output) {
    const int32_t *step = params->step;
    if (output_dims->n < 0 || output_dims->h < 0 || output_dims->w < 0 || output_dims->c < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    int8_t *dst = output;
    for (int32_t i0 = 0; i0 < output_dims->n; ++i0) {
        for (int32_t i1 = 0; i1 < output_dims->h; ++i1) {
            for (int32_t i2 = 0; i2 < output_dims->w; ++i2) {
                const int8_t *src = input + params->offset + i0 * step[0] + i1 * step[1] +
                                    i2 * step[2];
                if (step[3] == 1) { /* the innermost run is contiguous */
                    memcpy(dst, src, (size_t)output_dims->c);
                    dst += output_dims->c;
                    continue;
                }
                for (int32_t i3 = 0; i3 < output_dims->c; ++i3) {
                    *dst++ = src[i3 * step[3]];
                }
            }
        }
    }
    return RIP_OK;
}

rip_status rip_depth_space_s8(const rip_depth_space_params *params, const rip_dims *input_dims,
                              const int8_t *input, int8_t *output) {
    const int32_t b = params->block;
    if (b < 1) {
        return RIP_ERROR_ARGUMENT;
    }
    /* Walk the space-side tensor (the output of DEPTH_TO_SPACE, the input of SPACE_TO_DEPTH)
     * and the depth-side tensor together: pixel (y, x), channel c of the space side is pixel
     * (y / b, x / b), channel ((y % b) * b + x % b) * c_space + c of the depth side. */
    int32_t h, w, c_space;
    if (params->up) {
        h = input_dims->h * b;
        w = input_dims->w * b;
        c_space = input_dims->c / (b * b);
    } else {
        h = input_dims->h;
        w = input_dims->w;
        c_space = input_dims->c;
    }
    const int32_t c_depth = c_space * b * b;
    const int32_t w_depth = w / b;
    const int32_t depth_batch = (h / b) * w_depth * c_depth;
    for (int32_t n = 0; n < input_dims->n; ++n) {
        for (int32_t y = 0; y < h; ++y) {
            for (int32_t x = 0; x < w; ++x) {
                const int32_t space = ((n * h + y) * w + x) * c_space;
                const int32_t depth = n * depth_batch + ((y / b) * w_depth + x / b) * c_depth +
                                      ((y % b) * b + x % b) * c_space;
                if (params->up) {
                    memcpy(output + space, input + depth, (size_t)c_space);
                } else {
                    memcpy(output + depth, input + space, (size_t)c_space);
                }
            }
        }
    }
    return RIP_OK;
}

rip_status rip_gather_s8(const rip_gather_params *params, const int8_t *input, int8_t *output) {
    const int32_t inner = params->inner_size;
    int8_t *dst = output;
    for (int32_t batch = 0; batch < params->batch_size; ++batch) {
        const int32_t *coords = params->coords + batch * params->coord_size;
        for (int32_t outer = 0; outer < params->outer_size; ++outer) {
            const int8_t *rows =
                input + (batch * params->outer_size + outer) * params->axis_size * inner;
            for (int32_t k = 0; k < params->coord_size; ++k) {
                if (coords[k] < 0 || coords[k] >= params->axis_size) {
                    return RIP_ERROR_ARGUMENT;
                }
                memcpy(dst, rows + coords[k] * inner, (size_t)inner);
                dst += inner;
            }
        }
    }
    return RIP_OK;
}

/* The input index that output index o (in [-before, size + after)) mirrors. */
static int32_t mirror_index(int32_t o, int32_t size, int32_t symmetric) {
    if (o < 0) {
        return symmetric ? -o - 1 : -o;
    }
    if (o >= size) {
        return symmetric ? 2 * size - o - 1 : 2 * size - o - 2;
    }
    return o;
}

rip_status rip_mirror_pad_s8(const rip_mirror_pad_params *params, const rip_dims *input_dims,
                             const int8_t *input, int8_t *output) {
    const rip_dims *lo = &params->before;
    const rip_dims *hi = &params->after;
    const rip_dims *in = input_dims;
    const int32_t n_out = in->n + lo->n + hi->n;
    const int32_t h_out = in->h + lo->h + hi->h;
    const int32_t w_out = in->w + lo->w + hi->w;
    const int32_t c_out = in->c + lo->c + hi->c;
    const int32_t s = params->symmetric;
    int8_t *dst = output;
    for (int32_t b = 0; b < n_out; ++b) {
        const int32_t ib = mirror_index(b - lo->n, in->n, s);
        for (int32_t y = 0; y < h_out; ++y) {
            const int32_t iy = mirror_index(y - lo->h, in->h, s);
            for (int32_t x = 0; x < w_out; ++x) {
                const int32_t ix = mirror_index(x - lo->w, in->w, s);
                const int8_t *src = input + ((ib * in->h + iy) * in->w + ix) * in->c;
                for (int32_t c = 0; c < c_out; ++c) {
                    *dst++ = src[mirror_index(c - lo->c, in->c, s)];
                }
            }
        }
    }
    return RIP_OK;
}
