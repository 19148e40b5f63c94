"""bench-cmsis's pure-Python parts: TFLite Micro's CMSIS-NN arguments for a layer (checked
against values worked out by hand), the harness arena, the parsing of both firmwares'
lines, the per-class sums and the three-way output check. No QEMU here: the benchmark
itself is `make bench-cmsis`."""

from __future__ import annotations

import importlib.util
import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

from rip.frontend.ir import (
    BatchMatMulParams,
    Conv2DParams,
    ElementwiseParams,
    FullyConnectedParams,
    Graph,
    NoParams,
    Operator,
    Padding,
    Quant,
    Tensor,
)

BENCHMARKS = Path(__file__).resolve().parents[1]


def _load(name: str):
    path = BENCHMARKS / f"{name}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


layers_mod = _load("cmsis_layers")
bench = _load("bench_cmsis")


def _act(tid: int, shape, scale=0.5, zp=-3) -> Tensor:
    return Tensor(tid, f"t{tid}", shape, "int8", Quant((scale,), (zp,)))


def _graph() -> Graph:
    """conv 1x1 (t0 -> t3) ; ADD(t3, t0) -> t4 ; RESHAPE t4 -> t5 (the output)."""
    w = np.ones((2, 1, 1, 2), np.int8).tobytes()
    b = np.array([7, -7], np.int32).tobytes()
    tensors = {
        0: _act(0, (1, 2, 2, 2), 0.5, -3),
        1: Tensor(1, "w", (2, 1, 1, 2), "int8", Quant((0.25, 0.5), (0, 0), 3), True, w),
        2: Tensor(2, "b", (2,), "int32", None, True, b),
        3: _act(3, (1, 2, 2, 2), 1.0, 5),
        4: _act(4, (1, 2, 2, 2), 1.0, 0),
        5: _act(5, (1, 8), 1.0, 0),
    }
    ops = (
        Operator("CONV_2D", (0, 1, 2), (3,), Conv2DParams(padding=Padding(1, 0, 1, 0)), 0),
        Operator("ADD", (3, 0), (4,), ElementwiseParams(), 1),
        Operator("RESHAPE", (4,), (5,), NoParams(), 2),
    )
    return Graph("tiny", tensors, ops, (0,), (5,))


def test_conv_arguments_are_tflite_micros():
    g = _graph()
    offsets, _ = layers_mod.plan_arena(g)
    conv = layers_mod.build_layers(g, offsets)[0]
    # 0.5 * 0.25 / 1.0 = 2^-3 -> 2^30 * 2^(-2 - 31 + 31); 0.5 * 0.5 = 2^-2 -> shift -1
    assert conv.data["mult"] == ("int32_t", [1 << 30, 1 << 30])
    assert conv.data["shift"] == ("int32_t", [-2, -1])
    assert conv.data["b"] == ("int32_t", [7, -7])
    a = conv.args
    assert (a["input_offset"], a["output_offset"]) == (3, 5)
    assert a["padding"] == (1, 1)  # top, left: what TFLite Micro passes as padding.h, .w
    assert a["filter_dims"] == (1, 1, 1, 2)
    assert a["activation"] == (-128, 127)
    assert (conv.op_class, conv.macs) == ("1x1 conv", 16)
    # padded, so arm_convolve_wrapper_s8 takes its im2col path, not the 1x1 one
    assert conv.routine == "arm_convolve_s8"


def test_add_arguments_are_tflite_micros():
    g = _graph()
    offsets, _ = layers_mod.plan_arena(g)
    add = layers_mod.build_layers(g, offsets)[1]
    # twice the larger input scale = 2.0: 1.0/2 = 2^-1 -> (2^30, 0), 0.5/2 = 2^-2 ->
    # (2^30, -1); output 2.0 / (2^20 * 1.0) = 2^-19 -> (2^30, -18)
    assert add.args["in1"] == (-5, 1 << 30, 0)
    assert add.args["in2"] == (3, 1 << 30, -1)
    assert add.args["out"] == (0, 1 << 30, -18)
    assert add.args["left_shift"] == 20
    assert add.args["size"] == 8
    assert add.input_offsets == (offsets[3], offsets[0])


def test_arena_keeps_live_tensors_apart_and_aliases_together():
    g = _graph()
    offsets, size = layers_mod.plan_arena(g)
    assert offsets[5] == offsets[4]  # RESHAPE shares its input's bytes
    # t0 is read by the ADD, so t0, t3 and t4 are live together: disjoint 16-byte blocks
    spans = sorted((offsets[t], offsets[t] + 16) for t in (0, 3, 4))
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans))
    assert size == 48


def test_unsupported_op_is_named():
    g = _graph()
    ops = (*g.operators[:1], Operator("LOGISTIC", (3,), (4,), NoParams(), 7))
    g = g.with_(operators=ops, outputs=(4,))
    offsets, _ = layers_mod.plan_arena(g)
    with pytest.raises(layers_mod.LayerError, match=r"tiny: LOGISTIC \(operator 7"):
        layers_mod.build_layers(g, offsets)


def test_batch_matmul_arguments_are_tflite_micros():
    """Q K^T (adj_y: V as stored) and A V (V transposed first), both [1, T, D]: dims as
    FillVariableShape after the compression of a third-last right axis of 1, the multiplier
    from the float32 product of the operand scales."""
    tensors = {
        0: _act(0, (1, 3, 4), 0.5, 1),
        1: _act(1, (1, 3, 4), 0.25, -2),
        2: _act(2, (1, 3, 3), 0.125, 4),
        3: _act(3, (1, 3, 4), 0.5, 0),
    }
    ops = (
        Operator("BATCH_MATMUL", (0, 1), (2,), BatchMatMulParams(adj_y=True), 0),
        Operator("BATCH_MATMUL", (2, 1), (3,), BatchMatMulParams(), 1),
    )
    g = Graph("bmm", tensors, ops, (0, 1), (3,))
    offsets, _ = layers_mod.plan_arena(g)
    qk, av = layers_mod.build_layers(g, offsets)
    assert (qk.args["lhs_dims"], qk.args["rhs_dims"], qk.args["output_dims"]) == (
        (1, 1, 3, 4), (1, 1, 3, 4), (1, 1, 3, 3))  # fmt: skip
    assert qk.args["transposes"] == [] and qk.routine == "arm_batch_matmul_s8"
    assert (qk.args["input_offset"], qk.args["filter_offset"], qk.args["output_offset"]) == (
        -1, 2, 4)  # fmt: skip
    assert (qk.args["mult"], qk.args["shift"]) == (1 << 30, 1)  # 0.5 * 0.25 / 0.125 = 1
    # V [1, 3, 4] transposed to [1, 4, 3]: rhs rows 4 (output channels), cols 3 (depth)
    assert av.args["transposes"] == [(1, 1, 3, 4)] and av.buffers == {"t1": 12}
    assert (av.args["rhs_dims"], av.args["output_dims"]) == ((1, 1, 4, 3), (1, 1, 3, 4))
    assert av.macs == 3 * 4 * 3 and av.op_class == "batch matmul"


@pytest.mark.parametrize("wide", [False, True], ids=["int8", "16x8"])
def test_lstm_arguments_are_tflite_micros(wide):
    """UNIDIRECTIONAL_SEQUENCE_LSTM: arm_lstm_unidirectional_s8 (int32 biases) or _s16
    (int64), TFLite Micro's Prepare values (offsets, the cell scale's power, no clip), the
    operands as stored, the effective-bias buffers of the bias type and the three int16
    scratch buffers; MACs: steps x 4 gates x units x (features + units)."""
    pytest.importorskip("tflite_micro")  # test_lstm's module needs it
    from test_lstm import lstm_model

    from rip.frontend.reader import read_model

    scales = (0.05, -20, 2 / 255, -1, 2.0**-11, [0.004] * 8)
    model = lstm_model(1, 3, 5, 4, time_major=False, wide=wide, cell_clip=0.0, scales=scales,
                       rng=np.random.default_rng(0))  # fmt: skip
    g = read_model(model, name="m")
    offsets, _ = layers_mod.plan_arena(g)
    (lstm,) = layers_mod.build_layers(g, offsets)
    assert lstm.routine == "arm_lstm_unidirectional_" + ("s16" if wide else "s8")
    assert lstm.op_class == "lstm" and lstm.macs == 3 * 4 * 4 * (5 + 4)
    a = lstm.args
    assert (a["batch"], a["steps"], a["features"], a["units"], a["time_major"]) == (1, 3, 5, 4, 0)
    # 16x8 zero points are 0 (the builder's); int8: -(-20) and -1
    assert (a["input_offset"], a["hidden_zero_point"]) == ((0, 0) if wide else (20, -1))
    assert (a["cell_scale_power"], a["cell_clip"]) == (-11, 0)
    assert lstm.data["b0"][0] == ("int64_t" if wide else "int32_t")
    assert len(lstm.data["wx0"][1]) == 4 * 5 and len(lstm.data["wh3"][1]) == 4 * 4
    sums = 8 if wide else 4
    assert lstm.buffers["sx0"] == sums * 4 and lstm.buffers["sh3"] == sums * 4
    assert lstm.buffers["temp1"] == lstm.buffers["cell"] == 2 * 4


def test_fully_connected_16x8_and_as_1x1_conv():
    """int16: arm_fully_connected_s16 with int16's clamp and an int64 bias; int8 with a 3-D
    output and a depth that is a multiple of 4: arm_convolve_1x1_s8_fast, the per-tensor
    multiplier once per output channel."""
    w = np.ones((2, 4), np.int8).tobytes()
    wide = Tensor(0, "x", (1, 4), "int16", Quant((0.5,), (0,)))
    tensors = {
        0: wide,
        1: Tensor(1, "w", (2, 4), "int8", Quant((0.25,), (0,)), True, w),
        2: Tensor(2, "b", (2,), "int64", None, True, np.array([5, -5], np.int64).tobytes()),
        3: Tensor(3, "y", (1, 2), "int16", Quant((0.125,), (0,))),
    }
    fc = Operator("FULLY_CONNECTED", (0, 1, 2), (3,), FullyConnectedParams(), 0)
    g = Graph("fc16", tensors, (fc,), (0,), (3,))
    (layer,) = layers_mod.build_layers(g, layers_mod.plan_arena(g)[0])
    assert (layer.routine, layer.ctype, layer.args["variant"]) == (
        "arm_fully_connected_s16", "int16_t", "s16")  # fmt: skip
    assert layer.data["b"] == ("int64_t", [5, -5])
    assert layer.args["activation"] == (-32768, 32767)
    assert (layer.args["mult"], layer.args["shift"]) == (1 << 30, 1)
    tensors = {
        0: _act(0, (1, 3, 4), 0.5, 1),
        1: tensors[1],
        3: _act(3, (1, 3, 2), 0.125, 0),
    }
    fc = Operator("FULLY_CONNECTED", (0, 1, -1), (3,),
                  FullyConnectedParams(keep_num_dims=True), 0)  # fmt: skip
    g = Graph("fc1x1", tensors, (fc,), (0,), (3,))
    (layer,) = layers_mod.build_layers(g, layers_mod.plan_arena(g)[0])
    assert layer.routine == "arm_convolve_1x1_s8_fast" and layer.args["batches"] == 3
    assert layer.data["mult"] == ("int32_t", [1 << 30] * 2)
    assert layer.data["shift"] == ("int32_t", [1] * 2)


def test_nearest_indices_follow_tflite():
    assert layers_mod.nearest_indices(4, 8, False, False) == [0, 0, 1, 1, 2, 2, 3, 3]
    # align_corners: scale (3-1)/(5-1) = 0.5, rounded half away from zero
    assert layers_mod.nearest_indices(3, 5, True, False) == [0, 1, 1, 2, 2]
    # half-pixel centres: floor((v + 0.5) * 0.5)
    assert layers_mod.nearest_indices(2, 4, False, True) == [0, 0, 1, 1]


def test_parse_lines_of_both_firmwares():
    cm = bench.parse_cmsis([
        "noise",
        "CMSIS layer=0 instructions=1200 status=0 crc=0x0000abcd",
        "CMSIS layer=1 instructions=50 status=error crc=0xffffffff",
        "CMSIS-DONE checksum=0x12345678",
    ])  # fmt: skip
    assert cm == {"layers": {0: (1200, "0", 0xABCD), 1: (50, "error", 0xFFFFFFFF)},
                  "checksum": 0x12345678}  # fmt: skip
    rp = bench.parse_rip([
        "BENCH shift=3 source=9 instructions=100",
        "BENCH op=3 source=9 tensor=4 instructions=500 crc=0x00000001",
        "BENCH op=4 source=9 tensor=5 instructions=20 crc=0x00000002",
        "RIP-RESULT ...",
    ])  # fmt: skip
    assert rp == {"ops": {9: [520, 2, 5]}, "shifts": {9: 100}}


def _spec(index, op, cls, macs, output):
    return layers_mod.Layer(index, op, "CONV_2D", cls, macs, output, 8)


def test_compare_sums_classes_and_reports_every_mismatch():
    cm = {"spec": [_spec(0, 0, "1x1 conv", 100, 3), _spec(1, 1, "pad", 0, 6),
                   _spec(2, 2, "dw 3x3", 50, 4)],
          "layers": {0: (300, "0", 11), 1: (40, "0", 12), 2: (400, "0", 13)},
          "checksum": 99}  # fmt: skip
    rp = {"ops": {0: [240, 11, 3], 2: [500, 14, 4]}, "shifts": {2: 30}, "checksum": 99,
          "plain_checksum": 99, "total": 800, "graph_ops": {}}  # fmt: skip
    tflm = {3: 11, 6: 12, 4: 13}
    res = bench.compare("m", cm, rp, tflm, 99)
    c = res["classes"]
    assert c["1x1 conv"] == {"layers": 1, "macs": 100, "rip": 240, "cmsis": 300}
    assert c["pad"]["rip"] == 0  # folded into rip's convolution
    assert c["rip shift"] == {"layers": 0, "macs": 0, "rip": 30, "cmsis": 0}
    assert bench.worst_class(c) == ("dw 3x3", 1.25)
    assert res["mismatches"] == ["m op 2 CONV_2D: rip output != CMSIS-NN",
                                 "m op 2: rip output != TFLite Micro (tensor 4)"]  # fmt: skip
    bad = bench.compare("m", cm, {**rp, "checksum": 1}, tflm, 98)["mismatches"]
    assert "m: CMSIS-NN chain output checksum != TFLite Micro's" in bad
    assert "m: rip output checksum != TFLite Micro's" in bad


def test_missing_cmsis_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("CMSIS_NN_DIR", raising=False)
    monkeypatch.delenv("CMSIS_CORE_DIR", raising=False)
    assert bench.main(["--cmsis-nn", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("bench-cmsis: CMSIS-NN not found") and err.count("\n") == 1
    (tmp_path / "Include").mkdir()
    (tmp_path / "Include" / "arm_nnfunctions.h").write_text("")
    with pytest.raises(bench.BenchError, match="CMSIS Core not found"):
        bench.find_cmsis(str(tmp_path), str(tmp_path))
    core = tmp_path / "CMSIS" / "Core" / "Include"
    core.mkdir(parents=True)
    (core / "cmsis_compiler.h").write_text("")
    assert bench.find_cmsis(str(tmp_path), str(tmp_path)) == (tmp_path.resolve(), core.resolve())


def test_c_values_lines():
    assert bench.c_values([1, -2, 3], per_line=2) == "    1, -2,\n    3"
