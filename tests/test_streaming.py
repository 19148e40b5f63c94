"""Streamed input (issue 25, ``--stream-input``): the model's input arrives row by row from
a source and lives only in a ring of the first fused chain.

- the ring's rows: the schedule's count (`source_rows`) is what the simulator, which
  executes the deliveries and reads, finds minimal, and one row less loses reads;
- random streamed chains and MCUNet-in3 / Person-Det give TFLite Micro's bytes on the host;
- the replay refuses a ring one row short, and a plan that puts the input in the arena;
- the C API: rows asked for in order, each once, the whole frame; a failing or missing
  source stops the inference with RIP_MODEL_SOURCE_FAILED, and the next invoke works;
- options and models that cannot stream get one line and exit 2.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
import tflite_writer as tw
from cbuild import GCC
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from paths import shared_path
from test_fused import STAGE, chain_model
from tflite_micro.python.tflite_micro import runtime
from tflite_writer.generators import _Calibrated

from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.replay import replay
from rip.allocator.planning.requirements import fused_chain, requirements
from rip.allocator.theory.fused import source_rows
from rip.allocator.theory.simulate_fused import simulate_source_rows, source_evictions
from rip.allocator.theory.sweep_fused import make_chain_at
from rip.boards import load_board
from rip.cli.compile import main as compile_main
from rip.codegen.emit import emit_model
from rip.codegen.reference import checksum, reference_outputs
from rip.compiler import Options, analyse
from rip.core.errors import LayerError, ModelError, ReplayError
from rip.core.operators import Op
from rip.core.terms import Strategy
from rip.firmware.host_project import build_host, run_host, write_host_project
from rip.frontend.fusion import fuse
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite
from rip.frontend.streaming import stream_input


def test_source_rows_are_the_simulators_minimum():
    """Over 1,500 sweep chains, the rows the planner reserves are the fewest with which the
    simulated deliveries lose no read, and one fewer loses some."""
    checked = 0
    for index in range(1500):
        chain = make_chain_at(index, seed=11)
        rows = source_rows(chain)
        assert simulate_source_rows(chain) == rows, chain.describe()
        if rows > 1:
            assert source_evictions(chain, rows - 1) > 0, chain.describe()
        checked += 1
    assert checked == 1500


def streamed_plan(model: bytes):
    graph = stream_input(rewrite(read_model(model, name="m")))
    fgraph = fuse(graph)
    req = requirements(fgraph)
    return graph, fgraph, req, plan_model(fgraph, req, "fused")


def run_streamed(model: bytes, tmp) -> tuple[int, int]:
    graph, fgraph, req, plan = streamed_plan(model)
    write_host_project(emit_model(fgraph, req, plan, "fused"), tmp)
    build_host(tmp)
    return run_host(tmp).checksum, checksum(reference_outputs(model, graph))


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 10_000),
    hw=st.tuples(st.integers(3, 11), st.integers(3, 11)),
    c=st.integers(1, 8),
    stages=st.lists(STAGE, min_size=1, max_size=3),
)
def test_random_streamed_chains_match_tflite_micro(tmp_path_factory, seed, hw, c, stages):
    """A random chain (one stage or more: kernels, strides, dilation, padding) over a
    streamed input gives TFLite Micro's bytes on the host; its input has no arena bytes."""
    try:
        model = chain_model(seed, hw, c, stages, False)
    except ValueError:  # a geometry the writer refuses (kernel larger than the input)
        return
    try:
        graph, fgraph, _, plan = streamed_plan(model)
        (op,) = [op for op in fgraph.operators if op.kind == Op.FUSED_CHAIN][:1]
        fused_chain(fgraph, op.params.members, False)
    except (ModelError, LayerError, ValueError):
        return  # a first op that cannot stream, or outside Theorem 13's domain
    assert op.inputs == () and op.params.source == graph.inputs[0]
    assert graph.inputs[0] not in plan.offsets
    got, want = run_streamed(model, tmp_path_factory.mktemp("streamed"))
    assert got == want


STEM = (5, (10, 9), 3, [("conv", 3, 2, 8, "SAME"), ("dw", 3, 1, 1, "SAME"),
                        ("conv", 1, 1, 5, "VALID")], False)  # fmt: skip


def test_replay_refuses_a_ring_one_row_short():
    _, fgraph, _, plan = streamed_plan(chain_model(*STEM))
    replay(fgraph, plan, 4)
    (op,) = fgraph.operators
    assert op.params.source_rows == 3  # a 3x3 window, no clipping at the bottom
    short = replace(op.params, source_rows=2)
    squeezed = fgraph.with_(operators=(op.with_(params=short),))
    with pytest.raises(ReplayError, match="streamed input's ring of 2 rows"):
        replay(squeezed, plan, 4)
    placed = replace(plan, offsets={**plan.offsets, fgraph.inputs[0]: 0})
    with pytest.raises(ReplayError, match="streamed input"):
        replay(fgraph, placed, 4)


# A source that records the rows asked for; fails at row FAIL_AT on the first invoke, then
# serves the built-in frame; and an invoke without any source.
SOURCE_MAIN = r"""
#include <stdio.h>
#include <string.h>
#include "model.h"
#include "model_data.h"
static int asked[4096], n_asked, fail_at = -1;
static int32_t recording(void *user, int32_t row, int8_t *dst, int32_t bytes) {
    asked[n_asked++] = row;
    if (row == fail_at) return 1;
    return rip_model_read_rows_from_memory(user, row, dst, bytes);
}
int main(void) {
    printf("none %d\n", rip_model_invoke());
    if (rip_model_input(0) != NULL) return 3;
    fail_at = 2;
    rip_model_set_input_source(0, recording, (void *)rip_default_input_0);
    int status = rip_model_invoke();
    printf("failed %d asked %d\n", status, n_asked);
    fail_at = -1;
    n_asked = 0;
    status = rip_model_invoke();
    printf("ok %d asked %d\n", status, n_asked);
    for (int i = 0; i < n_asked; i++) if (asked[i] != i) return 4;
    unsigned sum = 0;
    const int8_t *out = rip_model_output(0);
    for (unsigned i = 0; i < rip_model_output_bytes(0); i++) sum = sum * 31u + (uint8_t)out[i];
    printf("sum %u rows %u\n", sum, RIP_INPUT0_ROWS);
    return 0;
}
"""


@pytest.mark.skipif(GCC is None, reason="needs gcc")
def test_row_source_contract(tmp_path):
    _, fgraph, req, plan = streamed_plan(chain_model(*STEM))
    emitted = emit_model(fgraph, req, plan, "fused")
    write_host_project(emitted, tmp_path)
    (tmp_path / "main.c").write_text(SOURCE_MAIN)
    sources = [*map(str, tmp_path.glob("*.c")), *map(str, (tmp_path / "kernels").glob("*.c"))]
    exe = tmp_path / "a.out"
    subprocess.run([GCC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O1", f"-I{tmp_path}",
                    f"-I{tmp_path / 'kernels'}", *sources, "-o", str(exe)], check=True)  # fmt: skip
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    lines = dict(line.split(" ", 1) for line in out.splitlines())
    assert lines["none"] == "-1"  # no source set: RIP_MODEL_SOURCE_FAILED, not a crash
    assert lines["failed"] == "-1 asked 3"  # stopped at once at the failing row
    assert lines["ok"] == "0 asked 10"  # every row of the 10-row frame, in order, once
    assert lines["sum"].endswith("rows 10")


QUANTIZE_MAIN = r"""
#include <stdio.h>
#include "model.h"
static const float x[] = { %s };
int main(void) {
    int8_t q[sizeof x / sizeof x[0]];
    rip_model_quantize_input(0, x, q, (uint32_t)(sizeof x / sizeof x[0]));
    for (unsigned i = 0; i < sizeof x / sizeof x[0]; i++) printf("%%d\n", q[i]);
    return 0;
}
"""


def _quantize_model(scale: float, zero_point: int, relu: bool) -> bytes:
    """A float input QUANTIZEd to int8 (scale, zero point): the QUANTIZE alone (TFLite
    Micro's output is its bytes), or followed by a RELU (what rip compiles: the QUANTIZE
    becomes the caller's, model.h's rip_model_quantize_input)."""
    b = tw.ModelBuilder()
    x = b.activation((1, 4, 8, 2), dtype="float32", name="x")
    q = b.activation((1, 4, 8, 2), scale, zero_point, "q")
    b.quantize(x, q)
    y = q
    if relu:
        y = b.activation((1, 4, 8, 2), scale, zero_point, "y")
        b.unary("RELU", q, y)
    b.inputs([x])
    b.outputs([y])
    return b.to_bytes()


@pytest.mark.skipif(GCC is None, reason="needs gcc")
@pytest.mark.parametrize(("scale", "zero_point"), [(0.0078125, 0), (0.0392156877, -128), (0.3, 17)])
def test_quantize_input_is_tflite_micros_quantize(tmp_path, scale, zero_point):
    """The float interface, applied a row at a time (or to a whole resident input): model.h's
    rip_model_quantize_input gives TFLite Micro's QUANTIZE bytes for halves (ties), values
    that saturate, zeros of both signs and random floats."""
    s = np.float32(scale)
    ties = (np.arange(-140, 140, dtype=np.float32) + np.float32(0.5)) * s
    rng = np.random.default_rng(1)
    # quotients past int32 are left out: TFLite Micro's own result is undefined there (its
    # float-to-int32 cast: INT32_MIN on x86, saturated on Arm); ours saturates
    extra = np.array([0.0, -0.0, 1e6, -1e6, 1.5e7, -1.5e7], dtype=np.float32)
    x = np.concatenate([ties, rng.normal(0, 40 * scale, 200).astype(np.float32), extra])
    x = np.resize(x, (len(x) + 63) // 64 * 64).astype(np.float32)  # whole (1, 4, 8, 2) frames
    it = runtime.Interpreter.from_bytes(_quantize_model(scale, zero_point, False))
    want = []
    for frame in x.reshape(-1, 1, 4, 8, 2):
        it.set_input(frame, 0)
        it.invoke()
        want.extend(np.asarray(it.get_output(0)).ravel().tolist())
    path = tmp_path / "m.tflite"
    path.write_bytes(_quantize_model(scale, zero_point, True))
    c = analyse(path, load_board("host"), Options(cache=False))
    write_host_project(emit_model(c.variant.graph, c.variant.req, c.plan, c.strategy), tmp_path)
    floats = ", ".join(f"{float(v)!r}f" if np.isfinite(v) else "0.0f" for v in x)
    (tmp_path / "main.c").write_text(QUANTIZE_MAIN % floats)
    sources = [*map(str, tmp_path.glob("*.c")), *map(str, (tmp_path / "kernels").glob("*.c"))]
    exe = tmp_path / "a.out"
    subprocess.run([GCC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", f"-I{tmp_path}",
                    f"-I{tmp_path / 'kernels'}", *sources, "-o", str(exe)], check=True)  # fmt: skip
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert [int(v) for v in out.split()] == want


def test_shared_models_stream_to_tflite_micros_bytes(tmp_path):
    """MCUNet-in3 and Person-Det with --stream-input: TFLite Micro's checksum on the host,
    the input nowhere in the arena, and the total well below the resident plan's."""
    for name, resident in (("mcunet-in3", 98_840), ("person-det", 75_800)):
        path = shared_path("models", "mcunet", f"{name}.tflite")
        c = analyse(path, load_board("host"),
                    Options(strategy=Strategy.FUSED, stream_input=True, cache=False))  # fmt: skip
        graph = c.variant.graph
        assert graph.streamed == (graph.inputs[0],)
        assert graph.inputs[0] not in c.plan.offsets
        assert c.plan.peak < 0.7 * resident, name
        target = {"mcunet-in3": 64 * 1024, "person-det": 30 * 1024}[name]  # issue 25's
        assert c.plan.peak <= target, name
        out = tmp_path / name
        write_host_project(emit_model(graph, c.variant.req, c.plan, "fused"), out)
        build_host(out)
        want = checksum(reference_outputs(path.read_bytes(), c.graph))
        assert run_host(out).checksum == want, name


@pytest.mark.skipif(
    not (shutil.which("arm-none-eabi-gcc") and shutil.which("qemu-system-arm")),
    reason="needs arm-none-eabi-gcc and qemu-system-arm",
)
@pytest.mark.parametrize("board", ["qemu-m33", "qemu-armv6m"])
def test_streamed_stem_on_the_emulated_cores(tmp_path, board, capsys):
    """The bare-metal firmware of a streamed model on both emulated cores prints TFLite
    Micro's checksum (its rows read from flash by the default source)."""
    model = tmp_path / "stem.tflite"
    model.write_bytes(chain_model(*STEM))
    code = compile_main([str(model), "--board", board, "--stream-input", "-o",
                         str(tmp_path / "out"), "--run", "--json", "--quiet"])  # fmt: skip
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["match"] is True, rep.get("result_line")
    assert rep["strategy"] == "fused"


def _cli(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rip.cli.compile", *argv],
                          capture_output=True, text=True)  # fmt: skip


def test_refusals_are_one_line(tmp_path):
    model = tmp_path / "stem.tflite"
    model.write_bytes(chain_model(*STEM))
    r = _cli(str(model), "--board", "host", "--stream-input", "--strategy", "rip")
    assert r.returncode == 2 and "--stream-input needs --strategy fused" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    net = _Calibrated(3)  # the input read by two ops: it cannot stream
    x = net.input((1, 6, 6, 2))
    y = net.add(net.conv(x, 2, 1), x)
    two = tmp_path / "two.tflite"
    two.write_bytes(net.finish([x], [y]))
    r = _cli(str(two), "--board", "host", "--stream-input")
    assert r.returncode == 2, r.stderr
    assert "cannot stream: 2 ops read it" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_the_streamed_op_alone_costs_no_budget(tmp_path):
    """The op reading a streamed input runs as a chain of one whatever the budget; fusing
    more with it must fit the instruction budget like any chain (the stem's whole chain is
    estimated above 5%, so it stays a chain of one; it was once fused whole, over budget)."""
    model = tmp_path / "stem.tflite"
    model.write_bytes(chain_model(*STEM))
    c = analyse(model, load_board("host"), Options(stream_input=True, cache=False))
    f = c.variant.fusion
    assert f is not None and f.overhead <= f.budget
    assert [(s.first, s.last, s.source_rows) for s in f.chains] == [(0, 0, 3)]
    whole = analyse(model, load_board("host"),
                    Options(stream_input=True, max_overhead=None, cache=False))  # fmt: skip
    assert whole.plan.peak <= c.plan.peak
