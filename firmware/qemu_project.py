"""Emulated boards: the emitted model as a bare-metal project for a QEMU machine, built with
arm-none-eabi-gcc.

The Pico boards get their runtime from the Pico SDK; the emulated boards get a small one of
our own (``templates/qemu/``: vector table, reset handler, linker script, CMSDK UART
driver, SysTick instruction counter, semihosting exit), so that the same model code and
kernels, compiled with the flags of the matching Pico build, can be run and measured in CI.
The firmware prints the result line of ``rip.firmware.result`` once and ends the emulation.

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
    ``profile`` adds a SysTick mark per op; the marks are returned, in order."""
    require_qemu(board)
    marks: list[ProfileMark] = []
    if profile:
        model, marks = profiled(model)
    out.mkdir(parents=True, exist_ok=True)
    fields = c_result_fields(board.name, INSTRUCTIONS, "instructions", stack_expr="stack_bytes")
    example = Result(model.name, board.name, model.strategy, model.arena_bytes, 0, 0,
                     INSTRUCTIONS, stack=0).line()  # fmt: skip
    ctx = {
        "m": model,
        "board": board,
        "fields": fields,
        "prefix": PREFIX,
        "error_prefix": ERROR_PREFIX,
        "result_example": example.replace("checksum=0x00000000", "checksum=0x<crc32>")
        .replace("instructions=0", "instructions=<n>")
        .replace("stack=0", "stack=<bytes>"),
        "profile": profile,
        "profile_marks": len(marks),
        "qemu_args": qemu_args(board),
        "checksum": checksum,
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
