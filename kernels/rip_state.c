/* rip kernels: resource variables' copies (see rip_state.h for the contract). */
#include "rip_speed.h" /* first: the kernels take -O3 in any optimised build */
#include "rip_state.h"

#include <string.h>

rip_status rip_copy_s8(const rip_copy_params *params, const int8_t *input, int8_t *output) {
    if (params->size < 0) {
        return RIP_ERROR_ARGUMENT;
    }
    memcpy(output, input, (size_t)params->size);
    return RIP_OK;
}
