/*
 * rip kernels: shared types and TFLite's reference fixed-point arithmetic.
 *
 * Every kernel follows one shape of signature (after CMSIS-NN) and returns a rip_status:
 *   [context,] params, [quantization,] then each input and the output, each described
 *   (dims, or an element count) just before its data pointer.
 * The context holds the scratch buffer; kernels without scratch take none. Names read
 * rip_<op>[_<variant>]_s8. A kernel with a scratch need has a ..._get_buffer_size() twin
 * whose formula the code generator and the planner share
 * (rip.allocator.planning.scratch). Each variant, the ops it runs, how it may run in place,
 * its scratch twin and its preconditions are one row of rip.core.kernel_variants.
 *
 * The arithmetic every kernel shares (TFLite's reference fixed point, bit for bit) is the
 * support library rip_support.h, which the kernel sources include; this header holds only
 * the types of the API.
 */
#ifndef RIP_COMMON_H
#define RIP_COMMON_H

#include <stdint.h>

/* The storage of a generated model's constant data, after its declarator: nothing (const
 * data stays in flash, .rodata) unless model_data.c redefines it around the data of an op
 * made resident in SRAM (rip.allocator.planning.residency). */
#ifndef RIP_CONSTANT
#define RIP_CONSTANT
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t n, h, w, c;
} rip_dims;

typedef struct {
    int32_t h, w;
} rip_hw;

typedef struct {
    int32_t min, max; /* the fused activation as a clamp of the quantized output */
} rip_activation;

typedef struct {
    int8_t *buf;   /* the kernel's scratch: its op's own bytes of the arena (its core's own) */
    int32_t size;  /* bytes */
    int32_t share; /* RIP_SHARE_WHOLE (0): the call runs the whole op; RIP_SHARE_CORE0 or
                    * RIP_SHARE_CORE1: its core's share of an op both cores run (rip_cores.h);
                    * RIP_SHARE_PART0 or _PART1 (rip_conv2d_fast_rq_s8 only): core 0's or
                    * core 1's output channels, the caller synchronising (a fused chain) */
} rip_context;

/* What part of an op a kernel call runs (rip_context.share). */
enum {
    RIP_SHARE_WHOLE = 0,
    RIP_SHARE_CORE0 = 1,
    RIP_SHARE_CORE1 = 2,
    RIP_SHARE_PART0 = 3,
    RIP_SHARE_PART1 = 4
};

typedef struct {
    const int32_t *multiplier; /* one per output channel */
    const int32_t *shift;      /* one per output channel, TFLite's sign convention */
} rip_per_channel_quant;

typedef struct {
    int32_t multiplier;
    int32_t shift;
} rip_quant;

/* What every kernel returns. */
typedef enum {
    RIP_OK = 0,              /* the output is written */
    RIP_ERROR_ARGUMENT = -1, /* a size, shape, parameter or scratch it cannot run with */
    RIP_ERROR_SOURCE = -2,   /* a streamed input's source failed to deliver a row */
} rip_status;

#ifdef __cplusplus
}
#endif

#endif /* RIP_COMMON_H */
