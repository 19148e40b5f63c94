"""Emulated boards: the emitted model as a bare-metal project for a QEMU machine, built with
arm-none-eabi-gcc.

The Pico boards get their runtime from the Pico SDK; the emulated boards get a small one of
our own (``templates/qemu/``: vector table, reset handler, linker script, CMSDK UART
driver, SysTick instruction counter, semihosting exit), so that the same model code and
kernels, compiled with the flags of the matching Pico build, can be run and measured in CI.
The firmware prints the result line of ``rip.firmware.result`` once and ends the emulation.

A model emitted for two cores (``EmittedModel.cores == 2``, issue 27) runs on the board's
two-core machine (``qemu_machine_dual``, ``dual_board``): core 0 starts core 1 into
``rip_model_core1_run()``, and the host measures the critical path (``rip.timing.two_core``).

A profiling build puts a SysTick mark before every op (and before its planned right
shift, so that a shift's memmove has its own figure) by prefixing each op's call in a copy
of the emitted model: model.c's template and the kernels stay as they are.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from rip.boards import Board
from rip.codegen.emit import EmittedModel
from rip.codegen.templating import render
from rip.core import jsonio
from rip.core.errors import EmulatedFitError, RipError
from rip.core.operators import Op
from rip.firmware.host_project import BuildError, copy_kernels, write_expected
from rip.firmware.result import (
    ERROR_PREFIX,
    INSTRUCTIONS,
    PREFIX,
    Result,
    c_result_fields,
)
from rip.firmware.tools import run_tool
from rip.frontend.ir import Graph

GCC_HINT = "apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi"


@dataclass(frozen=True)
class ProfileMark:
    """What the instructions from one profiling mark to the next were spent on: op
    ``op`` itself (``part`` "op") or its planned right shift (``part`` "shift")."""

    op: int
    part: str


def require_qemu(board: Board) -> None:
    """A RipError unless the board file describes a QEMU machine completely."""
    missing = [
        key
        for key in ("qemu_machine", "code_origin", "code_bytes", "ram_origin", "uart_base",
                    "instructions_per_tick")
        if getattr(board, key) is None
    ]  # fmt: skip
    if missing:
        raise RipError(f"board {board.name!r} is not an emulated board (no {', '.join(missing)})")


def model_cores(model: EmittedModel) -> int:
    """The cores the emitted model runs on (1 for a model of before issue 27)."""
    return int(getattr(model, "cores", 1))


def dual_board(board: Board) -> Board:
    """``board`` on its two-core machine: ``qemu_machine_dual`` and its memory map in place
    of the one-core machine's (the same board when it already is)."""
    if not board.qemu_machine_dual or None in (
        board.dual_code_origin, board.dual_ram_origin, board.dual_uart_base,
        board.dual_sysctl_base,
    ):  # fmt: skip
        raise RipError(f"board {board.name!r} has no two-core machine (qemu_machine_dual)")
    return replace(
        board,
        qemu_machine=board.qemu_machine_dual,
        code_origin=board.dual_code_origin,
        ram_origin=board.dual_ram_origin,
        uart_base=board.dual_uart_base,
        qemu_globals=board.dual_qemu_globals,
    )


def qemu_args(board: Board) -> list[str]:
    """qemu-system-arm's arguments for the board, without -serial and -kernel: no display,
    no monitor, semihosting for the exit, one instruction per ns of virtual time."""
    return [
        "-M",
        str(board.qemu_machine),
        "-display",
        "none",
        "-monitor",
        "none",
        "-semihosting",
        "-icount",
        "shift=0",
        *(arg for g in board.qemu_globals for arg in ("-global", g)),
    ]


def macs(graph: Graph) -> int:
    """Multiply-accumulates of one inference: CONV_2D (output elements x kh x kw x input
    channels per group), DEPTHWISE_CONV_2D (output elements x kh x kw) and
    FULLY_CONNECTED (output elements x input features), as the reference file counts."""
    total = 0
    for op in graph.operators:
        if op.kind not in (Op.CONV_2D, Op.GROUPED_CONV_2D, Op.DEPTHWISE_CONV_2D,
                           Op.FULLY_CONNECTED):  # fmt: skip
            continue
        out = graph.tensors[op.outputs[0]].shape
        filt = graph.tensors[op.inputs[1]].shape
        n = 1
        for d in out:
            n *= d
        if op.kind in (Op.CONV_2D, Op.GROUPED_CONV_2D):
            n *= filt[1] * filt[2] * filt[3]
        elif op.kind == Op.DEPTHWISE_CONV_2D:
            n *= filt[1] * filt[2]
        else:
            n *= filt[-1]
        total += n
    return total


def profiled(model: EmittedModel) -> tuple[EmittedModel, list[ProfileMark]]:
    """A copy of ``model`` whose every op (and planned shift) starts with a SysTick mark,
    and what each mark measures. Mark 0 is set by main.c just before the invoke; the last
    mark just after it."""
    marks: list[ProfileMark] = []
    ops = []
    for op in model.ops:
        prefix = ""
        if op.shift is not None:
            src, dst, nbytes = op.shift
            marks.append(ProfileMark(op.index, "shift"))
            prefix += (
                f"rip_profile_mark({len(marks) - 1});\n"
                f"memmove(rip_arena + {dst}, rip_arena + {src}, {nbytes}u); "
                "/* planned right shift */\n"
            )
        marks.append(ProfileMark(op.index, "op"))
        prefix += f"rip_profile_mark({len(marks) - 1});\n"
        ops.append(replace(op, shift=None, call=prefix + op.call))
    # mark 0 is main's: the first op's own mark overwrites it a few instructions later
    return replace(model, ops=tuple(ops), headers=(*model.headers, "rip_qemu.h")), marks


def write_qemu_project(
    model: EmittedModel,
    out: Path,
    board: Board,
    checksum: int | None,
    profile: bool = False,
    model_macs: int | None = None,
) -> list[ProfileMark]:
    """The bare-metal project for ``model`` on the emulated ``board`` in ``out``: main.c,
    startup.c, rip_qemu.h, link.ld, Makefile, README.md, model.c/model.h, model_data.c/.h,
    kernels/ and expected.json (``checksum``: TFLite Micro's CRC-32 on the default input, or None).
    ``profile`` adds a SysTick mark per op; the marks are returned, in order. A two-core
    model gets the board's two-core machine (``dual_board``)."""
    require_qemu(board)
    cores = model_cores(model)
    if cores == 2:
        board = dual_board(board)
        if profile:  # SysTick counts both cores' instructions together (main.c.j2)
            raise RipError("a profiling build runs one core only: SysTick cannot time two")
    elif cores != 1:
        raise RipError(f"the emulated boards run one or two cores, not {cores}")
    marks: list[ProfileMark] = []
    if profile:
        model, marks = profiled(model)
    out.mkdir(parents=True, exist_ok=True)
    fields = c_result_fields(board.name, INSTRUCTIONS, "instructions", stack_expr="stack_bytes",
                             cores=cores)  # fmt: skip
    example = Result(model.name, board.name, model.strategy, model.arena_bytes, 0, 0,
                     INSTRUCTIONS, stack=0, cores=cores if cores > 1 else None).line()  # fmt: skip
    ctx = {
        "m": model,
        "board": board,
        "fields": fields,
        "prefix": PREFIX,
        "error_prefix": ERROR_PREFIX,
        "result_example": example.replace("checksum=0x00000000", "checksum=0x<crc32>")
        .replace("instructions=0", "instructions=<n>" if cores == 1 else "instructions=0")
        .replace("stack=0", "stack=<bytes>"),
        "profile": profile,
        "profile_marks": len(marks),
        "qemu_args": qemu_args(board),
        "checksum": checksum,
        "cores": cores,
    }
    files = dict(model.files)
    for name in ("main.c", "startup.c", "rip_qemu.h", "link.ld", "Makefile", "README.md"):
        files[name] = render(f"qemu/{name}.j2", **ctx)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    copy_kernels(out)
    write_expected(model, out, board.name, checksum)
    expected = out / "expected.json"
    data = jsonio.loads(expected.read_text(encoding="utf-8"))
    data["qemu_machine"] = board.qemu_machine
    data["instructions_per_tick"] = board.instructions_per_tick
    if cores > 1:  # absent for one core: those projects stay as they were
        data["cores"] = cores
    if model_macs is not None:
        data["macs"] = model_macs
    if profile:
        data["profile_marks"] = [{"op": k.op, "part": k.part} for k in marks]
    expected.write_text(jsonio.dumps(data, indent=2) + "\n", encoding="utf-8")
    return marks


_OVERFLOW = re.compile(r"region [`'](\w+)' overflowed by (\d+) bytes|RAM overflowed: no room")


def build_qemu_project(out: Path, board: Board) -> Path:
    """``make`` in ``out`` with arm-none-eabi-gcc; the ELF. A model too big for the machine's
    memory is refused in one line (EmulatedFitError, exit 3), any other failure is a
    BuildError with the compiler's words."""
    require_qemu(board)
    make = shutil.which("make")
    gcc = shutil.which("arm-none-eabi-gcc")
    if make is None or gcc is None:
        raise BuildError(f"building for {board.name} needs make and arm-none-eabi-gcc ({GCC_HINT})")
    proc = run_tool([make, "-C", str(out), f"CC={gcc}", "model.elf"], f"build for {board.name}")
    if proc.returncode != 0:
        text = proc.stderr + proc.stdout
        m = _OVERFLOW.search(text)
        if m:
            region = m[1] or "RAM"
            what = "code and weights" if region == "CODE" else "data, arena and stack"
            size = board.code_bytes if region == "CODE" else board.sram_bytes
            by = f" by {int(m[2]):,} B" if m[2] else ""
            raise EmulatedFitError(
                f"does not fit {board.name}: the {what} overflow its {size:,} B {region} memory{by}"
            )
        tail = text.strip().splitlines()[-12:]
        raise BuildError(f"{out}: build for {board.name} failed:\n" + "\n".join(tail))
    return out / "model.elf"
