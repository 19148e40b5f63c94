/*
 * rip kernels: two cores sharing an op (issue 27, docs/two-cores.md).
 *
 * Each core owns one progress counter, a 32-bit word only it writes. A core *publishes*
 * (its counter + 1) when it has done a unit's reads, and *waits* until the other core has
 * published at least as many units as it has. That is the `gather` rule at lag L = 0 of
 * rip.allocator.theory.two_core: a core stores a tile only once the other has gathered the
 * same tile, so the other core's reads still to come are those of later tiles, as on one
 * core, and the gap the planner gives the op on one core is safe on two. An op's end is the
 * same pair (publish, then wait): a barrier.
 *
 * The counters only grow (modulo 2^32): both cores publish the same sequence of units, so
 * "the other's count >= mine" is all a wait needs. Release on the publish and acquire on
 * the wait order the data accesses around them (a DMB on Arm, no lock and no hardware
 * spin lock: the RP2350's erratum E2 makes the SDK avoid those).
 *
 * Emulated runs find rip_core_spin by its symbol: the instructions a core spends in it
 * are idle, not work (rip.timing.two_core).
 */
#ifndef RIP_CORES_H
#define RIP_CORES_H

#include <stddef.h>
#include <stdint.h>

#include "rip_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Whether a context's share is one a kernel knows, RIP_SHARE_WHOLE to `most` (NULL: a whole
 * op). A kernel that shares refuses any other value: an uninitialised share must not
 * silently run part of an op. */
static inline int rip_share_ok(const rip_context *ctx, int32_t most) {
    return ctx == NULL || (ctx->share >= RIP_SHARE_WHOLE && ctx->share <= most);
}

/* The output channels [*lo, *hi) of `c` that share `share` (rip_common.h) computes: half of
 * them on each core, core 0's rounded up to whole channel pairs (the fast conv kernel
 * computes channels in pairs; rip.allocator.theory.two_core_programs.default_split). An op
 * of fewer than 4 channels is not split: core 0 runs it whole, core 1 nothing. */
static inline void rip_share_channels(int32_t share, int32_t c, int32_t *lo, int32_t *hi) {
    const int32_t split = c < 4 ? c : 2 * ((c + 3) / 4);
    *lo = share == RIP_SHARE_CORE1 ? split : 0;
    *hi = share == RIP_SHARE_CORE0 ? split : c;
}

/* The channels [*lo, *hi) of a depthwise layer of `c` channels that share `share` runs:
 * whole groups of four on core 0 (the packed filter's and the column-pair engine's unit),
 * the rest, any last channels outside a group included, on core 1. A layer of fewer than two
 * groups is not split: core 0 runs it whole, core 1 nothing. No synchronisation: a depthwise
 * channel reads and writes its own channel only (docs/two-cores.md). */
static inline void rip_share_groups(int32_t share, int32_t c, int32_t *lo, int32_t *hi) {
    const int32_t groups = c / 4;
    const int32_t split = groups < 2 ? c : 4 * ((groups + 1) / 2);
    *lo = share == RIP_SHARE_CORE1 ? split : 0;
    *hi = share == RIP_SHARE_CORE0 ? split : c;
}

/* progress[core]: the units core `core` has published. */
extern volatile uint32_t rip_core_progress[2];

/* Core `core` has done a unit's reads (and its earlier stores): publish it. */
void rip_core_publish(int core);

/* Wait until the other core has published as many units as core `core` has. */
void rip_core_wait(int core);

/* The barrier between two shared ops: publish, then wait. */
void rip_core_barrier(int core);

/* A shared kernel's sync between a tile's reads and its first store: nothing for a core
 * running the whole op (core < 0). */
#define RIP_SHARE_SYNC(core)        \
    do {                            \
        if ((core) >= 0) {          \
            rip_core_publish(core); \
            rip_core_wait(core);    \
        }                           \
    } while (0)

/* A core that stops in the middle of an inference (a kernel refused its parameters) lets
 * the other run on: its counter jumps far ahead, so that the other never waits for it. */
void rip_core_abandon(int core);

/* Both counters back to zero: before core 1 is started, never while it runs. */
void rip_core_reset(void);

#ifdef __cplusplus
}
#endif

#endif /* RIP_CORES_H */
