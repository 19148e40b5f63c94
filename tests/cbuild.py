"""One C build harness for the kernel, lowering and firmware tests.

- the kernels as a host shared library with a ctypes mirror of every struct and signature
  (`kernel_library`, and the session fixture `kernel_lib`);
- the kernels as host objects that small test programs link (`kernel_objects`, fixture
  `kernel_objs`), and `build_and_run` for such a program;
- arm-none-eabi-gcc for the Pico cores (`arm_gcc`, `cross_compile`) and bare-metal
  programs under QEMU (`qemu_program`, `run_qemu`): a semihosting prelude, a linker script
  and the emulated machine of each core.

A kernel's C signature changes here and nowhere else in the tests.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

KERNELS = Path(__file__).resolve().parents[1] / "kernels"
# The weighted families (rip_conv.h), one source each, with their support, then pooling.
SPATIAL = ("rip_conv_support.c", "rip_conv2d.c", "rip_conv2d_fast.c", "rip_conv2d_gemv.c",
           "rip_conv2d_grouped.c", "rip_depthwise.c", "rip_depthwise_fast.c",
           "rip_depthwise_inplace_fast.c", "rip_depthwise_inplace_rows_fast.c",
           "rip_depthwise_row_fast.c", "rip_dw_row_engine.c", "rip_fully_connected.c",
           "rip_fully_connected_fast.c", "rip_pool.c", "rip_cores.c")  # fmt: skip
ELEMENTWISE = ("rip_elementwise.c", "rip_activation.c", "rip_shape.c", "rip_reduce.c")
RESAMPLE = (
    "rip_resample.c",
    "rip_norm.c",
    "rip_matmul.c",
    "rip_svdf.c",
    "rip_state.c",
    "rip_float.c",
    "rip_wide.c",
)
SOURCES = (*SPATIAL, *ELEMENTWISE, *RESAMPLE)
CFLAGS = ("-std=c99", "-Wall", "-Wextra", "-Werror")
ARM_CPUS = ("cortex-m0plus", "cortex-m33")
GCC = shutil.which("gcc")
# Host builds fill every uninitialised local with a pattern (GCC 12+), so that a field a
# caller forgot (a context's share) is garbage in every test, not zero by luck; the
# generated host projects take it through their Makefile's EXTRA_CFLAGS (conftest.py).
PATTERN_INIT = "-ftrivial-auto-var-init=pattern"


def _accepts(flag: str) -> bool:
    if GCC is None:
        return False
    proc = subprocess.run([GCC, flag, "-x", "c", "-c", "-o", os.devnull, "-"], input="int x;\n",
                          capture_output=True, text=True, check=False)  # fmt: skip
    return proc.returncode == 0


HOST_INIT = (PATTERN_INIT,) if _accepts(PATTERN_INIT) else ()
ARM_GCC = shutil.which("arm-none-eabi-gcc")
ARM_OBJDUMP = shutil.which("arm-none-eabi-objdump")
QEMU = shutil.which("qemu-system-arm")
NEED_ARM = "arm-none-eabi-gcc is not installed (apt: gcc-arm-none-eabi)"
NEED_QEMU = (
    "needs arm-none-eabi-gcc and qemu-system-arm (apt: gcc-arm-none-eabi "
    "libnewlib-arm-none-eabi qemu-system-arm)"
)


def compile_c(command: Sequence[str], context: str = "") -> str:
    """Run a compiler; on failure, fail the test with its diagnostics (and ``context``).
    Its diagnostics otherwise (warnings that no -Werror turns into errors)."""
    done = subprocess.run(list(command), capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + context
    return done.stderr


# ---- ctypes mirrors of the kernels' structs (field order is the C order) -------------------

I32 = ctypes.c_int32
P = ctypes.c_void_p


def struct(name: str, *fields: tuple[str, Any]) -> type[ctypes.Structure]:
    return type(name, (ctypes.Structure,), {"_fields_": list(fields)})


def ptr(t: type) -> Any:
    return ctypes.POINTER(t)


# rip_common.h
Dims = struct("Dims", ("n", I32), ("h", I32), ("w", I32), ("c", I32))
HW = struct("HW", ("h", I32), ("w", I32))
Act = struct("Act", ("min", I32), ("max", I32))
Context = struct("Context", ("buf", P), ("size", I32), ("share", I32))
PerChannelQuant = struct("PerChannelQuant", ("multiplier", P), ("shift", P))
Quant = struct("Quant", ("multiplier", I32), ("shift", I32))
# rip_conv_types.h
ConvParams = struct("ConvParams", ("input_offset", I32), ("output_offset", I32),
                    ("stride", HW), ("padding", HW), ("dilation", HW),
                    ("activation", Act))  # fmt: skip
DwConvParams = struct("DwConvParams", ("input_offset", I32), ("output_offset", I32),
                      ("stride", HW), ("padding", HW), ("dilation", HW),
                      ("depth_multiplier", I32), ("activation", Act))  # fmt: skip
FastChannel = struct("FastChannel", ("bias", I32), ("multiplier", I32), ("round", I32),
                     ("shift", I32))  # fmt: skip
FcParams = struct("FcParams", ("input_offset", I32), ("output_offset", I32), ("activation", Act),
                  ("filter_offset", I32))  # fmt: skip
# rip_pool.h
PoolParams = struct("PoolParams", ("stride", HW), ("padding", HW), ("activation", Act),
                    ("pad_counts", I32), ("pad_value", I32))  # fmt: skip
MeanParams = struct("MeanParams", ("input_offset", I32), ("output_offset", I32),
                    ("multiplier", I32), ("shift", I32))  # fmt: skip
# rip_elementwise.h
AddParams = struct("AddParams", ("input1_offset", I32), ("input2_offset", I32),
                   ("output_offset", I32), ("left_shift", I32), ("input1", Quant),
                   ("input2", Quant), ("output", Quant), ("activation_min", I32),
                   ("activation_max", I32), ("terms", ptr(I32)))  # fmt: skip
MulParams = struct("MulParams", ("input1_offset", I32), ("input2_offset", I32),
                   ("output_offset", I32), ("output", Quant), ("activation_min", I32),
                   ("activation_max", I32))  # fmt: skip
# rip_activation.h
RequantizeParams = struct("RequantizeParams", ("input_offset", I32), ("output_offset", I32),
                          ("quant", Quant), ("activation_min", I32), ("activation_max", I32),
                          ("clamp_only", I32))  # fmt: skip
SigmoidParams = struct("SigmoidParams", ("input_zero_point", I32), ("input_range_radius", I32),
                       ("input_multiplier", I32), ("input_left_shift", I32))  # fmt: skip
HardSwishParams = struct("HardSwishParams", *[(name, I32) for name in (
    "input_zero_point", "output_zero_point", "output_multiplier_fixedpoint_int16",
    "output_multiplier_exponent", "reluish_multiplier_fixedpoint_int16",
    "reluish_multiplier_exponent")])  # fmt: skip
SoftmaxParams = struct("SoftmaxParams", ("input_multiplier", I32), ("input_left_shift", I32),
                       ("diff_min", I32))  # fmt: skip
# rip_shape.h
ResizeParams = struct("ResizeParams", *[(name, I32) for name in (
    "align_corners", "half_pixel_centers", "scale_h", "scale_w", "reverse")])  # fmt: skip
ConcatParams = struct("ConcatParams", ("num_inputs", I32), ("outer_size", I32),
                      ("inner_size", I32), ("axis_sizes", ptr(I32)),
                      ("requantize", ptr(ptr(RequantizeParams))))  # fmt: skip
TransposeParams = struct("TransposeParams", ("perm", I32 * 5), ("dims", I32 * 5))
PadParams = struct("PadParams", ("before", Dims), ("after", Dims), ("pad_value", I32))

D, CTX = ptr(Dims), ptr(Context)
STATUS = ctypes.c_int  # rip_status
WEIGHTED = [D, P, D, P, D, P, D]  # input, filter, bias and output dims with their data
POOLED = [D, P, D, D, P]  # input dims and data, filter dims, output dims and data
BINARY = [I32, P, I32, P, I32, P]  # each operand's size, then its data; the output likewise
UNARY = [I32, P, P]  # size, input, output
SIGNATURES: dict[str, tuple[Any, list[Any]]] = {
    "rip_conv2d_s8_get_buffer_size": (I32, [D, D]),
    "rip_conv2d_s8": (STATUS, [CTX, ptr(ConvParams), ptr(PerChannelQuant), *WEIGHTED, P]),
    "rip_conv2d_grouped_s8_get_buffer_size": (I32, [D, D]),
    "rip_conv2d_grouped_s8": (
        STATUS, [CTX, ptr(ConvParams), ptr(PerChannelQuant), *WEIGHTED, P]
    ),
    "rip_depthwise_conv2d_inplace_s8_get_buffer_size": (I32, [D]),
    "rip_depthwise_conv2d_s8": (
        STATUS, [CTX, ptr(DwConvParams), ptr(PerChannelQuant), *WEIGHTED, P]),
    "rip_depthwise_conv2d_inplace_s8": (
        STATUS, [CTX, ptr(DwConvParams), ptr(PerChannelQuant), *WEIGHTED]),
    "rip_conv2d_fast_s8_get_buffer_size": (I32, [D, D]),
    "rip_conv2d_fast_s8": (STATUS, [CTX, ptr(ConvParams), ptr(PerChannelQuant), *WEIGHTED, P]),
    "rip_conv2d_fast_rq_s8_get_buffer_size": (I32, [D, D]),
    "rip_conv2d_fast_rq_s8": (
        STATUS, [CTX, ptr(ConvParams), P, D, P, D, P, D, P]),
    "rip_depthwise_conv2d_fast_s8": (
        STATUS, [CTX, ptr(DwConvParams), ptr(PerChannelQuant), *WEIGHTED, P]),
    "rip_depthwise_conv2d_inplace_fast_s8": (
        STATUS, [CTX, ptr(DwConvParams), ptr(PerChannelQuant), *WEIGHTED]),
    "rip_depthwise_conv2d_inplace_rows_fast_s8_get_buffer_size": (
        I32, [ptr(DwConvParams), D, D, D]),
    "rip_depthwise_conv2d_scratch_get_buffer_size": (I32, [ptr(DwConvParams), D, D, D]),
    "rip_depthwise_conv2d_inplace_rows_fast_s8": (
        STATUS, [CTX, ptr(DwConvParams), ptr(PerChannelQuant), *WEIGHTED, P, I32]),
    "rip_depthwise_conv2d_fast_rq_s8": (
        STATUS, [CTX, ptr(DwConvParams), P, D, P, D, P, D, P]),
    "rip_depthwise_conv2d_inplace_fast_rq_s8": (
        STATUS, [CTX, ptr(DwConvParams), P, D, P, D, P, D]),
    "rip_depthwise_conv2d_inplace_rows_fast_rq_s8": (
        STATUS, [CTX, ptr(DwConvParams), P, D, P, D, P, D, P, I32]),
    "rip_fully_connected_s8": (STATUS, [CTX, ptr(FcParams), ptr(Quant), *WEIGHTED, P]),
    "rip_fully_connected_per_channel_s8": (
        STATUS, [CTX, ptr(FcParams), ptr(PerChannelQuant), *WEIGHTED, P]),
    "rip_fully_connected_fast_rq_s8": (STATUS, [CTX, ptr(FcParams), P, D, P, D, P, D, P]),
    "rip_conv2d_gemv_rq_s8": (STATUS, [CTX, ptr(ConvParams), P, D, P, D, P, D, P]),
    "rip_avg_pool_s8_get_buffer_size": (I32, [D]),
    "rip_max_pool_s8_get_buffer_size": (I32, [D]),
    "rip_global_avg_pool_s8_get_buffer_size": (I32, [D]),
    "rip_avg_pool_s8": (STATUS, [CTX, ptr(PoolParams), *POOLED]),
    "rip_max_pool_s8": (STATUS, [CTX, ptr(PoolParams), *POOLED]),
    "rip_global_avg_pool_s8": (STATUS, [CTX, ptr(MeanParams), D, P, D, P]),
    "rip_add_s8": (STATUS, [ptr(AddParams), *BINARY]),
    "rip_sub_s8": (STATUS, [ptr(AddParams), *BINARY]),
    "rip_mul_s8": (STATUS, [ptr(MulParams), *BINARY]),
    "rip_relu_s8": (STATUS, [ptr(RequantizeParams), *UNARY]),
    "rip_quantize_s8": (STATUS, [ptr(RequantizeParams), *UNARY]),
    "rip_logistic_s8": (STATUS, [ptr(SigmoidParams), *UNARY]),
    "rip_tanh_s8": (STATUS, [ptr(SigmoidParams), *UNARY]),
    "rip_hard_swish_s8": (STATUS, [ptr(HardSwishParams), *UNARY]),
    "rip_softmax_s8": (STATUS, [ptr(SoftmaxParams), I32, I32, P, P]),
    "rip_resize_nearest_s8": (STATUS, [ptr(ResizeParams), D, P, D, P]),
    "rip_concatenation_s8": (STATUS, [ptr(ConcatParams), P, P]),
    "rip_transpose_s8": (STATUS, [ptr(TransposeParams), P, P]),
    "rip_pad_s8": (STATUS, [ptr(PadParams), D, P, P]),
}  # fmt: skip


# ---- host builds -----------------------------------------------------------------------------


def need_gcc() -> str:
    if GCC is None:
        pytest.skip("no host gcc to build the kernels")
    return GCC


def kernel_library(out_dir: Path) -> ctypes.CDLL:
    """Every kernel source as one host shared library, signatures set."""
    out = out_dir / "librip_kernels.so"
    compile_c([need_gcc(), "-shared", "-fPIC", *CFLAGS, *HOST_INIT, "-O2",
               *(str(KERNELS / s) for s in SOURCES), "-o", str(out)])  # fmt: skip
    lib = ctypes.CDLL(str(out))
    for name, (restype, argtypes) in SIGNATURES.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = restype, argtypes
    return lib


def kernel_objects(out_dir: Path) -> list[Path]:
    """Every kernel source compiled for the host with -O2, for test programs to link."""
    objects = []
    for source in SOURCES:
        obj = out_dir / f"{source}.o"
        compile_c(
            [need_gcc(), *CFLAGS, *HOST_INIT, "-O2", "-c", str(KERNELS / source), "-o", str(obj)]
        )
        objects.append(obj)
    return objects


@pytest.fixture(scope="session")
def kernel_lib(tmp_path_factory: pytest.TempPathFactory) -> ctypes.CDLL:
    """The kernels as a host shared library, built once per session."""
    return kernel_library(tmp_path_factory.mktemp("kernel_lib"))


@pytest.fixture(scope="session")
def kernel_objs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The kernels as host objects, compiled once per session."""
    return kernel_objects(tmp_path_factory.mktemp("kernel_objs"))


def build_and_run(
    source: str, objects: Sequence[Path], workdir: Path, opt: str = "-O1", cross: bool = False
) -> tuple[int, bytes]:
    """Compile a test program with -Werror against the kernels, run it: (exit status,
    stdout bytes). ``cross``: also compile it for both Pico cores when the Arm toolchain is
    installed."""
    c_file, exe = workdir / "prog.c", workdir / "prog"
    c_file.write_text(source)
    compile_c([need_gcc(), *CFLAGS, *HOST_INIT, opt, f"-I{KERNELS}", str(c_file),
               *map(str, objects), "-o", str(exe)], source)  # fmt: skip
    if cross and ARM_GCC is not None:
        for cpu in ARM_CPUS:
            cross_compile(c_file, cpu, workdir / f"prog_{cpu}.o")
    result = subprocess.run([str(exe)], capture_output=True, timeout=60)
    return result.returncode, result.stdout


# ---- the Pico cores ----------------------------------------------------------------------------


def arm_gcc(cpu: str, *args: str, std: str = "-std=c99", opt: str = "-O2") -> None:
    """arm-none-eabi-gcc for ``cpu`` with the warnings as errors, the assembler's too (a
    hand-written loop's register list out of order is only printed, never fatal, and a
    Pico SDK build of the kernels would print it); fails with its output."""
    if ARM_GCC is None:
        pytest.skip(NEED_ARM)
    err = compile_c([ARM_GCC, f"-mcpu={cpu}", "-mthumb", opt, std, *CFLAGS[1:], *args], f" ({cpu})")
    assert "Warning:" not in err, err[:2000] + f" ({cpu})"


def cross_compile(source: Path, cpu: str, obj: Path, *includes: Path, opt: str = "-O2") -> Path:
    """One C file to an object for ``cpu`` (the kernels' directory is on the include path)."""
    arm_gcc(cpu, f"-I{KERNELS}", *(f"-I{i}" for i in includes), "-c", str(source),
            "-o", str(obj), opt=opt)  # fmt: skip
    return obj


def disassemble(obj: Path) -> str | None:
    """objdump -d of an object, None without the tool."""
    if ARM_OBJDUMP is None:
        return None
    return subprocess.run([ARM_OBJDUMP, "-d", str(obj)], capture_output=True, text=True).stdout


# A bare-metal prelude: a two-word vector table, .bss zeroing, and semihosting (BKPT 0xAB) to
# print the verdict of `int main(void)` (0: PASS) and exit (SYS_EXIT with ApplicationExit
# makes QEMU return 0). `check` compares a kernel's status and output with the expected bytes.
SEMIHOSTED_PRELUDE = r"""
#include <stdint.h>
#include <string.h>
extern uint32_t __bss_start, __bss_end, __stack_top;
int main(void);
static int sh_call(int op, const void *arg) {
    register int r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}
void rip_reset(void) {
    for (uint32_t *p = &__bss_start; p < &__bss_end; ++p) *p = 0;
    const int fails = main();
    sh_call(0x04, fails ? "FAIL\n" : "PASS\n");
    sh_call(0x18, (const void *)(uintptr_t)(fails ? 0x20023 : 0x20026));
    for (;;) {
    }
}
__attribute__((section(".vectors"), used)) static const void *const vectors[2] = {
    &__stack_top, (const void *)rip_reset};
static int check(const char *name, int status, const int8_t *got, const int8_t *want, size_t n) {
    if (status == 0 && memcmp(got, want, n) == 0) return 0;
    sh_call(0x04, name);
    sh_call(0x04, " differs\n");
    return 1;
}
"""

LINKER_SCRIPT = """
MEMORY {{ CODE (rx) : ORIGIN = {code:#x}, LENGTH = {code_len}
         RAM (rwx) : ORIGIN = {ram:#x}, LENGTH = {ram_len} }}
ENTRY(rip_reset)
SECTIONS {{
  .text : {{ KEEP(*(.vectors)) *(.text*) *(.rodata*) }} > CODE
  .data : {{ *(.data*) }} > RAM
  .bss (NOLOAD) : {{ . = ALIGN(4); __bss_start = .; *(.bss*) *(COMMON) . = ALIGN(4);
                    __bss_end = .; }} > RAM
  __stack_top = ORIGIN(RAM) + LENGTH(RAM);
}}
"""

# QEMU machine, code origin and length, RAM origin and length. The MPS2 AN505 is a Cortex-M33
# like the RP2350's cores; the micro:bit a Cortex-M0, the RP2040's instruction set (ARMv6-M).
MACHINES = {
    "cortex-m33": ("mps2-an505", 0x10000000, "1M", 0x38000000, "1M"),
    "cortex-m0plus": ("microbit", 0x0, "256K", 0x20000000, "16K"),
}


def need_qemu() -> str:
    if ARM_GCC is None or QEMU is None:
        pytest.skip(NEED_QEMU)
    return QEMU


def run_qemu(machine: str, elf: Path, *args: str, timeout: float = 120) -> tuple[int, str]:
    """Boot ``elf`` on an emulated ``machine`` with semihosting: (exit status, output)."""
    run = subprocess.run([need_qemu(), "-M", machine, "-display", "none", "-semihosting",
                          *args, "-kernel", str(elf)],
                         capture_output=True, text=True, timeout=timeout, check=False)  # fmt: skip
    return run.returncode, run.stdout + run.stderr


def qemu_program(body: str, cpu: str, workdir: Path, sources: Sequence[Path] = ()) -> str:
    """Build ``body`` (C after SEMIHOSTED_PRELUDE, defining ``int main(void)``: 0 passes) with
    the kernels for ``cpu``, run it on that core's QEMU machine; its output. The test asserts
    "PASS" in it."""
    need_qemu()
    machine, code, code_len, ram, ram_len = MACHINES[cpu]
    (workdir / "harness.c").write_text(SEMIHOSTED_PRELUDE + body)
    (workdir / "link.ld").write_text(
        LINKER_SCRIPT.format(code=code, code_len=code_len, ram=ram, ram_len=ram_len)
    )
    elf = workdir / "harness.elf"
    arm_gcc(cpu, "-nostartfiles", "-T", str(workdir / "link.ld"), f"-I{KERNELS}",
            str(workdir / "harness.c"), *map(str, sources),
            *(str(KERNELS / s) for s in SOURCES), "-o", str(elf))  # fmt: skip
    status, output = run_qemu(machine, elf, "-monitor", "none", "-serial", "none", timeout=60)
    return output if status == 0 else f"exit {status}\n{output}"
