"""BATCH_MATMUL (issue 28): rip_batch_matmul_s8 byte-equal to TensorFlow Lite Micro.

Models come from the TensorFlow-free writer (tests/tflite_writer, ``batch_matmul``); the
oracle is TFLite Micro's interpreter on the same bytes. Hypothesis draws ranks 2 to 5,
batch axes that broadcast (a 1 on either side), both adjoint flags, scales and zero points,
and constant operands; a small attention block (Q, K, V projections, QK^T with adj_y,
SOFTMAX, the product with V, an output projection and a residual ADD) is compiled whole
under every strategy, on the host and on qemu-m33.

BATCH_MATMUL has no in-place class: output (i, j) reads all of left row i and right column
j, so whatever overlay the output takes some later output reads a value already
overwritten (test_no_overlay_is_safe shows it for the overlay nearest to one).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import cbuild as cb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_codegen_host import compile_and_run
from test_lower_elementwise import Layout, layout, program, read, tflm
from tflite_writer import ModelBuilder

from rip.allocator.planning.parallel import plan_model
from rip.allocator.planning.requirements import requirements
from rip.cli.compile import main as compile_main
from rip.codegen.lowerings import lowering_for
from rip.codegen.matmul_params import matmul_params
from rip.codegen.reference_process import run_arena_use
from rip.core.errors import LoweringError, ModelError
from rip.core.operators import Op, spec
from rip.core.terms import Strategy
from rip.frontend.ir import Graph
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

F32 = np.float32


def run_op(graph: Graph, inputs: dict[int, np.ndarray], objects, workdir: Path,
           lay: Layout | None = None) -> bytes:  # fmt: skip
    """The graph's one op lowered, built as a C program with the kernels and run."""
    op = graph.operators[0]
    lay = lay or layout(graph, op)
    lowered = lowering_for(graph, op)(graph, op, 0, lay.buffers, "op0")
    assert lowered.scratch_bytes == 0
    out = graph.tensors[op.outputs[0]].nbytes
    status, got = cb.build_and_run(program(lowered, lay, inputs, out), objects, workdir)
    assert status == 0, f"exit {status}"
    return got


def matmul_model(x_shape, y_shape, adj_x: bool, adj_y: bool, quants, const: tuple[bool, bool],
                 rng: np.random.Generator) -> bytes:  # fmt: skip
    """One BATCH_MATMUL; ``const`` makes either operand a constant of random bytes."""
    (sx, zx), (sy, zy), (so, zo) = quants
    mb = ModelBuilder()
    operands = []
    for shape, s, z, is_const in ((x_shape, sx, zx, const[0]), (y_shape, sy, zy, const[1])):
        if is_const:
            data = rng.integers(-128, 128, size=shape, dtype=np.int8)
            operands.append(mb.constant_int8(data, [s], [z]))
        else:
            operands.append(mb.activation(shape, s, z))
    rank = max(len(x_shape), len(y_shape))
    xb = (1,) * (rank - len(x_shape)) + tuple(x_shape[:-2])
    yb = (1,) * (rank - len(y_shape)) + tuple(y_shape[:-2])
    rows = x_shape[-1] if adj_x else x_shape[-2]
    cols = y_shape[-2] if adj_y else y_shape[-1]
    out_shape = (*(max(a, b) for a, b in zip(xb, yb, strict=True)), rows, cols)
    out = mb.activation(out_shape, so, zo)
    mb.batch_matmul(*operands, out, adj_x=adj_x, adj_y=adj_y)
    mb.inputs([t for t, c in zip(operands, const, strict=True) if not c])
    mb.outputs([out])
    return mb.to_bytes()


@st.composite
def matmul_cases(draw):
    """Shapes of rank 2 to 5 whose batch axes broadcast, adj flags, quantization."""
    rank_x, rank_y = draw(st.integers(2, 5)), draw(st.integers(2, 5))
    rank = max(rank_x, rank_y)
    batch = [draw(st.integers(1, 3)) for _ in range(rank - 2)]
    xb = [b if draw(st.booleans()) else 1 for b in batch][rank - rank_x :]
    yb = [b if draw(st.booleans()) else 1 for b in batch][rank - rank_y :]
    rows, depth, cols = (draw(st.integers(1, 7)) for _ in range(3))
    adj_x, adj_y = draw(st.booleans()), draw(st.booleans())
    x_shape = (*xb, *((depth, rows) if adj_x else (rows, depth)))
    y_shape = (*yb, *((cols, depth) if adj_y else (depth, cols)))
    scale = st.floats(-7.0, -1.0).map(lambda e: float(F32(math.exp(e))))
    zp = st.integers(-128, 127)
    quants = [(draw(scale), draw(zp)) for _ in range(3)]
    # an output scale near the accumulator's spread, so the result is not all clamped
    spread = quants[0][0] * quants[1][0] * 64.0 * math.sqrt(depth)
    quants[2] = (float(F32(spread * draw(st.floats(0.05, 2.0)))), quants[2][1])
    const = draw(st.sampled_from([(False, False), (False, True), (True, False)]))
    return x_shape, y_shape, adj_x, adj_y, quants, const


@settings(max_examples=40, deadline=None)
@given(case=matmul_cases(), seed=st.integers(0, 2**16))
def test_batch_matmul_matches_tflm(kernel_objs, tmp_path_factory, case, seed) -> None:
    """Ranks 2 to 5, broadcasting on either side, adj_x and adj_y, any per-tensor
    quantization, a constant operand on either side: the bytes are TFLite Micro's."""
    x_shape, y_shape, adj_x, adj_y, quants, const = case
    rng = np.random.default_rng(seed)
    model = matmul_model(x_shape, y_shape, adj_x, adj_y, quants, const, rng)
    graph = read(model)
    inputs = {
        t: rng.integers(-128, 128, size=graph.tensors[t].shape, dtype=np.int8) for t in graph.inputs
    }
    want = tflm(model, list(inputs.values()))
    assert run_op(graph, inputs, kernel_objs, tmp_path_factory.mktemp("bmm")) == want


def test_params_follow_tflite_micro_prepare() -> None:
    """The multiplier is QuantizeMultiplier of s_x * s_y / s_out in double, and a broadcast
    batch axis has stride 0."""
    sx, sy, so = 0.1, 0.3, 0.7
    model = matmul_model((2, 1, 3, 4), (1, 3, 4, 5), False, False,
                         [(sx, 0), (sy, 0), (so, 0)], (False, False),
                         np.random.default_rng(0))  # fmt: skip
    graph = read(model)
    p = matmul_params(graph, graph.operators[0])
    real = float(F32(sx)) * float(F32(sy)) / float(F32(so))
    assert p.multiplier * 2.0 ** (p.shift - 31) == pytest.approx(real, rel=1e-9)
    assert (p.batch, p.lhs_batch_stride, p.rhs_batch_stride) == ((1, 2, 3), (0, 12, 0), (0, 0, 20))
    assert (p.rows, p.cols, p.depth, p.macs) == (3, 5, 4, 6 * 3 * 5 * 4)


def test_a_power_of_two_multiplier_rounds_as_tflite_micro(kernel_objs, tmp_path) -> None:
    """s_out = float32(s_x * s_y) * 32: in float32 the product makes the multiplier exactly
    1/32, in double (TFLite Micro's) just below it, which rounds ties otherwise. Found by
    the hypothesis test above; 4,096 outputs against TFLite Micro's."""
    s = 0.3678794503211975
    so = float(F32(F32(s) * F32(s) * F32(32.0)))
    rng = np.random.default_rng(1)
    model = matmul_model((64, 1), (1, 64), False, False, [(s, 0), (s, 1), (so, 0)],
                         (False, False), rng)  # fmt: skip
    graph = read(model)
    p = matmul_params(graph, graph.operators[0])
    assert (p.multiplier, p.shift) != (1 << 30, -4)  # not float32's exact 1/32
    inputs = {
        t: rng.integers(-12, 12, size=graph.tensors[t].shape, dtype=np.int8) for t in graph.inputs
    }
    want = tflm(model, list(inputs.values()))
    assert run_op(graph, inputs, kernel_objs, tmp_path) == want


def test_no_overlay_is_safe(kernel_objs, tmp_path) -> None:
    """No in-place class: the planner offers no overlay, and the lowering refuses one; the
    output over its left operand's base, the overlay a row-order writer would need, gives
    other bytes than TFLite Micro's (an output row longer than a left row: writing row i
    overwrites row i + 1 before it is read)."""
    rng = np.random.default_rng(3)
    model = matmul_model((1, 4, 3), (1, 3, 6), False, False,
                         [(0.05, 1), (0.04, -3), (0.3, 2)], (False, False), rng)  # fmt: skip
    graph = read(model)
    assert spec(Op.BATCH_MATMUL).in_place is None
    assert requirements(graph).ops[0].candidates == ()
    op = graph.operators[0]
    inputs = {t: rng.integers(-128, 128, size=graph.tensors[t].shape, dtype=np.int8)
              for t in graph.inputs}  # fmt: skip
    want = tflm(model, list(inputs.values()))
    with pytest.raises(LoweringError, match="in-place mode 'elementwise' is not supported"):
        lowering_for(graph, op)(graph, op, 0, layout(graph, op, "elementwise").buffers, "op0")
    # the same program with the output pointer moved onto the left operand's bytes
    lay = layout(graph, op)
    over = lay.offsets[op.inputs[0]]
    shifted = Layout(lay.buffers.__class__(lay.buffers.inputs, f"(rip_arena + {over})"),
                     lay.offsets, over, lay.arena_bytes)  # fmt: skip
    assert run_op(graph, inputs, kernel_objs, tmp_path, shifted) != want


def test_shapes_tflite_micro_refuses_are_refused() -> None:
    """Depths that differ and batch axes that do not broadcast: one line naming the op."""
    for x_shape, y_shape, match in (((2, 3, 4), (2, 5, 6), "depths 4 and 5 differ"),
                                    ((2, 3, 4), (3, 4, 5), "do not broadcast")):  # fmt: skip
        mb = ModelBuilder()
        x, y = mb.activation(x_shape, 0.1, 0), mb.activation(y_shape, 0.1, 0)
        out = mb.activation((2, 3, 5), 0.1, 0)
        mb.batch_matmul(x, y, out)
        mb.inputs([x, y])
        mb.outputs([out])
        with pytest.raises(ModelError, match=f"BATCH_MATMUL at index 0: .*{match}"):
            read_model(mb.to_bytes(), name="m")


# ---- an attention block ------------------------------------------------------------------


class _Block:
    """A single-head attention block written with calibrated quantization: each tensor's
    range is that of its float values on a calibration batch (as post-training
    quantization sets it), the float values then fake-quantized for the next layer."""

    def __init__(self, seed: int, tokens: int, width: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.mb = ModelBuilder()
        self.values: dict[int, np.ndarray] = {}
        scale = float(F32(2.0 / 255.0))
        self.x = self.mb.activation((1, tokens, width), scale, 0, "x")
        q = self.rng.integers(-128, 128, size=(16, tokens, width))
        self.values[self.x] = q * scale

    def _tensor(self, values: np.ndarray, name: str, quant: tuple[float, int] | None = None):
        if quant is None:
            lo, hi = min(float(values.min()), 0.0), max(float(values.max()), 0.0)
            scale = float(F32(max(hi - lo, 1e-6) / 255.0))
            quant = (scale, int(np.clip(round(-128 - lo / scale), -128, 127)))
        t = self.mb.activation((1, *values.shape[1:]), *quant, name)
        s, z = quant
        self.values[t] = (np.clip(np.round(values / s) + z, -128, 127) - z) * s
        return t

    def dense(self, x: int, units: int, name: str) -> int:
        v = self.values[x]
        w = self.rng.normal(0.0, 1.0 / math.sqrt(v.shape[-1]), size=(units, v.shape[-1]))
        ws = float(F32(np.abs(w).max() / 127.0))
        wq = np.clip(np.round(w / ws), -127, 127).astype(np.int8)
        xs = self.mb.quantization(x).scales[0]
        bias = self.rng.integers(-200, 200, size=units)
        y = v @ (wq * ws).T + bias * float(F32(xs) * F32(ws))
        out = self._tensor(y, name)
        weights = self.mb.constant_int8(wq, [ws], 0, 0, f"{name}/w")
        b = self.mb.bias(bias, xs, [ws], f"{name}/b")
        return self.mb.fully_connected(x, weights, b, out, keep_num_dims=True)

    def matmul(self, a: int, b: int, name: str, adj_y: bool = False) -> int:
        vb = self.values[b]
        y = self.values[a] @ (np.swapaxes(vb, -1, -2) if adj_y else vb)
        out = self._tensor(y, name)
        return self.mb.batch_matmul(a, b, out, adj_y=adj_y)

    def softmax(self, x: int) -> int:
        v = self.values[x]
        e = np.exp(v - v.max(axis=-1, keepdims=True))
        out = self._tensor(e / e.sum(axis=-1, keepdims=True), "attention", (1.0 / 256.0, -128))
        return self.mb.softmax(x, out)

    def add(self, a: int, b: int) -> int:
        out = self._tensor(self.values[a] + self.values[b], "residual")
        return self.mb.add(a, b, out)


def attention_model(seed: int = 0, tokens: int = 8, width: int = 16, head: int = 8) -> bytes:
    """x -> Q, K, V (FULLY_CONNECTED) -> softmax(Q K^T) (BATCH_MATMUL with adj_y) -> times V
    (BATCH_MATMUL) -> output projection -> x + that (ADD)."""
    blk = _Block(seed, tokens, width)
    q, k, v = (blk.dense(blk.x, head, name) for name in ("q", "k", "v"))
    scores = blk.matmul(q, k, "scores", adj_y=True)
    mixed = blk.matmul(blk.softmax(scores), v, "mixed")
    y = blk.add(blk.x, blk.dense(mixed, width, "proj"))
    blk.mb.inputs([blk.x])
    blk.mb.outputs([y])
    return blk.mb.to_bytes()


@pytest.mark.parametrize("strategy", ["rip", "dual", "tinyengine", "fused"])
def test_attention_block_matches_tflm(tmp_path, strategy) -> None:
    """The attention block compiled, built and run on the host: its checksum is TFLite
    Micro's under every strategy."""
    model = attention_model()
    got, want, _ = compile_and_run(model, tmp_path, strategy)
    assert got == want, f"{strategy}: 0x{got:08x} != 0x{want:08x}"


def test_attention_block_memory_at_most_tflite_micros() -> None:
    """rip's activation RAM (the arena, the kernels' scratch inside it) on the attention
    block is at most TFLite Micro's planned arena head (which leaves out the transposed
    copy of V it keeps in persistent memory: rip reads V in place)."""
    model = attention_model()
    graph = rewrite(read_model(model, name="m"))
    plan = plan_model(graph, requirements(graph), Strategy.RIP)
    assert plan.peak <= run_arena_use(model).head


def test_list_ops_shows_batch_matmul(capsys) -> None:
    """``rip-compile --list-ops`` lists BATCH_MATMUL with its kernel and no in-place class."""
    assert compile_main(["--list-ops"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "BATCH_MATMUL" in ln)
    assert "rip_batch_matmul_s8" in line


def assert_matches_on_qemu_m33(
    model: bytes, tmp_path: Path, capsys, board: str = "qemu-m33"
) -> None:
    """``model`` compiled for ``board`` (qemu-m33 by default) and run there (``--run
    --json``): its checksum is TFLite Micro's (the issue 28 tests' one QEMU run each)."""
    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    out = tmp_path / f"out-{board}"
    code = compile_main([str(path), "--board", board, "-o", str(out), "--run", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["match"] is True
    assert rep["checksum"] == rep["expected_checksum"]


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
def test_attention_block_on_qemu_m33(tmp_path: Path, capsys) -> None:
    """The attention block compiled for qemu-m33 and run: its checksum is TFLite Micro's."""
    assert_matches_on_qemu_m33(attention_model(1), tmp_path, capsys)
