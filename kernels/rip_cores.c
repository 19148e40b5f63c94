/*
 * rip kernels: the two cores' progress counters (rip_cores.h).
 */
#include "rip_cores.h"

volatile uint32_t rip_core_progress[2];

static uint32_t load_acquire(const volatile uint32_t *p) {
    return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

void rip_core_publish(int core) {
    /* only this core writes its counter: a plain increment, released after the data */
    const uint32_t next = rip_core_progress[core] + 1u;
    __atomic_store_n(&rip_core_progress[core], next, __ATOMIC_RELEASE);
#if defined(__arm__)
    __asm__ volatile("sev" ::: "memory"); /* wakes the other core from its WFE */
#endif
}

/* The spin, in a function of its own so that an emulator can tell idle from work. */
__attribute__((noinline)) static void rip_core_spin(const volatile uint32_t *other,
                                                    uint32_t want) {
    while ((int32_t)(load_acquire(other) - want) < 0) {
#if defined(__arm__)
        /* until the other core's SEV (a publish); an emulator yields to the other core */
        __asm__ volatile("wfe" ::: "memory");
#endif
    }
}

void rip_core_wait(int core) {
    const uint32_t want = rip_core_progress[core];
    const volatile uint32_t *other = &rip_core_progress[core ^ 1];
    if ((int32_t)(load_acquire(other) - want) < 0) {
        rip_core_spin(other, want);
    }
}

void rip_core_barrier(int core) {
    rip_core_publish(core);
    rip_core_wait(core);
}

void rip_core_abandon(int core) {
    __atomic_store_n(&rip_core_progress[core], rip_core_progress[core] + 0x40000000u,
                     __ATOMIC_RELEASE);
#if defined(__arm__)
    __asm__ volatile("sev" ::: "memory");
#endif
}

void rip_core_reset(void) {
    rip_core_progress[0] = 0u;
    rip_core_progress[1] = 0u;
}
