/* pico-camera: a model compiled with --stream-input, fed row by row by a camera.
 *
 * A camera on a Pico (PIO capturing the pixel bus, DMA writing each line to RAM) delivers
 * a frame one line at a time, at its own pace. Here a repeating timer stands in for it:
 * every line_us microseconds its interrupt "captures" the next line of a test frame (the
 * model's built-in test input, so the result can be checked) into a small FIFO of
 * FIFO_LINES line buffers, as a DMA ring would. The model never holds the frame: its first
 * fused chain asks for each row when it needs it (rip_model_set_input_source, model.h), and
 * camera_row() hands over that line from the FIFO, waiting for the camera if it is not
 * captured yet. If the camera has run more than FIFO_LINES lines ahead (the inference fell
 * behind), the row is gone: camera_row() returns nonzero, rip_model_invoke() returns
 * RIP_MODEL_SOURCE_FAILED with no output, and this program slows the camera down and
 * tries the next frame. Each frame prints
 *
 *   CAMERA status=<0|failed> line_us=<T> rows=<H> waited=<lines waited for> us=<t> checksum=0x<crc32>
 *
 * checksum: CRC-32 of every output byte, which for the test frame equals expected.json's
 * (TFLite Micro on the same input). RAM used for the input: FIFO_LINES lines here plus the
 * model's own ring of a few rows (in its arena), instead of the whole frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "pico/stdlib.h"

#include "model.h"
#include "model_data.h"
#include "rip_crc32.h"

#ifndef RIP_INPUT0_STREAMED
#error "pico-camera needs a model compiled with rip-compile --stream-input"
#endif

#define FIFO_LINES 4u
#define FRAMES 2

static int8_t fifo[FIFO_LINES][RIP_INPUT0_ROW_BYTES];
static volatile uint32_t captured; /* lines of this frame in the FIFO so far */
static uint32_t waited;            /* rows the model asked for before they were captured */
static repeating_timer_t line_timer;

/* The camera's line interrupt: the next line of the frame into the FIFO (a DMA's job). */
static bool capture_line(repeating_timer_t *timer) {
    (void)timer;
    const uint32_t line = captured;
    if (line >= RIP_INPUT0_ROWS) {
        return false; /* the frame is done: stop until the next one starts */
    }
    memcpy(fifo[line % FIFO_LINES], rip_default_input_0 + line * RIP_INPUT0_ROW_BYTES,
           RIP_INPUT0_ROW_BYTES);
    captured = line + 1;
    return true;
}

static void start_frame(int64_t line_us) {
    captured = 0;
    waited = 0;
    add_repeating_timer_us(-line_us, capture_line, NULL, &line_timer);
}

/* The model's row source: line `row` from the FIFO, once the camera has captured it. */
static int32_t camera_row(void *user, int32_t row, int8_t *dst, int32_t bytes) {
    (void)user;
    if (captured <= (uint32_t)row) {
        ++waited;
        while (captured <= (uint32_t)row) {
            tight_loop_contents(); /* a real application could sleep until the DMA's IRQ */
        }
    }
    const uint32_t r = (uint32_t)row;
    memcpy(dst, fifo[r % FIFO_LINES], (size_t)bytes);
    /* the camera may have overwritten the line while it was copied: check after */
    return captured > r + FIFO_LINES ? 1 : 0;
}

int main(void) {
    stdio_init_all();
    printf("pico-camera: %s (%s), %u rows of %u bytes streamed in, arena %u bytes\n",
           RIP_MODEL_NAME, RIP_MODEL_STRATEGY, (unsigned)RIP_INPUT0_ROWS,
           (unsigned)RIP_INPUT0_ROW_BYTES, (unsigned)RIP_MODEL_ARENA_BYTES);
    rip_model_set_input_source(0, camera_row, NULL);
    int64_t line_us = 20; /* a fast camera first: the model will fall behind and drop it */
    for (int frame = 0; frame < FRAMES;) {
        start_frame(line_us);
        const uint64_t start = time_us_64();
        const int status = rip_model_invoke();
        const uint64_t elapsed = time_us_64() - start;
        cancel_repeating_timer(&line_timer);
        if (status == RIP_MODEL_SOURCE_FAILED) {
            printf("CAMERA status=failed line_us=%lld rows=%u (the camera overran the FIFO)\n",
                   (long long)line_us, (unsigned)RIP_INPUT0_ROWS);
            line_us *= 4; /* a slower line rate, as a camera's clock divider would give */
            continue;
        }
        if (status != RIP_MODEL_OK) {
            printf("CAMERA error: op %d failed\n", RIP_MODEL_FAILED_OP(status));
            return 1;
        }
        uint32_t crc = 0;
        for (int i = 0; i < RIP_MODEL_NUM_OUTPUTS; i++) {
            crc = rip_crc32_update(crc, rip_model_output(i), rip_model_output_bytes(i));
        }
        printf("CAMERA status=0 line_us=%lld rows=%u waited=%lu us=%llu checksum=0x%08lx\n",
               (long long)line_us, (unsigned)RIP_INPUT0_ROWS, (unsigned long)waited,
               (unsigned long long)elapsed, (unsigned long)crc);
        ++frame;
    }
    return 0;
}
