"""examples/pico-classify: a Pico application of a user's own that links the generated model
library through add_subdirectory() and builds against ../shared/pico/pico-sdk (skipped with
a reason when the SDK or the Arm toolchain is absent)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from paths import REPO, SHARED

from rip.boards import load_board
from rip.cli.compile import main as compile_main
from rip.codegen.templating import render
from rip.firmware.pico_project import symbol_placement
from rip.firmware.rp2040_emulator import run_uf2
from rip.firmware.uf2 import parse_uf2, write_uf2

APP = REPO / "examples" / "pico-classify"
CAMERA = REPO / "examples" / "pico-camera"
SDK = SHARED / "pico" / "pico-sdk"
RP2040 = 0xE48BFF56


def test_the_example_is_a_pico_examples_shaped_project():
    text = (APP / "CMakeLists.txt").read_text()
    order = [
        "include(pico_sdk_import.cmake)",
        "project(pico_classify",
        "pico_sdk_init()",
        "add_subdirectory(${RIP_MODEL} rip_model)",
        "add_executable(pico_classify",
        "target_link_libraries(pico_classify",
        "pico_add_extra_outputs(pico_classify)",
    ]
    places = [text.index(needle) for needle in order]
    assert places == sorted(places)
    link = text[text.index("target_link_libraries(pico_classify") :]
    assert "rip_model" in link[: link.index(")")]
    # its pico_sdk_import.cmake is the one every generated project gets (the camera's too)
    for app in (APP, CAMERA):
        assert (app / "pico_sdk_import.cmake").read_text() == render(
            "pico/pico_sdk_import.cmake.j2"
        )


def build_example(app: Path, target: str, root: Path, *compile_args: str) -> dict[str, Path]:
    """The example-cnn model project (rip-compile -o ``compile_args``, no build), and the
    example application ``app`` (CMake target ``target``) built against its model/ with the
    shared SDK; skipped with a reason without the SDK or the tools."""
    cmake = shutil.which("cmake")
    if not (SDK / "pico_sdk_init.cmake").is_file():
        pytest.skip(f"{SDK} is absent (CI keeps ../shared beside the checkout)")
    if cmake is None or shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("needs cmake and arm-none-eabi-gcc")
    project = root / "model-project"
    model = REPO / "examples" / "example-cnn.tflite"
    code = compile_main([str(model), "--board", "pico", *compile_args, "-o", str(project),
                         "--quiet"])  # fmt: skip
    assert code == 0
    build = root / "build"
    env = dict(os.environ, PICO_SDK_PATH=str(SDK))
    configure = [cmake, "-S", str(app), "-B", str(build), f"-DRIP_MODEL={project / 'model'}",
                 "-DPICO_NO_PICOTOOL=1"]  # fmt: skip
    if shutil.which("ninja"):
        configure += ["-G", "Ninja"]
    for cmd in (configure, [cmake, "--build", str(build), "--parallel", "2"]):
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    uf2 = build / f"{target}.uf2"
    write_uf2(build / f"{target}.bin", uf2, RP2040, None)
    return {"project": project, "build": build, "uf2": uf2}


def emulator_bootrom() -> Path:
    """The RP2040 boot ROM rp2040js runs; skipped with a reason without Node or the ROM."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("needs Node.js 18.3+ and npm (Debian: apt-get install nodejs npm)")
    bootrom = SHARED / "pico" / "rp2040-bootrom-b1.bin"
    if not bootrom.is_file():
        pytest.skip(f"{bootrom} is absent (CI keeps ../shared beside the checkout)")
    return bootrom


@pytest.fixture(scope="module")
def example_build(tmp_path_factory) -> dict[str, Path]:
    return build_example(APP, "pico_classify", tmp_path_factory.mktemp("classify"))


def test_the_example_links_the_generated_library_and_builds(example_build):
    build = example_build["build"]
    elf = build / "pico_classify.elf"
    assert elf.is_file()
    symbols = symbol_placement(elf, ("rip_model_invoke", "rip_arena", "main"))
    assert set(symbols) == {"rip_model_invoke", "rip_arena", "main"}
    expected = json.loads((example_build["project"] / "expected.json").read_text())
    assert symbols["rip_arena"]["type"] in "bB"
    assert symbols["rip_arena"]["bytes"] >= expected["arena_bytes"]
    # the library was compiled as its own target inside the application's build
    assert (build / "rip_model" / "librip_model.a").is_file()
    assert parse_uf2(example_build["uf2"].read_bytes())[-1].family == RP2040


def test_the_example_runs_on_the_emulated_rp2040(example_build):
    """The example application on rp2040js: the documented default input (input 0:
    ``default_rng(0).integers(-128, 128, N, dtype=int8)``) sent on UART0 after its first
    line, its CLASSIFY line's checksum equals expected.json's (TFLite Micro on that
    input)."""
    bootrom = emulator_bootrom()
    expected = json.loads((example_build["project"] / "expected.json").read_text())
    header = (example_build["project"] / "model" / "model.h").read_text()
    size = int(re.search(r"#define RIP_INPUT0_BYTES (\d+)u", header)[1])  # the C API's
    data = np.random.default_rng(0).integers(-128, 128, size=size, dtype=np.int8).tobytes()
    run = run_uf2(example_build["uf2"], load_board("pico"), bootrom, 4_000_000_000, 600.0,
                  until="CLASSIFY", send=data)  # fmt: skip
    classify = [line for line in run.lines if line.startswith("CLASSIFY")]
    assert classify, run.lines[-5:]
    fields = dict(f.split("=", 1) for f in classify[0].split()[1:])
    assert fields["input"] == "uart", classify[0]
    assert fields["checksum"] == expected["checksum"], (classify[0], expected["checksum"])


@pytest.fixture(scope="module")
def camera_build(tmp_path_factory) -> dict[str, Path]:
    """examples/pico-camera built against the example-cnn model compiled --stream-input."""
    root = tmp_path_factory.mktemp("camera")
    return build_example(CAMERA, "pico_camera", root, "--stream-input")


def test_the_camera_example_streams_rows_on_the_emulated_rp2040(camera_build):
    """The camera example on rp2040js: a timer's lines feed the streamed model through its
    row source; a frame the model kept up with prints TFLite Micro's checksum, and one the
    camera overran (if any) failed cleanly before it."""
    bootrom = emulator_bootrom()
    expected = json.loads((camera_build["project"] / "expected.json").read_text())
    run = run_uf2(camera_build["uf2"], load_board("pico"), bootrom, 4_000_000_000, 600.0,
                  until="CAMERA status=0")  # fmt: skip
    frames = [line for line in run.lines if line.startswith("CAMERA")]
    assert frames and frames[-1].startswith("CAMERA status=0"), run.lines[-5:]
    fields = dict(f.split("=", 1) for f in frames[-1].split()[1:])
    assert fields["checksum"] == expected["checksum"], (frames[-1], expected["checksum"])
    assert fields["rows"] == "32"
    assert all("status=failed" in f for f in frames[:-1]), frames
