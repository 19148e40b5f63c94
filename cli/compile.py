"""rip-compile: an int8 TFLite model in; its memory report (and, in later stages, code) out.

rip-compile model.tflite --board pico2 --strategy rip --placer milp --report [--json]
rip-compile model.tflite --plot plan.png
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from rip.allocator.planning.plan import PLACERS
from rip.allocator.planning.strategies import STRATEGIES
from rip.boards import board_names, load_board
from rip.errors import RipError
from rip.firmware.qemu_project import macs
from rip.firmware.qemu_run import generate_for_qemu
from rip.report import analyse, build_report, format_report


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="rip-compile",
        description="Compile an int8 TFLite model with Right In-Place memory planning.",
    )
    p.add_argument("model", help="path to an int8 .tflite model")
    p.add_argument(
        "--board", default="pico2", help=f"one of {', '.join(board_names())} (default pico2)"
    )
    p.add_argument(
        "--strategy",
        default="rip",
        choices=STRATEGIES,
        help="dual: nothing in place; tinyengine: depthwise only (the paper's "
        "baseline); rip: every candidate (default)",
    )
    p.add_argument(
        "--placer",
        default="milp",
        choices=PLACERS,
        help="milp: Pyomo + SCIP, optimal (default); firstfit: TinyEngine's",
    )
    p.add_argument(
        "--time-limit",
        type=float,
        default=60.0,
        metavar="S",
        help="MILP time limit per strategy; past it the best plan found is used",
    )
    p.add_argument(
        "--report",
        action="store_true",
        help="print the model summary, per-op table and memory plans",
    )
    p.add_argument("--json", action="store_true", help="the report as JSON")
    p.add_argument("--plot", metavar="PNG", help="draw the plans (time x address) to a file")
    p.add_argument("-o", "--output", metavar="DIR", help="write the generated project here")
    p.add_argument(
        "--run",
        action="store_true",
        help="(host and qemu boards) build and run the project, compare with TFLite Micro",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="with --run: run N times, report the fastest",
    )
    p.add_argument(
        "--build",
        action="store_true",
        help="(pico boards) build the firmware with the Pico SDK at $PICO_SDK_PATH",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="generate code even when the plan does not fit the board's SRAM",
    )
    p.add_argument("--quiet", action="store_true", help="no solver progress on stderr")
    return p


def _generate(compiled, path: Path, board, strategy: str, args) -> dict:
    """Emit the project for ``board`` into ``args.output``. Host: ``--run`` builds and runs
    it and compares its checksum with TFLite Micro's. Pico boards: ``--build`` builds the
    firmware with the Pico SDK and checks the arena's placement in the ELF."""
    from rip.codegen.emit import emit_model
    from rip.codegen.reference import ReferenceError, checksum, reference_outputs
    from rip.firmware.host_project import build_host, run_host, write_host_project

    out = Path(args.output)
    if args.run and board.pico_board:
        raise RipError(
            f"--run builds and runs on the host; for {board.name} use --build, "
            "then rip-flash and rip-verify"
        )
    if args.build and not board.pico_board:
        raise RipError(f"--build is for Pico boards; for {board.name} use --run")
    model = emit_model(compiled.graph, compiled.req, compiled.plans[strategy], strategy)
    try:
        reference = checksum(reference_outputs(path, compiled.graph))
    except ReferenceError as e:
        reference, why = None, str(e)
    else:
        why = None
    if board.qemu_machine:  # emulated boards: rip.firmware.qemu_run does the rest
        info = generate_for_qemu(compiled.graph, model, out, board, reference, args.run)
        return {**info, "reference_unavailable": why} if why else info
    if board.pico_board:
        from rip.firmware.pico_project import build_pico_project, write_pico_project

        write_pico_project(model, out, board, reference, macs=macs(compiled.graph))
    else:
        write_host_project(model, out, reference)
    info: dict = {
        "output_dir": str(out),
        "reference_checksum": None if reference is None else f"0x{reference:08x}",
    }
    if why:
        info["reference_unavailable"] = why
    if args.build:
        info["build"] = _check_placement(build_pico_project(out, board), model.arena_bytes)
    if args.run:
        build_host(out)
        result = run_host(out, args.repeat)
        info.update(
            result_line=result.line(),
            checksum=f"0x{result.checksum:08x}",
            cycles=result.cycles,
            unit=result.unit,
            match=None if reference is None else result.checksum == reference,
        )
    return info


class FitError(RipError):
    """The plan needs more SRAM than the board has (exit code 3)."""

    exit_code = 3


def _check_placement(build: dict, arena_bytes: int) -> dict:
    """After a firmware build: the arena must be a .bss symbol of the planned size."""
    arena = build.get("symbols", {}).get("rip_arena")
    if arena is None or arena.get("type", "") not in ("b", "B") or arena["bytes"] < arena_bytes:
        raise RipError(
            f"{build.get('elf')}: rip_arena is not a {arena_bytes} B .bss symbol ({arena})"
        )
    build["arena_in_bss"] = True
    return build


def _print_text(rep: dict, args, board) -> None:
    if args.report or not args.output:
        print(format_report(rep))
    if args.output:
        files = (
            (
                "CMakeLists.txt, pico_sdk_import.cmake, main.c, model.c, model.h, kernels/, "
                "README.md, expected.json"
            )
            if board.pico_board
            else ("model.c, model.h, main.c, Makefile, kernels/, expected.json")
        )
        print(
            f"wrote {args.output}: {files} (arena {rep['arena_bytes']:,} B, scratch "
            f"{rep['scratch_bytes']:,} B)"
        )
    if "build" in rep:
        b = rep["build"]
        print(
            f"built {b['uf2']} ({b['uf2_writer']} UF2 writer); .bss {b['bss_bytes']:,} B, "
            f".data {b['data_bytes']:,} B; rip_arena in .bss"
        )
    if "result_line" in rep:
        print(rep["result_line"])
        ref = rep["reference_checksum"]
        verdict = ("match" if rep["match"] else "MISMATCH") if ref else "no reference"
        print(f"reference (TFLite Micro) checksum={ref}: {verdict}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        path = Path(args.model)
        if not path.is_file():
            raise RipError(f"{path}: no such file")
        board = load_board(args.board)
        progress = not args.quiet and not args.json and sys.stderr.isatty()
        compiled = analyse(path, board, args.placer, args.time_limit, progress=progress)
        rep = build_report(compiled, path, board, args.strategy)
        if args.output:
            if not rep["fits"] and not args.force:
                raise FitError(
                    f"does not fit {board.name}: needs {rep['needed_sram_bytes']} B, "
                    f"has {rep['board_sram_bytes']} B (--force to generate anyway)"
                )
            rep.update(_generate(compiled, path, board, args.strategy, args))
        elif args.run or args.build:
            raise RipError("--run and --build need -o DIR for the generated project")
        if args.plot:
            from rip.plot import plot_plans  # matplotlib only when a figure is asked for

            plot_plans(
                Path(args.plot),
                rep["model"],
                compiled.plans,
                compiled.req.lifetimes,
                board,
                compiled.req.scratch_bytes,
            )
        if args.json:
            print(json.dumps(rep, indent=2))
        else:
            _print_text(rep, args, board)
        return 1 if rep.get("match") is False else 0
    except RipError as e:
        print(f"rip-compile: error: {e}", file=sys.stderr)
        return e.exit_code


if __name__ == "__main__":
    sys.exit(main())
