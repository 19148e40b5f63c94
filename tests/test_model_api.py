"""model.h as a C API (the same header on every board): the per-tensor macros agree with the
.tflite file and with the functions, an input written through ``rip_model_input`` gives
TFLite Micro's outputs, and the arena symbol holds the tensors. Compiled on the host with
-Wall -Wextra -Werror."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest
import tflite
from tflite_writer import example_model

from rip.allocator.planning.options import PlanOptions
from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.requirements import requirements
from rip.codegen.cformat import c_float
from rip.codegen.emit import emit_model
from rip.firmware.host_project import BuildError, build_host, write_host_project
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

tflite_micro = pytest.importorskip("tflite_micro", reason="TFLite Micro is the oracle")

API_C = """\
#include <stdio.h>
#include <string.h>

#include "model.h"

static const int in_shape[] = RIP_INPUT0_SHAPE;
static const int out_shape[] = RIP_OUTPUT0_SHAPE;

int main(void) {
    long in_n = 1, out_n = 1;
    for (int i = 0; i < RIP_INPUT0_DIMS; i++) in_n *= in_shape[i];
    for (int i = 0; i < RIP_OUTPUT0_DIMS; i++) out_n *= out_shape[i];
    printf("in %u %u %ld %d %.9g %d\\n", (unsigned)RIP_INPUT0_BYTES,
           (unsigned)rip_model_input_bytes(0), in_n, RIP_INPUT0_DIMS,
           (double)RIP_INPUT0_SCALE, RIP_INPUT0_ZERO_POINT);
    printf("out %u %u %ld %d %.9g %d\\n", (unsigned)RIP_OUTPUT0_BYTES,
           (unsigned)rip_model_output_bytes(0), out_n, RIP_OUTPUT0_DIMS,
           (double)RIP_OUTPUT0_SCALE, RIP_OUTPUT0_ZERO_POINT);
    const int8_t *lo = rip_arena, *hi = rip_arena + RIP_MODEL_ARENA_BYTES;
    const int8_t *in = rip_model_input(0), *out = rip_model_output(0);
    printf("inside %d %d\\n", in >= lo && in + RIP_INPUT0_BYTES <= hi,
           out >= lo && out + RIP_OUTPUT0_BYTES <= hi);
    printf("failed_op %d ok %d\\n", RIP_MODEL_FAILED_OP(4), RIP_MODEL_OK);
    /* an input from elsewhere: the bytes on stdin */
    if (fread(rip_model_input(0), 1, RIP_INPUT0_BYTES, stdin) != RIP_INPUT0_BYTES) return 2;
    const int status = rip_model_invoke();
    printf("status %d\\nbytes", status);
    for (uint32_t i = 0; i < RIP_OUTPUT0_BYTES; i++) printf(" %d", rip_model_output(0)[i]);
    printf("\\n");
    return 0;
}
"""


def tflite_quant(data: bytes, which: str) -> tuple[list[int], float, int]:
    """Shape, scale and zero point of the model's first input or output, read from the
    flatbuffer itself."""
    g = tflite.Model.GetRootAsModel(data, 0).Subgraphs(0)
    t = g.Tensors(int((g.InputsAsNumpy() if which == "in" else g.OutputsAsNumpy())[0]))
    q = t.Quantization()
    return list(t.ShapeAsNumpy()), float(q.ScaleAsNumpy()[0]), int(q.ZeroPointAsNumpy()[0])


def test_model_h_macros_and_functions_agree_with_the_model(tmp_path):
    data = example_model(0)
    graph = rewrite(read_model(data, name="example"))
    req = requirements(graph)
    plan = plan_model(graph, req, "rip", PlanOptions(placer="firstfit", time_limit=60))
    model = emit_model(graph, req, plan, "rip")
    write_host_project(model, tmp_path)
    (tmp_path / "main.c").write_text(API_C)
    try:
        binary = build_host(tmp_path)
    except BuildError as e:
        pytest.skip(str(e))
    x = np.random.default_rng(7).integers(-128, 128, size=model.inputs[0].nbytes, dtype=np.int8)
    proc = subprocess.run([str(binary)], input=x.tobytes(), capture_output=True, check=True)
    lines = dict(line.split(" ", 1) for line in proc.stdout.decode().splitlines())
    for which in ("in", "out"):
        shape, scale, zp = tflite_quant(data, which)
        nbytes = int(np.prod(shape))
        assert lines[which].split() == [str(nbytes), str(nbytes), str(nbytes), str(len(shape)),
                                        f"{np.float32(scale):.9g}", str(zp)]  # fmt: skip
    assert lines["inside"] == "1 1" and lines["failed_op"] == "3 ok 0"
    assert lines["status"] == "0"
    it = tflite_micro.runtime.Interpreter.from_bytes(data, arena_size=64 << 20)
    details = it.get_input_details(0)
    it.set_input(x.reshape(details["shape"]), 0)
    it.invoke()
    want = np.asarray(it.get_output(0)).astype(np.int8).ravel()
    assert [int(v) for v in lines["bytes"].split()] == want.tolist()


@pytest.mark.parametrize(
    "value, text",
    [
        (0.00390625, "0.00390625f"),
        (1.0, "1.0f"),
        (0.011415235698223114, "0.0114152357f"),
        (3e-10, "2.99999997e-10f"),
    ],
)
def test_c_float_reads_back_as_the_same_float32(value, text):
    literal = c_float(float(np.float32(value)))
    assert literal == text
    assert np.float32(float(literal[:-1])) == np.float32(value)
