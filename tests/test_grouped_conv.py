"""Grouped CONV_2D (issue 28): a CONV_2D whose filter has C_in / G input channels, read as
GROUPED_CONV_2D and run by rip_conv2d_grouped_s8, byte-equal to TensorFlow Lite Micro.

Models come from the TensorFlow-free writer (tests/tflite_writer, ``groups``); the oracle
is TFLite Micro's interpreter on the same bytes. The kernel runs out of place and in place
at the gap the planner gives a CONV_2D (rip_bound, row-order gather), which the simulator
confirms for its traversal and which is tight: a smaller gap corrupts the output.
"""

from __future__ import annotations

import ctypes
import json
from pathlib import Path

import cbuild as cb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_codegen_host import compile_and_run
from test_kernels_spatial import (
    Arena,
    per_channel,
    random_input,
    scratch,
    single_op,
    tflm,
    weighted_args,
)
from tflite_writer import ModelBuilder, random_conv_model

from rip.allocator.planning.requirements import conv_geometry, op_scratch_bytes, requirements
from rip.allocator.theory.bounds import rip_bound
from rip.allocator.theory.simulate import simulate_rip
from rip.cli.compile import main as compile_main
from rip.codegen import conv_params as cp
from rip.core.errors import ModelError
from rip.core.operators import Op
from rip.frontend.ir import Graph, Operator
from rip.frontend.reader import read_model

HW, Act, ConvParams = cb.HW, cb.Act, cb.ConvParams


@pytest.fixture(scope="session")
def lib(kernel_lib: ctypes.CDLL) -> ctypes.CDLL:
    return kernel_lib


def run_grouped(
    lib: ctypes.CDLL, graph: Graph, op: Operator, x: np.ndarray, gap: int | None, seed: int = 0
) -> bytes:
    """rip_conv2d_grouped_s8 over ``x``; ``gap``: the output starts gap bytes below the
    input in one buffer (None: separate buffers)."""
    p = cp.conv_params(graph, op)
    arena = Arena.build(x, int(np.prod(p.output_dims)), gap, seed)
    ctx, _scratch = scratch(p.scratch_bytes, seed)
    quant, *_quant = per_channel(p)
    args, _data = weighted_args(graph, op, p, arena)
    params = ConvParams(p.input_offset, p.output_offset, HW(*p.stride), HW(*p.padding),
                        HW(*p.dilation), Act(*p.activation))  # fmt: skip
    return arena.result(lib.rip_conv2d_grouped_s8(ctx, params, quant, *args, arena.output))


def grouped_model(seed: int, h: int, w: int, c_group: int, groups: int, per_group: int,
                  **kw: object) -> bytes:  # fmt: skip
    return random_conv_model(seed, h=h, w=w, c_in=c_group * groups, c_out=per_group * groups,
                             groups=groups, **kw)  # type: ignore[arg-type]  # fmt: skip


PADDINGS = ["SAME", "VALID", (1, 0, 2, 1), (0, 2, 1, 1)]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    hw=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    c_group=st.integers(1, 4),
    groups=st.integers(2, 4),
    per_group=st.integers(1, 3),
    kernel=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 2), st.integers(1, 2)),
    dilation=st.integers(1, 2),
    padding=st.sampled_from(PADDINGS),
    per_ch=st.booleans(),
    activation=st.sampled_from(["NONE", "RELU", "RELU6"]),
)
def test_grouped_kernel_matches_tflm_out_of_place_and_in_place(
    lib, seed, hw, c_group, groups, per_group, kernel, stride, dilation, padding, per_ch,
    activation,
):  # fmt: skip
    """Shapes, groups, strides, dilations, paddings (explicit ones folded from a PAD),
    per-channel and per-tensor weights: the kernel's bytes are TFLite Micro's, out of
    place and with the output the planner's gap below its input (where it offers one)."""
    try:
        model = grouped_model(seed, *hw, c_group, groups, per_group, kernel=kernel,
                              stride=stride, dilation=dilation, padding=padding,
                              per_channel=per_ch, activation=activation)  # fmt: skip
    except ValueError:  # a window larger than the padded input
        return
    graph, op = single_op(model)
    assert op.kind == Op.GROUPED_CONV_2D
    x = random_input(graph, seed)
    expected = tflm(model, x)
    assert run_grouped(lib, graph, op, x, None, seed) == expected
    # in place wherever the planner offers it (not where the padding leaves Theorem 13's
    # domain, as for a CONV_2D)
    for candidate in requirements(graph).ops[0].candidates:
        assert candidate.gap == rip_bound(conv_geometry(graph, op), "dense", "gather", "row").gap
        assert run_grouped(lib, graph, op, x, candidate.gap, seed) == expected


@pytest.mark.parametrize(
    ("c_group", "groups", "per_group", "kernel", "stride", "padding"),
    [(2, 4, 2, 3, 1, "SAME"), (4, 2, 4, 3, 1, (1, 1, 0, 2)), (1, 8, 1, (3, 1), 1, "SAME")],
)
def test_the_gap_is_the_simulators_and_tight(lib, c_group, groups, per_group, kernel, stride,
                                             padding):  # fmt: skip
    """The planner's gap is the simulator's for the kernel's traversal (one field gathered
    a pixel, row order), and one byte (or four) less corrupts the output: the grouped
    kernel really runs over its own input."""
    model = grouped_model(3, 12, 10, c_group, groups, per_group, kernel=kernel, stride=stride,
                          padding=padding)  # fmt: skip
    graph, op = single_op(model)
    geom = conv_geometry(graph, op)
    gap = rip_bound(geom, "dense", "gather", "row").gap
    assert gap == simulate_rip(geom, "dense", "gather", "row", tile=1)
    assert gap > max(0, geom.n_out - geom.n_in_dense), "a live input must set the gap"
    x = random_input(graph, 0)
    expected = tflm(model, x)
    assert run_grouped(lib, graph, op, x, gap) == expected
    assert run_grouped(lib, graph, op, x, gap - 1) != expected
    assert run_grouped(lib, graph, op, x, gap - 4) != expected


def test_scratch_is_the_c_twin(lib) -> None:
    """rip_conv2d_grouped_s8_get_buffer_size is the planner's formula: KH * KW * the
    input's channels."""
    graph, op = single_op(grouped_model(0, 6, 6, 3, 4, 2, kernel=(3, 2)))
    p = cp.conv_params(graph, op)
    twin = lib.rip_conv2d_grouped_s8_get_buffer_size(cb.Dims(*p.input_dims),
                                                     cb.Dims(*p.filter_dims))  # fmt: skip
    assert twin == p.scratch_bytes == op_scratch_bytes(graph, op) == 3 * 2 * 12


@pytest.mark.parametrize(
    ("name", "c_group", "groups", "per_group", "stride", "padding", "per_ch"),
    [
        ("g4_same", 4, 4, 2, 1, "SAME", True),
        ("g2_s2_valid_per_tensor", 3, 2, 3, 2, "VALID", False),
        ("g3_explicit_pad", 2, 3, 2, 1, (1, 0, 0, 1), True),
    ],
)
@pytest.mark.parametrize("strategy", ["rip", "dual", "tinyengine", "fused"])
def test_compiled_model_matches_tflm(tmp_path, name, c_group, groups, per_group, stride,
                                     padding, per_ch, strategy):  # fmt: skip
    """A model with a grouped conv between two ordinary ones, compiled, built and run on
    the host: the checksum of its outputs is TFLite Micro's under every strategy."""
    from tflite_writer.generators import _Calibrated

    net = _Calibrated(len(name))
    x = net.input((1, 9, 8, 3))
    y = net.conv(x, c_group * groups, 3, activation="RELU")
    y = net.conv(y, per_group * groups, 3, stride, 1, padding, "RELU6", per_ch, groups)
    y = net.conv(y, 5, 1)
    model = net.finish([x], [y])
    got, want, _ = compile_and_run(model, tmp_path, strategy)
    assert got == want, f"{name} under {strategy}: 0x{got:08x} != 0x{want:08x}"


def test_filter_channels_not_a_divisor_are_refused(tmp_path) -> None:
    """A filter whose input channels do not divide the input's is refused with one line
    naming both counts and saying it is no grouped convolution either."""
    mb = ModelBuilder()
    x = mb.activation((1, 4, 4, 6), 0.05, 0)
    w = mb.constant_int8(np.ones((4, 1, 1, 4), np.int8), [0.01], 0, 0)
    b = mb.bias(np.zeros(4, np.int64), 0.05, [0.01])
    y = mb.activation((1, 4, 4, 4), 0.05, 0)
    mb.operator("CONV_2D", (x, w, b), (y,), "Conv2DOptions",
                (("Padding", 0), ("StrideW", 1), ("StrideH", 1)))  # fmt: skip
    mb.inputs([x])
    mb.outputs([y])
    with pytest.raises(ModelError, match="filter has 4 input channels, input 6: not a divisor"):
        read_model(mb.to_bytes(), name="m")


def test_list_ops_shows_grouped_conv(capsys) -> None:
    """``rip-compile --list-ops`` lists GROUPED_CONV_2D with its in-place class and kernel."""
    assert compile_main(["--list-ops"]) == 0
    line = next(ln for ln in capsys.readouterr().out.splitlines() if "GROUPED_CONV_2D" in ln)
    assert "rip" in line.split() and "rip_conv2d_grouped_s8" in line


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
def test_grouped_model_on_qemu_m33(tmp_path: Path, capsys) -> None:
    """The grouped model compiled for qemu-m33 (the SMLAD dot product) and run: its
    checksum is TFLite Micro's."""
    path = tmp_path / "grouped.tflite"
    path.write_bytes(grouped_model(5, 10, 9, 4, 4, 2, kernel=3, padding="SAME"))
    out = tmp_path / "out"
    code = compile_main([str(path), "--board", "qemu-m33", "-o", str(out), "--run", "--json"])
    rep = json.loads(capsys.readouterr().out)
    assert code == 0 and rep["match"] is True
    assert rep["checksum"] == rep["expected_checksum"]
