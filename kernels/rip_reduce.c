/* rip kernels: int8 reductions (see rip_reduce.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_reduce.h"
#include "rip_support.h"

/* The kept axes (outer walk, in output order) and the reduced axes (inner walk), each as
 * extents and input strides. */
typedef struct {
    int32_t n_kept, n_reduced;
    int32_t kept[RIP_REDUCE_MAX_RANK], kept_stride[RIP_REDUCE_MAX_RANK];
    int32_t red[RIP_REDUCE_MAX_RANK], red_stride[RIP_REDUCE_MAX_RANK];
    int32_t count; /* elements reduced into each output */
} walk;

static int make_walk(const rip_reduce_params *p, walk *w) {
    if (p->rank < 1 || p->rank > RIP_REDUCE_MAX_RANK) {
        return 0;
    }
    int32_t stride = 1;
    w->n_kept = w->n_reduced = 0;
    w->count = 1;
    /* Innermost first, so that strides accumulate; stored outermost first below. */
    int32_t kept[RIP_REDUCE_MAX_RANK], kept_stride[RIP_REDUCE_MAX_RANK];
    int32_t red[RIP_REDUCE_MAX_RANK], red_stride[RIP_REDUCE_MAX_RANK];
    for (int32_t k = p->rank - 1; k >= 0; --k) {
        const int32_t d = p->dims[k];
        if (d < 1) {
            return 0;
        }
        if (p->reduced & (1 << k)) {
            red[w->n_reduced] = d;
            red_stride[w->n_reduced++] = stride;
            w->count *= d;
        } else {
            kept[w->n_kept] = d;
            kept_stride[w->n_kept++] = stride;
        }
        stride *= d;
    }
    for (int32_t j = 0; j < w->n_kept; ++j) {
        w->kept[j] = kept[w->n_kept - 1 - j];
        w->kept_stride[j] = kept_stride[w->n_kept - 1 - j];
    }
    for (int32_t j = 0; j < w->n_reduced; ++j) {
        w->red[j] = red[w->n_reduced - 1 - j];
        w->red_stride[j] = red_stride[w->n_reduced - 1 - j];
    }
    return 1;
}

/* Advance an odometer over `extent` (outermost first); returns the new input offset
 * relative to the walk's start, or -1 once every index has been visited. */
static int32_t next_offset(int32_t n, const int32_t *extent, const int32_t *stride,
                           int32_t *index, int32_t offset) {
    for (int32_t j = n - 1; j >= 0; --j) {
        if (++index[j] < extent[j]) {
            return offset + stride[j];
        }
        offset -= (extent[j] - 1) * stride[j];
        index[j] = 0;
    }
    return -1;
}

enum { REDUCE_SUM, REDUCE_MAX, REDUCE_MIN, ARG_MAX, ARG_MIN };

/* element i of a tensor of `width`-byte values (1: int8, 2: int16, little-endian) */
static inline int32_t value_at(const int8_t *data, int32_t width, int32_t i) {
    return width == 1 ? data[i] : rip_load_le(data + 2 * i, 2);
}

static rip_status reduce(const rip_reduce_params *p, int mode, int32_t width, const int8_t *input,
                         int8_t *output) {
    walk w;
    if (!make_walk(p, &w) || ((mode == ARG_MAX || mode == ARG_MIN) && w.n_reduced > 1)) {
        return RIP_ERROR_ARGUMENT;
    }
    int32_t outer[RIP_REDUCE_MAX_RANK] = {0};
    int32_t out_index = 0;
    int32_t base = 0;
    do {
        int32_t inner[RIP_REDUCE_MAX_RANK] = {0};
        int32_t offset = base;
        int32_t sum = 0;
        int32_t best = value_at(input, width, base);
        int32_t best_at = 0;
        int32_t at = 0;
        do {
            const int32_t x = value_at(input, width, offset);
            switch (mode) {
            case REDUCE_SUM:
                /* TFLite's int32 sum wraps (AddTensorValuesWithExpectedOverflow). */
                sum = (int32_t)((uint32_t)sum + (uint32_t)x);
                break;
            case REDUCE_MAX:
            case ARG_MAX:
                if (x > best) { /* strict: the first of equal values wins */
                    best = x;
                    best_at = at;
                }
                break;
            default:
                if (x < best) {
                    best = x;
                    best_at = at;
                }
                break;
            }
            ++at;
            offset = next_offset(w.n_reduced, w.red, w.red_stride, inner, offset);
        } while (offset >= 0);
        if (mode == REDUCE_SUM) {
            /* TFLite subtracts zero_point * count in int64, then narrows to int32. */
            const int64_t shifted = (int64_t)sum - (int64_t)p->input_zero_point * w.count;
            const int32_t y = rip_multiply_by_quantized_multiplier(
                                  (int32_t)(uint32_t)(uint64_t)shifted, p->quant.multiplier,
                                  p->quant.shift) +
                              p->output_zero_point;
            const int32_t lo = width == 1 ? INT8_MIN : INT16_MIN;
            const int32_t hi = width == 1 ? INT8_MAX : INT16_MAX;
            rip_store_le(output + width * out_index, rip_clamp32(y, lo, hi), width);
        } else if (mode == ARG_MAX || mode == ARG_MIN) {
            memcpy(output + 4 * out_index, &best_at, sizeof best_at);
        } else {
            rip_store_le(output + width * out_index, best, width);
        }
        ++out_index;
        base = w.n_kept ? next_offset(w.n_kept, w.kept, w.kept_stride, outer, base) : -1;
    } while (base >= 0);
    return RIP_OK;
}

rip_status rip_reduce_sum_s8(const rip_reduce_params *params, const int8_t *input,
                             int8_t *output) {
    return reduce(params, REDUCE_SUM, 1, input, output);
}

rip_status rip_reduce_max_s8(const rip_reduce_params *params, const int8_t *input,
                             int8_t *output) {
    return reduce(params, REDUCE_MAX, 1, input, output);
}

rip_status rip_reduce_min_s8(const rip_reduce_params *params, const int8_t *input,
                             int8_t *output) {
    return reduce(params, REDUCE_MIN, 1, input, output);
}

rip_status rip_arg_max_s8(const rip_reduce_params *params, const int8_t *input, int8_t *output) {
    return reduce(params, ARG_MAX, 1, input, output);
}

rip_status rip_arg_min_s8(const rip_reduce_params *params, const int8_t *input, int8_t *output) {
    return reduce(params, ARG_MIN, 1, input, output);
}

rip_status rip_reduce_sum_s16(const rip_reduce_params *params, const void *input, void *output) {
    return reduce(params, REDUCE_SUM, 2, (const int8_t *)input, (int8_t *)output);
}
