/*
 * rip kernels: included first by every kernel source, so that their hot loops keep their
 * speed whatever build type compiles them (issue 26). Pico projects build Release (-O3)
 * by default, but also MinSizeRel (-Os), and an application may embed the model library
 * in its own -O2 build; GCC then neither unrolls the depthwise tap loops nor inlines the
 * row engine as it does at -O3. Measured on qemu-m33 without this file: MCUNet-in0 4.7%
 * more instructions at -O2 and 7.6% at -Os, MCUNet-in3 1.4% and 7.6%; with it, 0.0% at -O2
 * and 2.3% / 1.1% at -Os. The kernels' code is a few kilobytes beside the weights, so on
 * the Cortex-M33 (and any core with the DSP extension) they take -O3 in any optimised
 * build. On ARMv6-M the pragma is not neutral at -O3 (MCUNet-in3 5.2% more instructions
 * under it, measured), so there it applies to -Os builds alone (MCUNet-in3 1.72x the -O3
 * figure without it, 1.27x with it; -O2 is 1.01x either way). The caller's own code keeps
 * its flags: no API header includes this file. An unoptimised build (-O0) stays as it is.
 */
#ifndef RIP_SPEED_H
#define RIP_SPEED_H

/* Said before the pragma, which undefines __OPTIMIZE_SIZE__: an ARMv6-M -Os build keeps
 * GCC's size-driven register set (no r8-r11 for the allocator), which the hand-scheduled
 * loops cannot do without (rip_support.h's RIP_HAND_ASM). */
#if defined(__OPTIMIZE_SIZE__)
#define RIP_BUILT_FOR_SIZE 1
#endif

#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__) && defined(__arm__) && \
    (defined(__ARM_FEATURE_DSP) || defined(__OPTIMIZE_SIZE__))
#pragma GCC optimize("O3")
#endif

#endif /* RIP_SPEED_H */
