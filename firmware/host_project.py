"""Emitted projects: the host project (a Makefile for the system compiler), written to a
folder with the kernels it needs, and built and run on this machine."""

from __future__ import annotations

import shutil
import subprocess
from importlib import resources
from pathlib import Path

from rip.codegen.emit import EmittedModel
from rip.codegen.templating import render
from rip.core import jsonio, processes
from rip.core.errors import BuildError, RipError
from rip.firmware.result import Result, c_printf, c_result_fields, parse_result_line
from rip.firmware.tools import run_tool


def copy_kernels(out: Path) -> None:
    """The kernel sources, from the installed package, into ``out/kernels``."""
    dest = out / "kernels"
    dest.mkdir(parents=True, exist_ok=True)
    for entry in resources.files("rip").joinpath("kernels").iterdir():
        if entry.name.endswith((".c", ".h")):
            (dest / entry.name).write_text(entry.read_text(encoding="utf-8"), encoding="utf-8")


def write_expected(model: EmittedModel, out: Path, board: str, checksum: int | None) -> None:
    """expected.json: what a correct run of this project prints."""
    data = {
        "model": model.name,
        "board": board,
        "strategy": model.strategy,
        "arena_bytes": model.arena_bytes,
        "scratch_bytes": model.scratch_bytes,
        "checksum": None if checksum is None else f"0x{checksum:08x}",
        "checksum_source": "TFLite Micro on the default test input" if checksum is not None
        else None,
        "outputs": [{"name": t.name, "shape": list(t.shape), "bytes": t.nbytes}
                    for t in model.outputs],
    }  # fmt: skip
    (out / "expected.json").write_text(jsonio.dumps(data, indent=2) + "\n", encoding="utf-8")


def read_expected(project_dir: Path) -> dict:
    """The expected.json of the project rip-compile wrote in ``project_dir``; one line for
    a folder without one or a file that is not JSON."""
    path = project_dir / "expected.json"
    if not path.is_file():
        raise RipError(f"{project_dir}: no expected.json; give the folder rip-compile -o wrote")
    try:
        data = jsonio.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError is a ValueError
        raise RipError(f"{path}: not valid JSON ({' '.join(str(e).split())[:200]})") from None
    if not isinstance(data, dict):
        raise RipError(f"{path}: expected a JSON object, got {type(data).__name__}")
    macs = data.get("macs")
    if macs is not None and (not isinstance(macs, int) or isinstance(macs, bool) or macs < 0):
        raise RipError(f"{path}: macs must be a whole number >= 0, got {macs!r}")
    return data


def write_host_project(model: EmittedModel, out: Path, checksum: int | None = None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    files = dict(model.files)
    line = c_printf(c_result_fields("host", "ns", "best"))
    files["main.c"] = render("host/main.c.j2", m=model, result_printf=line)
    files["Makefile"] = render("host/Makefile.j2", m=model)
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    copy_kernels(out)
    write_expected(model, out, "host", checksum)


def build_host(out: Path, cc: str | None = None) -> Path:
    make = shutil.which("make")
    compiler = cc or shutil.which("cc") or shutil.which("gcc")
    if make is None or compiler is None:
        raise BuildError("building on the host needs make and a C compiler (cc or gcc)")
    proc = run_tool([make, "-C", str(out), f"CC={compiler}", "model"], "host build")
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
        raise BuildError(f"{out}: host build failed:\n" + "\n".join(tail))
    return out / "model"


def run_host(out: Path, repeats: int = 1, timeout: float = 600.0) -> Result:
    binary = out / "model"
    try:
        proc = processes.run([str(binary), str(repeats)], timeout)
    except subprocess.TimeoutExpired:
        raise BuildError(f"{binary} printed no result line within {timeout:g} s; stopped") from None
    for line in proc.stdout.splitlines():
        result = parse_result_line(line)
        if result is not None:
            return result
    raise BuildError(f"{binary} printed no result line (exit {proc.returncode}): "
                     f"{proc.stdout.strip()[-300:]}")  # fmt: skip
