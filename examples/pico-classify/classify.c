/* pico-classify: a Pico application that runs a model compiled by rip (the rip_model
 * library, model.h) on an input it gets from elsewhere, and prints the top class.
 *
 * Each round it waits up to INPUT_WAIT_MS for an input on stdin (UART0, 115200 baud):
 * exactly RIP_INPUT0_BYTES raw int8 bytes, the tensor in RIP_INPUT0_SHAPE order (TFLite's
 * NHWC for an image), already quantized. When none comes it makes a test image of its own,
 * quantizing real values with the input's RIP_INPUT0_SCALE and RIP_INPUT0_ZERO_POINT as
 * your application would a camera frame or a sensor window. Then it runs the model and
 * prints, on one line,
 *
 *   CLASSIFY input=<uart|test> class=<k> score=<q> value=<x> us=<t> checksum=0x<crc32>
 *
 * class: the index of the largest element of output 0; score: that int8 element; value:
 * the same dequantized (RIP_OUTPUT0_SCALE * (score - RIP_OUTPUT0_ZERO_POINT), a probability
 * for a softmax output); us: the inference's microseconds; checksum: CRC-32 of every output
 * byte, as rip-verify and TFLite Micro compute it for the same input.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "pico/stdlib.h"

#include "model.h"
#include "rip_crc32.h"

#if RIP_MODEL_NUM_INPUTS != 1
#error "pico-classify feeds one input tensor; this model has several"
#endif

#define INPUT_WAIT_MS 5000u
#define BYTE_WAIT_US 1000000u /* the longest pause allowed inside one input */

/* Reads the input straight into the arena (no second buffer: for a large model the SRAM
 * would not hold two); false when its first byte did not come within INPUT_WAIT_MS or the
 * rest stopped short. */
static bool read_input(int8_t *input, uint32_t bytes) {
    for (uint32_t i = 0; i < bytes; i++) {
        const int c = getchar_timeout_us(i == 0 ? INPUT_WAIT_MS * 1000u : BYTE_WAIT_US);
        if (c == PICO_ERROR_TIMEOUT) {
            return false;
        }
        input[i] = (int8_t)c;
    }
    return true;
}

/* q = round(x / scale) + zero_point, clamped to int8: TFLite's affine quantization. */
static int8_t quantize(float x) {
    const float scaled = x / RIP_INPUT0_SCALE;
    const int32_t q = (int32_t)(scaled + (scaled >= 0.0f ? 0.5f : -0.5f)) + RIP_INPUT0_ZERO_POINT;
    return (int8_t)(q < -128 ? -128 : (q > 127 ? 127 : q));
}

/* A stand-in for a real input: a diagonal gradient of values in [0, 1]. */
static void make_test_input(int8_t *input, uint32_t bytes) {
    for (uint32_t i = 0; i < bytes; i++) {
        input[i] = quantize((float)((i * 7u) % 256u) / 255.0f);
    }
}

int main(void) {
    stdio_init_all();
    printf("pico-classify: %s (%s), input %u bytes, send it on UART0 within %u ms\n",
           RIP_MODEL_NAME, RIP_MODEL_STRATEGY, (unsigned)RIP_INPUT0_BYTES, INPUT_WAIT_MS);
    for (;;) {
        /* Execution is in place: the input is written again before every inference. */
        int8_t *input = rip_model_input(0);
        const bool from_uart = read_input(input, RIP_INPUT0_BYTES);
        if (!from_uart) {
            make_test_input(input, RIP_INPUT0_BYTES);
        }
        const uint64_t start = time_us_64();
        const int status = rip_model_invoke();
        const uint64_t elapsed = time_us_64() - start;
        if (status != RIP_MODEL_OK) {
            printf("CLASSIFY error: op %d failed\n", RIP_MODEL_FAILED_OP(status));
            continue;
        }
        /* Read the outputs before the next input overwrites the arena. */
        const int8_t *scores = rip_model_output(0);
        uint32_t best = 0;
        for (uint32_t i = 1; i < RIP_OUTPUT0_BYTES; i++) {
            if (scores[i] > scores[best]) {
                best = i;
            }
        }
        const float value = RIP_OUTPUT0_SCALE * (float)(scores[best] - RIP_OUTPUT0_ZERO_POINT);
        uint32_t crc = 0;
        for (int i = 0; i < RIP_MODEL_NUM_OUTPUTS; i++) {
            crc = rip_crc32_update(crc, rip_model_output(i), rip_model_output_bytes(i));
        }
        printf("CLASSIFY input=%s class=%lu score=%d value=%.4f us=%llu checksum=0x%08lx\n",
               from_uart ? "uart" : "test", (unsigned long)best, scores[best], (double)value,
               (unsigned long long)elapsed, (unsigned long)crc);
    }
}
