/*
 * rip kernels: a resource variable's value copied between the arena and the variable's
 * bytes of the persistent region (READ_VARIABLE out of it, ASSIGN_VARIABLE into it), as
 * TFLite Micro's MicroResourceVariables::Read and Assign copy it.
 */
#ifndef RIP_STATE_H
#define RIP_STATE_H

#include <stdint.h>

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t size; /* bytes */
} rip_copy_params;

/* output[0 .. size) = input[0 .. size); the two never overlap (one is in the arena, the
 * other in the persistent region). */
rip_status rip_copy_s8(const rip_copy_params *params, const int8_t *input, int8_t *output);

#ifdef __cplusplus
}
#endif

#endif /* RIP_STATE_H */
