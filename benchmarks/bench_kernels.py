"""bench-kernels: executed instructions of the convolution kernels, old against new, per layer
shape, on an emulated Cortex-M33 and an ARMv6-M core (QEMU, ``-icount shift=0``).

    python benchmarks/bench_kernels.py [--model person-det] [--cpu cortex-m33 cortex-m0plus]
                                       [--opt -O3] [--whole mcunet-in0 person-det]

Per layer: every CONV_2D and DEPTHWISE_CONV_2D of the model with its real weights and
quantization, a random input, run once through the reference kernel (rip_conv2d_s8 with the
model bias, rip_depthwise_conv2d_s8_inplace) and once through the kernel the generator emits
for it (`emitted_kernel`: codegen.lower_conv's steps, a depthwise layer in place: the _rq
kernels with rip.codegen.requant's rip_fast_channel records, and for CONV_2D the packed
filter, wherever the cheap requantisation is proven, else the _fast ones with the folded
bias), both outputs compared byte for byte. SysTick is read
around each call: with ``-icount shift=0`` one tick is 50 instructions on mps2-an505
(Cortex-M33) and 40 on mps2-an385, which runs the ARMv6-M (-mcpu=cortex-m0plus) stream
(see shared/notes/firmware-toolchain.md). These are instruction counts, not cycles.

``--whole``: the generated model (rip's plan and C, all ops), old and new kernels, one
invoke counted the same way, with its output CRC-32 against TFLite Micro's; the M33 figure
is set against shared/reference/cmsis-nn-m33-instructions.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from unittest import mock

import numpy as np

from rip.core.operators import CONVOLUTIONS, Op

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
KERNELS = ROOT / "kernels"
REFERENCE = SHARED / "reference" / "cmsis-nn-m33-instructions.json"

# The per-op profile of Person-Det under TFLite Micro + CMSIS-NN on the M33
# (instructions per MAC); the stem is given as a total.
CMSIS_NN_PER_MAC = {"conv 1x1": 3.0, "depthwise 3x3": 8.2, "depthwise 7x7": 8.6}
CMSIS_NN_STEM_INSTRUCTIONS = 10.6e6

# QEMU machine, instructions per SysTick tick, code and RAM regions.
MACHINES = {
    "cortex-m33": ("mps2-an505", 50, 0x10000000, "4M", 0x38000000, "2M"),
    "cortex-m0plus": ("mps2-an385", 40, 0x00000000, "4M", 0x20000000, "4M"),
}

RUNTIME = r"""
#include <stdint.h>
#include <string.h>
extern uint32_t __bss_start, __bss_end, __stack_top, __data_start, __data_end, __data_load;
int main(void);
static int sh_call(int op, const void *arg) {
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}
static void put(const char *s) { sh_call(0x04, s); }
static void put_u(uint32_t v) {
    char b[12];
    int i = 11;
    b[i] = 0;
    do { b[--i] = (char)('0' + v % 10u); v /= 10u; } while (v);
    put(b + i);
}
static volatile uint32_t wraps;
void systick_handler(void) { wraps++; }
#define SYST_CSR (*(volatile uint32_t *)0xE000E010u)
#define SYST_RVR (*(volatile uint32_t *)0xE000E014u)
#define SYST_CVR (*(volatile uint32_t *)0xE000E018u)
static uint32_t ticks(void) { /* monotonic, 24-bit down-counter plus wraps */
    uint32_t w, v;
    do { w = wraps; v = SYST_CVR; } while (w != wraps);
    return (w << 24) + (0xFFFFFFu - v);
}
void rip_reset(void) {
    for (uint32_t *p = &__bss_start; p < &__bss_end; ++p) *p = 0;
    for (uint32_t *d = &__data_start, *s = &__data_load; d < &__data_end;) *d++ = *s++;
    SYST_RVR = 0xFFFFFFu;
    SYST_CVR = 0;
    SYST_CSR = 7u; /* processor clock, interrupt, enable */
    const int fails = main();
    put(fails ? "FAIL\n" : "DONE\n");
    sh_call(0x18, (const void *)(uintptr_t)(fails ? 0x20023 : 0x20026));
    for (;;) {
    }
}
static void hang(void) { for (;;) { } }
__attribute__((section(".vectors"), used)) static const void *const vectors[16] = {
    &__stack_top, (const void *)rip_reset, (const void *)hang, (const void *)hang,
    (const void *)hang, (const void *)hang, (const void *)hang, 0, 0, 0, 0,
    (const void *)hang, (const void *)hang, 0, (const void *)hang,
    (const void *)systick_handler};
"""

LINKER_SCRIPT = """
MEMORY {{ CODE (rx) : ORIGIN = {code:#x}, LENGTH = {code_len}
         RAM (rwx) : ORIGIN = {ram:#x}, LENGTH = {ram_len} }}
ENTRY(rip_reset)
SECTIONS {{
  .text : {{ KEEP(*(.vectors)) *(.text*) *(.rodata*) . = ALIGN(4); }} > CODE
  .data : {{ . = ALIGN(4); __data_start = .; *(.data*) . = ALIGN(4); __data_end = .; }}
          > RAM AT > CODE
  __data_load = LOADADDR(.data);
  .bss (NOLOAD) : {{ . = ALIGN(4); __bss_start = .; *(.bss*) *(COMMON) . = ALIGN(4);
                    __bss_end = .; }} > RAM
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);
}}
"""

CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-mthumb", "-ffunction-sections"]


def c_array(ctype: str, name: str, values) -> str:
    body = ",".join(str(int(v)) for v in np.asarray(values).reshape(-1))
    return f"static const {ctype} {name}[] = {{{body}}};"


def dims(d) -> str:
    return "{" + ", ".join(str(v) for v in d) + "}"


def layer_class(p) -> str:
    _, kh, kw, _ = p.filter_dims
    if p.kind == Op.DEPTHWISE_CONV_2D:
        return f"depthwise {kh}x{kw}"
    if kh == kw == 1:
        return "conv 1x1"
    return f"conv {kh}x{kw} (stem)" if p.input_dims[3] <= 4 else f"conv {kh}x{kw}"


def macs(p) -> int:
    _, kh, kw, c = p.filter_dims
    n, h, w, c_out = p.output_dims
    return n * h * w * c_out * kh * kw * (c if p.kind == Op.CONV_2D else 1)


def model_layers(path: Path):
    from rip.codegen import conv_params as cp
    from rip.compiler import front

    _, graph = front(path)
    for op in graph.operators:
        if op.kind not in CONVOLUTIONS:
            continue
        p = cp.conv_params(graph, op)
        w = graph.tensors[op.inputs[1]].data
        b = None
        if len(op.inputs) > 2 and op.inputs[2] >= 0:
            b = tuple(int(v) for v in np.frombuffer(graph.tensors[op.inputs[2]].data, "<i4"))
        yield p, w, b


def emitted_kernel(p, w: bytes, b, reserved: int):
    """What codegen.lower_conv emits for a layer (a depthwise one in place, as the planner puts
    it): the same codegen functions in the same order. The cheap requantisation proven
    (rip.codegen.requant) gives the _rq kernel with rip_fast_channel records (and, for
    CONV_2D, the filter with negated rows packed in channel pairs); otherwise the fast kernel
    with the folded bias and per-channel quantisation. Returns (choice, filter, bias or None,
    records or None)."""
    import dataclasses

    from rip.codegen import kernel_choice as kc
    from rip.core import kernel_variants as kv

    signed = w
    if p.kind == Op.DEPTHWISE_CONV_2D:
        p = dataclasses.replace(p, fast_channels=kc.fast_channels(p, w, b))
    else:
        found = kc.fast_conv_channels(p, w, b)
        if found is not None:
            p = dataclasses.replace(p, fast_channels=found[0])
            signed = found[1]
    inplace = "channel" if p.kind == Op.DEPTHWISE_CONV_2D else None
    choice = kc.choose_conv_kernel(p, inplace, reserved)
    if choice.function == "rip_conv2d_fast_rq_s8":
        return choice, kc.pack_filter_pairs(signed, p.output_dims[3]), None, p.fast_channels
    filt = w
    if kv.variant(choice.function).depthwise_packed:
        _, kh, kw, c = p.filter_dims
        filt = kc.pack_depthwise_filter(w, kh, kw, c, p.stride[1], p.dilation[1])
    if choice.function.endswith("_rq_s8"):
        return choice, filt, None, p.fast_channels
    return choice, filt, kc.folded_bias(p, w, b), None


def layer_source(layers) -> tuple[str, int, int]:
    """A main() timing the reference kernel and the one the generator emits on every layer;
    the arena and scratch bytes."""
    decls, calls = [], []
    arena = 0
    scratch = max(p.scratch_bytes for p, _, _ in layers)  # the model's reserved scratch
    for k, (p, w, b) in enumerate(layers):
        n_in, n_out = int(np.prod(p.input_dims)), int(np.prod(p.output_dims))
        arena = max(arena, n_in + n_out + 8)
        v = f"l{k}"
        choice, filt, fb, records = emitted_kernel(p, w, b, scratch)
        new = choice.function
        decls.append(c_array("int8_t", f"{v}_w", np.frombuffer(w, np.int8)))
        decls.append(c_array("int32_t", f"{v}_b", b if b is not None else [0] * n_out))
        decls.append(c_array("int32_t", f"{v}_m", p.multipliers))
        decls.append(c_array("int32_t", f"{v}_s", p.shifts))
        # the emitted filter (packed ones are read a word or word pair at a time: aligned)
        packed = c_array("int8_t", f"{v}_wf", np.frombuffer(filt, np.int8))
        decls.append(packed.replace("[] =", "[] __attribute__((aligned(4))) ="))
        if records is None:
            decls.append(c_array("int32_t", f"{v}_fb", fb))
            args = f"&q, &id, a, &fd, {v}_wf, &bd, {v}_fb, &od"
        else:
            body = ",".join("{" + ",".join(str(x) for x in r) + "}" for r in records)
            decls.append(f"static const rip_fast_channel {v}_ch[] = {{{body}}};")
            args = f"{v}_ch, &id, a, &fd, {v}_wf, &od"
        if choice.ring_slots is not None:  # the row-streamed kernel's baked schedule
            decls.append(c_array("int16_t", f"{v}_ring", choice.ring_slots))
            args += f", {v}_ring, {choice.ring_rows}"
        dw = p.kind == Op.DEPTHWISE_CONV_2D
        head = f"""    {{
        const rip_dims id = {dims(p.input_dims)}, fd = {dims(p.filter_dims)},
                       bd = {{{p.output_dims[3]}, 1, 1, 1}}, od = {dims(p.output_dims)};
        const rip_per_channel_quant q = {{{v}_m, {v}_s}};
        uint32_t t0, t1, t2;
        (void)q;
        (void)bd;"""
        if dw:
            call = f"""
        const rip_dw_conv_params pr = {{{p.input_offset}, {p.output_offset}, {dims(p.stride)},
            {dims(p.padding)}, {dims(p.dilation)}, {p.depth_multiplier}, {dims(p.activation)}}};
        fill(a, {n_in}, {k}u);
        t0 = ticks();
        st |= rip_depthwise_conv2d_inplace_s8(&ctx, &pr, &q, &id, a, &fd, {v}_w, &bd, {v}_b, &od);
        t1 = ticks();
        memcpy(ref, a, {n_out});
        fill(a, {n_in}, {k}u);
        t2 = ticks();
        st |= {new}(&ctx, &pr, {args});
        t2 = ticks() - t2;
        same = memcmp(ref, a, {n_out}) == 0;"""
        else:
            call = f"""
        const rip_conv_params pr = {{{p.input_offset}, {p.output_offset}, {dims(p.stride)},
            {dims(p.padding)}, {dims(p.dilation)}, {dims(p.activation)}}};
        fill(a, {n_in}, {k}u);
        t0 = ticks();
        st |= rip_conv2d_s8(&ctx, &pr, &q, &id, a, &fd, {v}_w, &bd, {v}_b, &od, a + {n_in});
        t1 = ticks();
        memcpy(ref, a + {n_in}, {n_out});
        t2 = ticks();
        st |= {new}(&ctx, &pr, {args}, a + {n_in});
        t2 = ticks() - t2;
        same = memcmp(ref, a + {n_in}, {n_out}) == 0;"""
        tail = f"""
        put("L {k} {new} "); put_u(t1 - t0); put(" "); put_u(t2); put(same ? " 1\\n" : " 0\\n");
        fails += !same;
    }}"""
        calls.append(head + call + tail)
    source = "\n".join(
        [
            RUNTIME,
            '#include "rip_conv.h"',
            *decls,
            f"static int8_t a[{arena}] __attribute__((aligned(4)));",
            f"static int8_t ref[{arena}] __attribute__((aligned(4)));",
            f"static int8_t scratch[{scratch + 4}] __attribute__((aligned(4)));",
            # the inputs are generated, not stored: a model's activations outgrow the code region
            "static void fill(int8_t *d, uint32_t n, uint32_t seed) {",
            "    uint32_t x = 2463534242u ^ (seed * 2654435761u);",
            "    for (uint32_t i = 0; i < n; ++i) {",
            "        x ^= x << 13; x ^= x >> 17; x ^= x << 5;",
            "        d[i] = (int8_t)(x >> 24);",
            "    }",
            "}",
            "int main(void) {",
            "    const rip_context ctx = {.buf = scratch, .size = sizeof scratch};",
            "    int fails = 0, st = 0, same;",
            *calls,
            "    return fails + (st != 0);",
            "}",
        ]
    )
    return source, arena, scratch


def build_and_run(cpu: str, opt: str, sources: list[Path], includes: list[Path], work: Path) -> str:
    machine, _, code, code_len, ram, ram_len = MACHINES[cpu]
    ld = work / "link.ld"
    ld.write_text(LINKER_SCRIPT.format(code=code, code_len=code_len, ram=ram, ram_len=ram_len))
    elf = work / f"bench-{cpu}.elf"
    cmd = [
        "arm-none-eabi-gcc",
        *CFLAGS,
        opt,
        f"-mcpu={cpu}",
        "-nostartfiles",
        "-Wl,--gc-sections",
        "-T",
        str(ld),
        *(f"-I{i}" for i in includes),
        *(str(s) for s in sources),
        "-lgcc",
        "-o",
        str(elf),
    ]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"build failed:\n{done.stderr[-4000:]}")
    run = subprocess.run(
        ["qemu-system-arm", "-M", machine, "-display", "none", "-monitor", "none", "-serial",
         "none", "-semihosting", "-icount", "shift=0", "-kernel", str(elf)],
        capture_output=True, text=True, timeout=3600,
    )  # fmt: skip
    return run.stdout + run.stderr


def bench_layers(model: str, cpus: list[str], opt: str) -> None:
    layers = list(model_layers(SHARED / "models" / "mcunet" / f"{model}.tflite"))
    source, _, _ = layer_source(layers)
    for cpu in cpus:
        per_tick = MACHINES[cpu][1]
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            (work / "bench.c").write_text(source)
            out = build_and_run(
                cpu,
                opt,
                [work / "bench.c", *sorted(KERNELS.glob("*.c"))],
                [KERNELS],
                work,
            )
        rows = [line.split() for line in out.splitlines() if line.startswith("L ")]
        if len(rows) != len(layers) or "DONE" not in out:
            print(out[-2000:])
            sys.exit(f"{cpu}: the run did not finish cleanly")
        by_class = defaultdict(lambda: [0, 0, 0, 0])
        kernels: dict[str, int] = defaultdict(int)
        mismatches = 0
        print(f"\n{model} on {cpu} ({MACHINES[cpu][0]}, {opt}, {per_tick} instructions/tick)")
        print(f"{'layer':>5} {'class':<18} {'shape (in -> out, stride)':<34} {'MACs':>9} "
              f"{'old instr':>11} {'new instr':>11} {'old/MAC':>8} {'new/MAC':>8}")  # fmt: skip
        for (p, _, _), row in zip(layers, rows, strict=True):
            k, kernel, old, new = int(row[1]), row[2], int(row[3]), int(row[4])
            same = row[5] == "1"
            kernels[kernel] += 1
            mismatches += not same
            m = macs(p)
            old_i, new_i = old * per_tick, new * per_tick
            cls = layer_class(p)
            acc = by_class[cls]
            acc[0] += m
            acc[1] += old_i
            acc[2] += new_i
            acc[3] += 1
            shape = f"{p.input_dims[1:]}->{p.output_dims[1:]} s{p.stride[0]}"
            flag = "" if same else "  MISMATCH"
            print(f"{k:>5} {cls:<18} {shape:<34} {m:>9} {old_i:>11} {new_i:>11} "
                  f"{old_i / m:>8.2f} {new_i / m:>8.2f}{flag}")  # fmt: skip
        print(f"\n{'class':<18} {'layers':>6} {'MACs':>10} {'old instr':>12} {'new instr':>12} "
              f"{'old/MAC':>8} {'new/MAC':>8} {'CMSIS-NN/MAC (M33)':>19}")  # fmt: skip
        total = [0, 0, 0]
        for cls, (m, old_i, new_i, n) in sorted(by_class.items()):
            ref = CMSIS_NN_PER_MAC.get(cls)
            if ref is None and "stem" in cls and model == "person-det":
                ref = CMSIS_NN_STEM_INSTRUCTIONS / m
            ref_s = f"{ref:.1f}" if ref is not None else "-"
            print(f"{cls:<18} {n:>6} {m:>10} {old_i:>12} {new_i:>12} {old_i / m:>8.2f} "
                  f"{new_i / m:>8.2f} {ref_s:>19}")  # fmt: skip
            total[0] += m
            total[1] += old_i
            total[2] += new_i
        m_all = total[0]
        print(f"{'all conv + dw':<18} {len(layers):>6} {m_all:>10} {total[1]:>12} "
              f"{total[2]:>12} {total[1] / m_all:>8.2f} {total[2] / m_all:>8.2f}")  # fmt: skip
        print("new = the kernel the generator emits: "
              + ", ".join(f"{n} x {name}" for name, n in sorted(kernels.items())))  # fmt: skip
        print(f"outputs old == new on every layer: {mismatches == 0}")


# ---- whole models ----------------------------------------------------------------------------

WHOLE_MAIN = r"""
#include "model.h"
#include "rip_crc32.h"
int main(void) {
    rip_model_load_default_input();
    const uint32_t t0 = ticks();
    const int status = rip_model_invoke();
    const uint32_t dt = ticks() - t0;
    uint32_t crc = 0;
    for (int i = 0; i < RIP_MODEL_NUM_OUTPUTS; i++) {
        crc = rip_crc32_update(crc, rip_model_output(i), rip_model_output_bytes(i));
    }
    put("W "); put_u(dt); put(" "); put_u(crc); put(" "); put_u((uint32_t)status); put("\n");
    return status != 0;
}
"""


def generate(model_path: Path, out: Path, fast: bool) -> str:
    """The host project of one model (rip's plan for the host board, its C, the kernels),
    as the compiler driver makes it, with the reference kernels in place of the fast ones
    unless ``fast``; its expected checksum (TFLite Micro's)."""
    from rip import compiler
    from rip.boards import load_board
    from rip.codegen import kernel_choice, lower_conv
    from rip.core.terms import Strategy

    def reference_choice(p, inplace, reserved_scratch=None):
        ch = inplace == "channel"
        if p.kind == Op.CONV_2D:
            return kernel_choice.KernelChoice("rip_conv2d_s8", False, "reference")
        name = "rip_depthwise_conv2d_inplace_s8" if ch else "rip_depthwise_conv2d_s8"
        return kernel_choice.KernelChoice(name, False, "reference")

    host = load_board("host")
    options = compiler.Options(strategies=(Strategy.RIP,), cache=False)
    c = compiler.analyse(model_path, host, options)
    chooser = kernel_choice.choose_conv_kernel if fast else reference_choice
    with mock.patch.object(lower_conv, "choose_conv_kernel", chooser):
        emitted = compiler.emit(c)
    ref = compiler.reference(model_path, c.graph)
    compiler.write_project(host, c.graph, emitted, out, ref)
    return f"0x{ref.checksum:08x}"


def bench_whole(models: list[str], cpus: list[str], opt: str) -> None:
    ref = {m["model"]: m for m in json.loads(REFERENCE.read_text())["models"]}
    print(f"\n{'model':<16} {'cpu':<14} {'old instr':>12} {'new instr':>12} {'new/old':>8} "
          f"{'CMSIS-NN':>12} {'new/CMSIS':>9} {'crc ok':>6}")  # fmt: skip
    for model in models:
        path = SHARED / "models" / "mcunet" / f"{model}.tflite"
        for cpu in cpus:
            per_tick = MACHINES[cpu][1]
            counts = []
            ok = True
            for fast in (False, True):
                with tempfile.TemporaryDirectory() as tmp:
                    work = Path(tmp)
                    expected = generate(path, work / "proj", fast)
                    (work / "main.c").write_text(RUNTIME + WHOLE_MAIN)
                    kern = work / "proj" / "kernels"
                    model_c = sorted((work / "proj").glob("model*.c"))  # model.c, model_data.c
                    out = build_and_run(
                        cpu,
                        opt,
                        [work / "main.c", *model_c, *sorted(kern.glob("*.c"))],
                        [work / "proj", kern],
                        work,
                    )
                line = next((x.split() for x in out.splitlines() if x.startswith("W ")), None)
                if line is None or line[3] != "0":
                    print(out[-2000:])
                    sys.exit(f"{model} on {cpu}: no result")
                counts.append(int(line[1]) * per_tick)
                ok &= f"0x{int(line[2]):08x}" == expected
            key = "tflm_cmsis_nn_instructions" + ("" if cpu == "cortex-m33" else "_armv6m")
            cmsis = ref.get(model, {}).get(key)
            cm = f"{cmsis:>12}" if cmsis else f"{'-':>12}"
            ratio = f"{counts[1] / cmsis:>9.3f}" if cmsis else f"{'-':>9}"
            print(f"{model:<16} {cpu:<14} {counts[0]:>12} {counts[1]:>12} "
                  f"{counts[1] / counts[0]:>8.3f} {cm} {ratio} {ok!s:>6}")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="person-det")
    ap.add_argument("--cpu", nargs="+", default=list(MACHINES), choices=list(MACHINES))
    ap.add_argument("--opt", default="-O3")
    ap.add_argument("--whole", nargs="*", default=None, help="whole models instead of layers")
    args = ap.parse_args()
    for tool in ("arm-none-eabi-gcc", "qemu-system-arm"):
        if shutil.which(tool) is None:
            sys.exit(f"{tool} is not installed (apt: gcc-arm-none-eabi qemu-system-arm)")
    if args.whole is not None:
        bench_whole(args.whole or [args.model], args.cpu, args.opt)
    else:
        bench_layers(args.model, args.cpu, args.opt)


if __name__ == "__main__":
    main()
