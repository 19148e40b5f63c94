"""make bench-cmsis: rip's kernels against CMSIS-NN's, layer by layer, on the emulated boards.

For every layer of a model (real weights and quantisation from the .tflite, the model's
default input, so each layer sees real activations) two chains run under QEMU with
-icount shift=0 and a SysTick read around every call:
  (a) CMSIS-NN: the routine TFLite Micro's cmsis_nn kernels call for that layer, with the
      arguments they pass (``cmsis_layers``), built with TFLite Micro's flags for CMSIS-NN
      (qemu-m33: -O2 -mcpu=cortex-m33 -mthumb -mfloat-abi=hard -mfpu=fpv5-sp-d16;
      qemu-armv6m: -O2 -mcpu=cortex-m0plus -mthumb -mfloat-abi=soft; -DCMSIS_NN
      -DKERNELS_OPTIMIZED_FOR_SPEED -DNDEBUG), as in the reference file's `_how`;
  (b) rip: the code rip's generator emits for the model (strategy rip, the board's own
      flags), each op's call timed the same way (its planned shift separately).
Each layer's output CRC-32 is compared three ways: CMSIS-NN, rip and TFLite Micro's own
tensor (the tflite-micro interpreter with every tensor preserved). A difference is printed
as MISMATCH and the exit status is 1: one of the kernels is not TFLite-Micro-exact.

Per model: a table per op class (instructions rip vs CMSIS-NN, ratio, MACs, instructions per
MAC); then the worst op class ratio per model. PAD is its own class: TFLite Micro runs it
as arm_pad_s8, rip folds it into the next convolution (so rip's conv figures include it).

    python benchmarks/bench_cmsis.py --cmsis-nn DIR --cmsis-core DIR [--models a,b]
        [--boards qemu-m33,qemu-armv6m] [--jobs N] [--json F]

DIRs default to $CMSIS_NN_DIR and $CMSIS_CORE_DIR (CMSIS_6 root or its CMSIS/Core/Include).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zlib
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from dataclasses import replace
from pathlib import Path

import jinja2
import numpy as np

from rip.core.operators import Op

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cmsis_layers import CLASSES, Layer, LayerError, build_layers, op_class, plan_arena

from rip.core import jsonio

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / ".." / "shared"
MODELS = SHARED / "models" / "mcunet"
REFERENCE = SHARED / "reference" / "cmsis-nn-m33-instructions.json"
CACHE = ROOT / "build" / "bench-cmsis"
BOARDS = ("qemu-m33", "qemu-armv6m")
DEFINES = ["-O2", "-DNDEBUG", "-DCMSIS_NN", "-DKERNELS_OPTIMIZED_FOR_SPEED"]
CFLAGS = {
    "qemu-m33": ["-mcpu=cortex-m33", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"],
    "qemu-armv6m": ["-mcpu=cortex-m0plus", "-mthumb", "-mfloat-abi=soft"],
}
SCRATCH_BYTES = 256 * 1024
REPORT_CLASSES = (*CLASSES, "rip shift")
_CMSIS = re.compile(r"CMSIS layer=(\d+) instructions=(\d+) status=(\S+) crc=0x([0-9a-f]{8})")
_RIP = re.compile(r"BENCH op=(\d+) source=(-?\d+) tensor=(-?\d+) instructions=(\d+) "
                  r"crc=0x([0-9a-f]{8})")  # fmt: skip
_SHIFT = re.compile(r"BENCH shift=(\d+) source=(-?\d+) instructions=(\d+)")
_DONE = re.compile(r"CMSIS-DONE checksum=0x([0-9a-f]{8})")


class BenchError(Exception):
    """A one-line reason the benchmark cannot go on."""


# ---- CMSIS sources and library -------------------------------------------------------------


def find_cmsis(nn: str | None, core: str | None) -> tuple[Path, Path]:
    """CMSIS-NN's root and the CMSIS Core include folder, or a BenchError saying what is
    missing."""
    nn = nn or os.environ.get("CMSIS_NN_DIR")
    core = core or os.environ.get("CMSIS_CORE_DIR")
    if not nn or not (Path(nn) / "Include" / "arm_nnfunctions.h").is_file():
        raise BenchError(f"CMSIS-NN not found ({nn or 'give --cmsis-nn DIR or CMSIS_NN_DIR'}: "
                         "need Include/arm_nnfunctions.h)")  # fmt: skip
    for sub in ("CMSIS/Core/Include", "Core/Include", "Include", "."):
        if core and (Path(core) / sub / "cmsis_compiler.h").is_file():
            return Path(nn).resolve(), (Path(core) / sub).resolve()
    raise BenchError(f"CMSIS Core not found ({core or 'give --cmsis-core DIR or CMSIS_CORE_DIR'}"
                     ": need cmsis_compiler.h)")  # fmt: skip


def _gcc() -> str:
    gcc = shutil.which("arm-none-eabi-gcc")
    if gcc is None:
        raise BenchError("arm-none-eabi-gcc not found (apt-get install gcc-arm-none-eabi)")
    return gcc


def build_library(nn: Path, core: Path, board: str) -> Path:
    """libcmsisnn.a for ``board`` from every integer source (the _f16/_f32 ones need
    CMSIS-DSP), cached by sources and flags."""
    flags = [*CFLAGS[board], *DEFINES, f"-I{nn / 'Include'}", f"-I{core}"]
    floats = ("_f16", "_f32")
    sources = sorted(p for p in (nn / "Source").rglob("*.c") if not p.stem.endswith(floats))
    key = hashlib.sha256(("\n".join(flags) + "\n".join(str(p) for p in sources)).encode())
    out = CACHE / f"{board}-{key.hexdigest()[:12]}"
    lib = out / "libcmsisnn.a"
    if lib.is_file():
        return lib
    out.mkdir(parents=True, exist_ok=True)
    gcc = _gcc()

    def compile_one(src: Path) -> Path:
        obj = out / (src.stem + ".o")
        cmd = [
            gcc,
            *flags,
            "-ffunction-sections",
            "-fdata-sections",
            "-c",
            str(src),
            "-o",
            str(obj),
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if proc.returncode:
            raise BenchError(f"CMSIS-NN {src.name} does not compile: {proc.stderr.strip()[:300]}")
        return obj

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        objects = list(pool.map(compile_one, sources))
    ar = shutil.which("arm-none-eabi-ar") or "arm-none-eabi-ar"
    subprocess.run([ar, "rcs", str(lib), *map(str, objects)], check=True)
    return lib


# ---- the CMSIS-NN harness ------------------------------------------------------------------


def c_values(values: list[int], per_line: int = 24) -> str:
    """A C initialiser list, ``per_line`` values a line."""
    rows = [", ".join(map(str, values[i : i + per_line])) for i in range(0, len(values), per_line)]
    return ",\n".join("    " + r for r in rows)


def c_dims(d: tuple[int, ...]) -> str:
    return "{" + ", ".join(map(str, d)) + "}"


def render_harness(name: str, layers: list[Layer], inputs: list[dict], outputs: list[dict],
                   arena_bytes: int) -> str:  # fmt: skip
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        undefined=jinja2.StrictUndefined, keep_trailing_newline=True, trim_blocks=True,
        lstrip_blocks=True,
    )  # fmt: skip
    env.filters.update(c_values=c_values, dims=c_dims)
    env.globals["Op"] = Op  # the template names op kinds as the operator table does
    return env.get_template("cmsis_model.c.j2").render(
        name=name, layers=layers, inputs=inputs, outputs=outputs,
        arena_bytes=max(arena_bytes, 16), scratch_bytes=SCRATCH_BYTES,
    )  # fmt: skip


def run_qemu(elf: Path, board, timeout: float = 1800.0) -> list[str]:
    """The lines the firmware prints on UART0 until it exits (semihosting)."""
    from rip.firmware.qemu_project import qemu_args

    qemu = shutil.which("qemu-system-arm")
    if qemu is None:
        raise BenchError("qemu-system-arm not found (apt-get install qemu-system-arm)")
    proc = subprocess.run([qemu, *qemu_args(board), "-serial", "stdio", "-kernel", str(elf)],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout, check=False)  # fmt: skip
    return proc.stdout.splitlines()


def runtime_files(board, work: Path) -> None:
    """rip's bare-metal QEMU runtime (startup, UART, SysTick, exit) and its CRC-32."""
    from rip.codegen.templating import render

    ctx = {"board": board, "profile": False, "error_prefix": "CMSIS-ERROR"}
    for name in ("startup.c", "rip_qemu.h", "link.ld"):
        (work / name).write_text(render(f"qemu/{name}.j2", **ctx), encoding="utf-8")
    for name in ("rip_crc32.c", "rip_crc32.h", "rip_speed.h"):  # rip_crc32.c includes rip_speed.h
        shutil.copy(ROOT / "kernels" / name, work / name)


def measure_cmsis(graph, nn: Path, core: Path, lib: Path, board, work: Path) -> dict:
    """Instructions and output CRC of every layer of the CMSIS-NN chain, and the chain's
    output checksum."""
    elf, layers = build_harness(graph, nn, core, lib, board, work)
    lines = run_qemu(elf, board)
    result = parse_cmsis(lines)
    if len(result["layers"]) != len(layers):
        tail = " | ".join(lines[-3:])
        raise BenchError(f"{graph.name}: the CMSIS-NN harness stopped after "
                         f"{len(result['layers'])} of {len(layers)} layers ({tail})")  # fmt: skip
    result["spec"] = layers
    return result


def build_harness(graph, nn: Path, core: Path, lib: Path, board, work: Path) -> tuple[Path, list]:
    """The CMSIS-NN chain of ``graph`` for ``board``, built in ``work``: its ELF and layers."""
    from rip.codegen.reference import default_inputs

    offsets, arena = plan_arena(graph)
    layers = build_layers(graph, offsets)
    # the input's bytes (an int16 input's little-endian, as on the target)
    inputs = [{"offset": offsets[t], "data": np.ascontiguousarray(x).view(np.int8).tolist()}
              for t, x in zip(graph.inputs, default_inputs(graph), strict=True)]  # fmt: skip
    outputs = [{"offset": offsets[t], "bytes": graph.tensors[t].nbytes} for t in graph.outputs]
    work.mkdir(parents=True, exist_ok=True)
    (work / "main.c").write_text(render_harness(graph.name, layers, inputs, outputs, arena))
    runtime_files(board, work)
    elf = work / "cmsis.elf"
    flags = [*CFLAGS[board.name], *DEFINES, "-std=c99", "-Wall", f"-I{nn / 'Include'}",
             f"-I{core}", f"-I{work}", "-ffunction-sections", "-fdata-sections"]  # fmt: skip
    proc = subprocess.run([_gcc(), *flags, "-nostartfiles", "-T", str(work / "link.ld"),
                           "-Wl,--gc-sections", str(work / "main.c"), str(work / "startup.c"),
                           str(work / "rip_crc32.c"), str(lib), "-o", str(elf)],
                          capture_output=True, text=True)  # fmt: skip
    if proc.returncode:
        raise BenchError(f"{graph.name}: the CMSIS-NN harness does not build: "
                         f"{proc.stderr.strip()[-400:]}")  # fmt: skip
    return elf, layers


def parse_cmsis(lines: list[str]) -> dict:
    """{"layers": {k: (instructions, status, crc)}, "checksum": crc or None}."""
    layers, checksum = {}, None
    for line in lines:
        if m := _CMSIS.search(line):
            layers[int(m[1])] = (int(m[2]), m[3], int(m[4], 16))
        elif m := _DONE.search(line):
            checksum = int(m[1], 16)
    return {"layers": layers, "checksum": checksum}


# ---- rip's generated code, each op timed -----------------------------------------------------


def instrumented(model, graph=None):
    """A copy of the emitted model whose every op call (and planned shift) is timed with
    SysTick and followed by its output's CRC on UART0 (outside the timed part); ``graph``
    (the one the model was emitted from) gives each output's bytes (else one per element)."""
    offsets = {a.id: a.offset for a in model.activations}
    ops = []
    for op in model.ops:
        text = ""
        if op.shift is not None:
            src, dst, nbytes = op.shift
            text += (
                "{ const uint64_t bench_t0 = rip_systick_ticks();\n"
                f"memmove(rip_arena + {dst}, rip_arena + {src}, {nbytes}u);\n"
                "const uint64_t bench_t1 = rip_systick_ticks();\n"
                f'rip_uart_puts("BENCH shift={op.index} source={op.source_index} instructions=");\n'
                "rip_uart_put_u64((bench_t1 - bench_t0) * RIP_INSTRUCTIONS_PER_TICK);\n"
                'rip_uart_puts("\\n"); }\n'
            )
        out = op.output
        sid = -1 if out is None else (out.storage if out.storage >= 0 else out.id)
        nbytes = 0 if out is None else (graph.tensors[out.id].nbytes if graph is not None
                                        else int(np.prod(out.shape)))  # fmt: skip
        crc = f"rip_crc32_update(0u, rip_arena + {offsets[sid]}, {nbytes}u)" if sid in offsets \
            else "0u"  # fmt: skip
        text += (
            "{ const uint64_t bench_t0 = rip_systick_ticks();\n"
            f"{op.call}\n"
            "const uint64_t bench_t1 = rip_systick_ticks();\n"
            f'rip_uart_puts("BENCH op={op.index} source={op.source_index} '
            f'tensor={out.id if out is not None else -1} instructions=");\n'
            "rip_uart_put_u64((bench_t1 - bench_t0) * RIP_INSTRUCTIONS_PER_TICK);\n"
            'rip_uart_puts(" crc=");\n'
            f"rip_uart_put_hex32({crc});\n"
            'rip_uart_puts("\\n"); }\n'
        )
        ops.append(replace(op, shift=None, call=text))
    headers = (*model.headers, "rip_qemu.h", "rip_crc32.h")
    return replace(model, ops=tuple(ops), headers=headers)


def measure_rip(path: Path, board, work: Path) -> dict:
    """Instructions and output CRC of every op of rip's generated code (strategy rip)."""
    from rip.compiler import Options, analyse, emit
    from rip.core.terms import Placer, Strategy
    from rip.firmware.qemu_project import build_qemu_project, write_qemu_project
    from rip.firmware.result import parse_result_line

    options = Options(placer=Placer.MILP, strategy=Strategy.RIP, strategies=(Strategy.RIP,))
    compiled = analyse(path, board, options)
    model = emit(compiled)
    results = []
    timed = instrumented(model, compiled.variants[Strategy.RIP].graph)
    for part, m in (("timed", timed), ("plain", model)):
        write_qemu_project(m, work / part, board, None)
        lines = run_qemu(build_qemu_project(work / part, board), board)
        res = parse_result_line(lines[-1]) if lines else None
        if res is None or isinstance(res, str):
            raise BenchError(f"{path.stem}: rip's firmware printed no result line ({lines[-1:]})")
        results.append((lines, res))
    result = parse_rip(results[0][0])
    # the checksum of both builds; the whole-inference figure of the plain one (the timed
    # build's includes the per-op UART lines)
    result["checksum"] = results[0][1].checksum
    result["plain_checksum"] = results[1][1].checksum
    result["total"] = results[1][1].instructions
    result["kernels"] = {}
    for op in model.ops:
        names = re.findall(r"\b(rip_\w+)\s*\(", op.call)
        result["kernels"].setdefault(op.source_index, []).extend(names[:1])
    result["graph_ops"] = {op.source_index: op_class(compiled.graph, op)
                           for op in compiled.graph.operators}  # fmt: skip
    return result


def parse_rip(lines: list[str]) -> dict:
    """{"ops": {source op: [instructions, crc, tensor]}, "shifts": {source op: instructions}}
    (ops sharing a source index add up)."""
    ops: dict[int, list[int]] = {}
    shifts: dict[int, int] = {}
    for line in lines:
        if m := _RIP.search(line):
            entry = ops.setdefault(int(m[2]), [0, int(m[5], 16), int(m[3])])
            entry[0] += int(m[4])
            entry[1], entry[2] = int(m[5], 16), int(m[3])
        elif m := _SHIFT.search(line):
            shifts[int(m[2])] = shifts.get(int(m[2]), 0) + int(m[3])
    return {"ops": ops, "shifts": shifts}


# ---- TFLite Micro's own tensors --------------------------------------------------------------


def tflm_tensors(path: Path, graph) -> tuple[dict[int, int], int]:
    """CRC-32 of every int8 and int16 tensor TFLite Micro computes on the default input (all
    tensors preserved), and its output checksum."""
    from tflite_micro import runtime

    from rip.codegen.reference import checksum, default_inputs, reference_outputs

    keep = runtime.InterpreterConfig.kPreserveAllTensors  # (the keyword's spelling is theirs)
    it = runtime.Interpreter.from_bytes(path.read_bytes(), arena_size=64 << 20,
                                        intrepreter_config=keep)  # fmt: skip
    boundary = {q: f for kind, f, q in graph.interface if kind == Op.QUANTIZE}
    for k, (t, x) in enumerate(zip(graph.inputs, default_inputs(graph), strict=True)):
        if t in boundary:  # the float values QUANTIZE maps onto these bytes (as the oracle)
            q = graph.tensors[t].quant
            x = (x.astype(np.float32) - np.float32(q.zero_point[0])) * np.float32(q.scale[0])
        d = it.get_input_details(k)
        it.set_input(x.reshape(d["shape"]).astype(d["dtype"]), k)
    it.invoke()
    crcs = {}
    for tid, t in graph.tensors.items():
        if t.is_constant or t.dtype not in ("int8", "int16"):
            continue
        data = np.asarray(it.GetTensor(tid, 0)["tensor_data"])
        crcs[tid] = zlib.crc32(data.astype(t.dtype).tobytes())
    return crcs, checksum(reference_outputs(path, graph))


# ---- one model -------------------------------------------------------------------------------


def at_level(board, level: str):
    """``board`` with its optimisation flag replaced by ``level`` (``-O2``: how a Pico user's
    own -O2 application, or a build type other than Release, compiles rip's code)."""
    return replace(board, cflags=tuple(level if f.startswith("-O") else f for f in board.cflags))


def measure(path: str, boards: list[str], nn: str, core: str, libs: dict[str, str],
            levels: tuple[str, ...] = ()) -> dict:  # fmt: skip
    """Both chains of one model on each board, checked against TFLite Micro; with
    ``levels`` (``("-O2",)``) rip's chain again at each optimisation level, every layer
    checked the same way, its per-class instructions under ``classes[c]["rip" + level]``."""
    from rip.boards import load_board
    from rip.frontend.reader import read_model
    from rip.frontend.rewrite import strip_interface

    p = Path(path)
    t0 = time.perf_counter()
    graph = strip_interface(read_model(p))
    tflm, tflm_checksum = tflm_tensors(p, graph)
    row = {"model": graph.name, "boards": {}, "tflm_checksum": f"0x{tflm_checksum:08x}"}
    with tempfile.TemporaryDirectory(prefix="bench-cmsis-") as tmp:
        for name in boards:
            board = load_board(name)
            cm = measure_cmsis(graph, Path(nn), Path(core), Path(libs[name]), board,
                               Path(tmp) / f"{name}-cmsis")  # fmt: skip
            rp = measure_rip(p, board, Path(tmp) / f"{name}-rip")
            res = row["boards"][name] = compare(graph.name, cm, rp, tflm, tflm_checksum)
            for level in levels:
                at = measure_rip(p, at_level(board, level), Path(tmp) / f"{name}-rip{level}")
                other = compare(graph.name, cm, at, tflm, tflm_checksum)
                res["mismatches"] += [f"{m} (at {level})" for m in other["mismatches"]]
                res[f"rip_total{level}"] = other["rip_total"]
                for c, sums in other["classes"].items():
                    res["classes"].setdefault(c, {**sums, "rip": 0})[f"rip{level}"] = sums["rip"]
    row["seconds"] = round(time.perf_counter() - t0, 1)
    return row


def compare(name: str, cm: dict, rp: dict, tflm: dict[int, int], tflm_checksum: int) -> dict:
    """Per layer: both figures and the three-way output check; per class: the sums."""
    layers, mismatches = [], []
    seen: set[int] = set()
    for spec in cm["spec"]:
        n, status, crc = cm["layers"][spec.index]
        rip = rp["ops"].get(spec.op)
        seen.add(spec.op)
        entry = {"op": spec.op, "kind": spec.kind, "class": spec.op_class, "macs": spec.macs,
                 "cmsis": n, "rip": rip[0] if rip else 0, "folded": rip is None,
                 "cmsis_routine": spec.routine,
                 "rip_kernel": "+".join(rp.get("kernels", {}).get(spec.op, []))}  # fmt: skip
        want = tflm.get(spec.output)
        if status != "0":
            mismatches.append(f"{name} op {spec.op} {spec.kind}: CMSIS-NN returned an error")
        if want is not None and crc != want:
            mismatches.append(f"{name} op {spec.op} {spec.kind}: CMSIS-NN output != TFLite Micro")
        if rip and rip[2] == spec.output and rip[1] != crc:
            mismatches.append(f"{name} op {spec.op} {spec.kind}: rip output != CMSIS-NN")
        layers.append(entry)
    for op, (n, crc, tensor) in rp["ops"].items():
        if tensor in tflm and crc != tflm[tensor]:
            mismatches.append(f"{name} op {op}: rip output != TFLite Micro (tensor {tensor})")
        if op not in seen:  # an op rip has and the chain has not
            layers.append({"op": op, "kind": "rip", "class": rp["graph_ops"].get(op, "other"),
                           "macs": 0, "cmsis": 0, "rip": n, "folded": False})  # fmt: skip
    for op, n in rp["shifts"].items():
        layers.append({"op": op, "kind": "shift", "class": "rip shift", "macs": 0, "cmsis": 0,
                       "rip": n, "folded": False})  # fmt: skip
    if cm["checksum"] != tflm_checksum:
        mismatches.append(f"{name}: CMSIS-NN chain output checksum != TFLite Micro's")
    if rp["checksum"] != tflm_checksum or rp["plain_checksum"] != tflm_checksum:
        mismatches.append(f"{name}: rip output checksum != TFLite Micro's")
    return {"layers": layers, "classes": by_class(layers), "mismatches": mismatches,
            "rip_total": rp["total"]}  # fmt: skip


def by_class(layers: list[dict]) -> dict[str, dict]:
    """Sums per op class: layers, MACs, rip and CMSIS-NN instructions (classes present only,
    in the report's order)."""
    sums: dict[str, dict] = {}
    for c in REPORT_CLASSES:
        rows = [x for x in layers if x["class"] == c]
        if rows:
            sums[c] = {"layers": sum(1 for x in rows if x["kind"] != "shift"),
                       "macs": sum(x["macs"] for x in rows),
                       "rip": sum(x["rip"] for x in rows),
                       "cmsis": sum(x["cmsis"] for x in rows)}  # fmt: skip
    return sums


def ratio(rip: int, cmsis: int) -> float | None:
    return rip / cmsis if cmsis else None


def worst_class(classes: dict[str, dict], kernels_only: bool = True) -> tuple[str, float] | None:
    """The op class with the largest rip / CMSIS-NN ratio (classes CMSIS-NN spends nothing on,
    rip shifts and PAD excluded when ``kernels_only``)."""
    skip = {"rip shift", "pad", "other"} if kernels_only else set()
    ratios = [(c, ratio(s["rip"], s["cmsis"])) for c, s in classes.items() if c not in skip]
    ratios = [(c, r) for c, r in ratios if r is not None]
    return max(ratios, key=lambda cr: cr[1]) if ratios else None


# ---- printing --------------------------------------------------------------------------------


def _n(x: float | None, digits: int = 0) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def model_table(model: str, board: str, result: dict, reference: dict | None) -> list[str]:
    head = ("| op class | layers | MACs | rip | CMSIS-NN | rip / CMSIS-NN | rip instr/MAC "
            "| CMSIS-NN instr/MAC |")  # fmt: skip
    out = [f"{model} on {board} (instructions per op class; PAD folded into rip's convs):", "",
           head, "|---" * (head.count("|") - 1) + "|"]  # fmt: skip
    total = {"macs": 0, "rip": 0, "cmsis": 0}
    for c, s in result["classes"].items():
        for k in total:
            total[k] += s[k]
        per = (ratio(s["rip"], s["macs"]), ratio(s["cmsis"], s["macs"]))
        folded = c == "pad" and s["rip"] == 0
        rip_cell = "0 (folded)" if folded else _n(s["rip"])
        vs = "-" if folded else _n(ratio(s["rip"], s["cmsis"]), 3)
        out.append(f"| {c} | {s['layers']} | {_n(s['macs'])} | {rip_cell} | {_n(s['cmsis'])} "
                   f"| {vs} | {_n(per[0], 2)} "
                   f"| {_n(per[1], 2)} |")  # fmt: skip
    per = (ratio(total["rip"], total["macs"]), ratio(total["cmsis"], total["macs"]))
    out.append(f"| all layers | | {_n(total['macs'])} | {_n(total['rip'])} | {_n(total['cmsis'])}"
               f" | {_n(ratio(total['rip'], total['cmsis']), 3)} | {_n(per[0], 2)} "
               f"| {_n(per[1], 2)} |")  # fmt: skip
    if "other" in result["classes"]:
        out.append("")
        out.append("other: ops with no CMSIS-NN routine (RESIZE_NEAREST_NEIGHBOR: the harness's "
                   "own gather, not TFLite Micro's reference kernel)")  # fmt: skip
    key = "tflm_cmsis_nn_instructions" + ("" if board == "qemu-m33" else "_armv6m")
    whole = (reference or {}).get(key)
    out.append("")
    out.append(f"whole inference: rip {_n(result['rip_total'])}, TFLM+CMSIS-NN (reference file) "
               f"{_n(whole)}; ratio {_n(ratio(result['rip_total'], whole or 0), 3)}")  # fmt: skip
    return out


KERNEL_CLASSES = ("1x1 conv", "other conv", "dw 3x3", "dw 5x5", "dw 7x7", "dw other",
                  "elementwise", "pooling", "fully connected", "batch matmul",
                  "softmax", "lstm")  # fmt: skip


def layer_table(model: str, board: str, result: dict) -> list[str]:
    """Every layer: its CMSIS-NN routine and rip kernel, both figures and the ratio."""
    head = ("| op | kind | class | CMSIS-NN routine | rip kernel | MACs | rip | CMSIS-NN "
            "| rip / CMSIS-NN |")  # fmt: skip
    out = [f"{model} on {board}, per layer:", "", head, "|---" * (head.count("|") - 1) + "|"]
    for x in sorted(result["layers"], key=lambda x: (x["op"], x["kind"] == "shift")):
        out.append(f"| {x['op']} | {x['kind']} | {x['class']} | {x.get('cmsis_routine', '')} "
                   f"| {x.get('rip_kernel', '')} | {_n(x['macs'])} | {_n(x['rip'])} "
                   f"| {_n(x['cmsis'])} | {_n(ratio(x['rip'], x['cmsis']), 3)} |")  # fmt: skip
    return out


def summary_table(rows: list[dict], boards: list[str]) -> list[str]:
    """Per model and board: the worst kernel class, every kernel class's ratio, all layers."""
    cols = [c for c in KERNEL_CLASSES
            if any(c in r["boards"][b]["classes"] for r in rows for b in r["boards"])]  # fmt: skip
    head = ("| model | board | worst op class | worst rip / CMSIS-NN | " + " | ".join(cols)
            + " | all layers |")  # fmt: skip
    out = ["rip / CMSIS-NN per op class (kernels only: PAD, other ops and rip's shifts left "
           "out of the worst; all layers includes PAD, which rip folds):", "", head,
           "|---" * (head.count("|") - 1) + "|"]  # fmt: skip
    for row in rows:
        for b in boards:
            res = row["boards"].get(b)
            if res is None:
                continue
            cl = res["classes"]
            w = worst_class(cl)
            rip = sum(s["rip"] for s in cl.values())
            cm = sum(s["cmsis"] for s in cl.values())
            cell = f"{w[0]} | {w[1]:.3f}" if w else "- | -"
            ratios = [_n(ratio(cl[c]["rip"], cl[c]["cmsis"]), 3) if c in cl else "" for c in cols]
            out.append(f"| {row['model']} | {b} | {cell} | {' | '.join(ratios)} "
                       f"| {_n(ratio(rip, cm), 3)} |")  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cmsis-nn", help="CMSIS-NN checkout (default $CMSIS_NN_DIR)")
    ap.add_argument("--cmsis-core", help="CMSIS_6 checkout or its Core/Include ($CMSIS_CORE_DIR)")
    ap.add_argument(
        "--models",
        help="comma-separated names under ../shared/models/mcunet "
        "(default: all eleven) or .tflite paths",
    )
    ap.add_argument("--boards", default="qemu-m33", help="comma-separated: qemu-m33,qemu-armv6m")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--layers", action="store_true", help="also print every layer's figures")
    ap.add_argument("--json", metavar="FILE", help="also write every figure as JSON")
    args = ap.parse_args(argv)
    try:
        nn, core = find_cmsis(args.cmsis_nn, args.cmsis_core)
        boards = args.boards.split(",")
        if unknown := [b for b in boards if b not in BOARDS]:
            raise BenchError(f"unknown board {unknown[0]!r} (choose from {', '.join(BOARDS)})")
        names = args.models.split(",") if args.models else sorted(
            p.stem for p in MODELS.glob("*.tflite"))  # fmt: skip
        # a bare name is one of ../shared/models/mcunet; a path is taken as it is
        paths = [Path(n) if n.endswith(".tflite") else MODELS / f"{n}.tflite" for n in names]
        if missing := [p for p in paths if not p.is_file()]:
            raise BenchError(f"no model {missing[0]}")
        t0 = time.perf_counter()
        libs = {b: str(build_library(nn, core, b)) for b in boards}
        reference = {}
        if REFERENCE.is_file():
            reference = {m["model"]: m for m in json.loads(REFERENCE.read_text())["models"]}
        with ProcessPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(measure, str(p), boards, str(nn), str(core), libs)
                       for p in paths]  # fmt: skip
            for f in as_completed(futures):
                r = f.result()
                print(f"bench-cmsis: {r['model']} measured ({r['seconds']} s)", file=sys.stderr)
            rows = [f.result() for f in futures]
    except (BenchError, LayerError) as e:
        print(f"bench-cmsis: {e}", file=sys.stderr)
        return 2
    for row in rows:
        for b, res in row["boards"].items():
            print("\n".join(model_table(row["model"], b, res, reference.get(row["model"]))))
            print()
            if args.layers:
                print("\n".join(layer_table(row["model"], b, res)))
                print()
    print("\n".join(summary_table(rows, boards)))
    bad = [m for row in rows for res in row["boards"].values() for m in res["mismatches"]]
    print()
    if bad:
        print(f"MISMATCH ({len(bad)}): a kernel here is not TFLite-Micro-exact:")
        for m in bad:
            print(f"  MISMATCH {m}")
    else:
        print("outputs: every layer's CMSIS-NN, rip and TFLite Micro bytes are equal")
    print(f"\nwall {time.perf_counter() - t0:.0f} s, {args.jobs} jobs; CMSIS-NN {nn}")
    if args.json:
        Path(args.json).write_text(jsonio.dumps(rows, indent=1))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
