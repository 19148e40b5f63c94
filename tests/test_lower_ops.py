"""Operators beyond the first 22 (issue 14, first half): reductions (kernels/rip_reduce.h),
table activations and broadcasting binary ops (rip_activation.h, rip_elementwise.h), each a
single-op model written with our TFLite writer, read and rewritten as the compiler does,
lowered into a test arena, built with gcc -Werror and run, its output bytes compared with
TensorFlow Lite Micro's on the same random input. Shapes, parameters and quantisation are
drawn by Hypothesis; example counts stay small (every example is a C build).

In-place cases put the output over its full-size input at gap 0, as the plan would; the
property that one alignment unit less gap corrupts is in test_liveness_requirements-style
replay checks at the end of this file.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import cbuild as cb
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lower_elementwise import finish, layout, program, rand_quant, read
from tflite_micro import runtime
from tflite_writer import ModelBuilder

from rip.codegen.kernels import lowering_for
from rip.errors import LoweringError, ModelError
from rip.frontend.ir import Graph
from rip.frontend.reader import read_model

SETTINGS = settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def tflm_outputs(model: bytes, arrays: Sequence[np.ndarray]) -> bytes:
    """TFLite Micro's output 0 of ``model``, in its own dtype (int8, or int32 indices)."""
    it = runtime.Interpreter.from_bytes(model, arena_size=8 << 20)
    for i, a in enumerate(arrays):
        it.set_input(a, i)
    it.invoke()
    return np.asarray(it.get_output(0)).tobytes()


def run_op(
    model: bytes,
    seed: int,
    objects: Sequence[Path],
    workdir: Path,
    inplace: str | None = None,
    over: int = 0,
    gap: int = 0,
    cross: bool = False,
) -> tuple[bytes, bytes, Graph]:
    """(our bytes, TFLite Micro's bytes, graph) for the single op of ``model``."""
    graph = read(model)
    assert len(graph.operators) == 1, [op.kind for op in graph.operators]
    rng = np.random.default_rng(seed)
    inputs = {
        t: rng.integers(-128, 128, size=graph.tensors[t].shape).astype(np.int8)
        for t in graph.inputs
    }
    reference = tflm_outputs(model, list(inputs.values()))
    op = graph.operators[0]
    lay = layout(graph, op, inplace, over, gap)
    lowered = lowering_for(graph, op)(graph, op, 0, lay.buffers, "op0")
    out_bytes = graph.tensors[op.outputs[0]].nbytes
    status, got = cb.build_and_run(
        program(lowered, lay, inputs, out_bytes), objects, workdir, opt="-O2", cross=cross
    )
    assert status == 0, f"exit {status}"
    return got, reference, graph


def shapes(min_rank: int = 1, max_rank: int = 4, max_side: int = 5) -> st.SearchStrategy:
    return st.lists(st.integers(1, max_side), min_size=min_rank, max_size=max_rank).map(tuple)


# ---- reductions --------------------------------------------------------------------------------


def reduce_model(
    kind: str,
    shape: tuple[int, ...],
    axes: Sequence[int],
    keep_dims: bool,
    quant_in: tuple[float, int],
    quant_out: tuple[float, int],
) -> bytes:
    rank = len(shape)
    resolved = {a % rank for a in axes}
    if keep_dims:
        out_shape = tuple(1 if k in resolved else d for k, d in enumerate(shape))
    else:
        out_shape = tuple(d for k, d in enumerate(shape) if k not in resolved)
    mb = ModelBuilder()
    x = mb.activation(shape, *quant_in)
    axis = mb.constant_int32(np.asarray(axes, dtype=np.int32))
    if kind in ("ARG_MAX", "ARG_MIN"):
        y = mb.add_index_output(out_shape)
        options = "ArgMaxOptions" if kind == "ARG_MAX" else "ArgMinOptions"
        mb.operator(kind, [x, axis], [y], options, (("OutputType", 2),))  # INT32
    else:
        if kind in ("REDUCE_MAX", "REDUCE_MIN"):
            quant_out = quant_in
        y = mb.activation(out_shape, *quant_out)
        mb.operator(kind, [x, axis], [y], "ReducerOptions", (("KeepDims", keep_dims),))
    return finish(mb, [x], [y])


@st.composite
def reductions(draw: st.DrawFn, kinds: Sequence[str]) -> tuple[bytes, int]:
    kind = draw(st.sampled_from(kinds))
    shape = draw(shapes(1, 5))
    rank = len(shape)
    if kind in ("ARG_MAX", "ARG_MIN"):
        axes = [draw(st.integers(-rank, rank - 1))]
        keep = False
    else:
        chosen = draw(st.sets(st.integers(0, rank - 1), min_size=1, max_size=rank))
        axes = [a - rank if draw(st.booleans()) else a for a in sorted(chosen)]
        keep = draw(st.booleans())
    qi = (draw(st.floats(0.005, 0.2)), draw(st.integers(-128, 127)))
    qo = (draw(st.floats(0.005, 0.5)), draw(st.integers(-128, 127)))
    return reduce_model(kind, shape, axes, keep, qi, qo), draw(st.integers(0, 2**16))


@SETTINGS
@given(reductions(("MEAN", "SUM")))
def test_mean_and_sum_any_axes(kernel_objs: list[Path], tmp_path: Path, case) -> None:
    model, seed = case
    got, want, _ = run_op(model, seed, kernel_objs, tmp_path)
    assert got == want


@SETTINGS
@given(reductions(("REDUCE_MAX", "REDUCE_MIN", "ARG_MAX", "ARG_MIN")))
def test_max_min_and_arg_any_axes(kernel_objs: list[Path], tmp_path: Path, case) -> None:
    model, seed = case
    got, want, _ = run_op(model, seed, kernel_objs, tmp_path)
    assert got == want


@pytest.mark.parametrize(
    ("shape", "axes", "keep"),
    [
        ((1, 7, 5, 12), [2], True),  # squeeze-and-excitation as exported: MEAN over W ...
        ((1, 7, 1, 12), [1], True),  # ... then over H
        ((1, 12, 7, 5), [2, 3], False),  # a global pool after a TRANSPOSE to NCHW
        ((1, 12, 7, 5), [-1, -2], True),
    ],
)
def test_mean_real_exports(
    kernel_objs: list[Path], tmp_path: Path, shape: tuple[int, ...], axes: list[int], keep: bool
) -> None:
    """The two exports issue 14 met, compiled for the Pico cores too."""
    model = reduce_model("MEAN", shape, axes, keep, (0.05, -3), (0.02, 5))
    got, want, graph = run_op(model, 1, kernel_objs, tmp_path, cross=True)
    assert got == want
    assert graph.operators[0].kind == "MEAN"


def test_reduction_refuses_in_place(kernel_objs: list[Path], tmp_path: Path) -> None:
    graph = read(reduce_model("SUM", (2, 3, 4), [1], False, (0.1, 0), (0.1, 0)))
    op = graph.operators[0]
    lay = layout(graph, op, "elementwise", 0, 0)
    with pytest.raises(LoweringError, match="disjoint"):
        lowering_for(graph, op)(graph, op, 0, lay.buffers, "op0")


def test_arg_max_int64_output_refused_naming_tensor() -> None:
    mb = ModelBuilder()
    x = mb.activation((2, 5), 0.1, 0)
    axis = mb.constant_int32(np.asarray([1], dtype=np.int32))
    y = mb.add_index_output((2,), dtype="int64", name="argmax_out")
    mb.operator("ARG_MAX", [x, axis], [y], "ArgMaxOptions", (("OutputType", 4),))
    with pytest.raises(ModelError, match="argmax_out.*int32"):
        read_model(finish(mb, [x], [y]))


def test_reduction_bad_axes_one_line() -> None:
    mb = ModelBuilder()
    x = mb.activation((2, 5, 3), 0.1, 0)
    axis = mb.constant_int32(np.asarray([3], dtype=np.int32))
    y = mb.activation((2, 5), 0.1, 0)
    mb.operator("SUM", [x, axis], [y], "ReducerOptions", (("KeepDims", False),))
    with pytest.raises(ModelError, match=r"operator SUM at index 0.*axes \[3\] out of range"):
        read_model(finish(mb, [x], [y]))


_ = math


# ---- table activations: ABS, LEAKY_RELU, ELU ----------------------------------------------------


def unary_model(
    kind: str, shape: tuple[int, ...], qi: tuple[float, int], qo: tuple[float, int], alpha: float
) -> bytes:
    mb = ModelBuilder()
    x = mb.activation(shape, *qi)
    y = mb.activation(shape, *qo)
    if kind == "LEAKY_RELU":
        mb.operator(kind, [x], [y], "LeakyReluOptions", (("Alpha", alpha),))
    elif kind == "ABS":
        mb.operator(kind, [x], [y], "AbsOptions")
    else:
        mb.operator(kind, [x], [y])
    return finish(mb, [x], [y])


@st.composite
def unaries(draw: st.DrawFn) -> tuple[bytes, int, bool]:
    kind = draw(st.sampled_from(("ABS", "LEAKY_RELU", "ELU")))
    shape = draw(shapes(1, 4, 6))
    qi = (draw(st.floats(0.005, 0.3)), draw(st.integers(-128, 127)))
    same = kind == "ABS" and draw(st.booleans())  # equal scales: no requantization
    qo = qi if same else (draw(st.floats(0.005, 0.3)), draw(st.integers(-128, 127)))
    alpha = draw(st.floats(-1.0, 1.5))
    in_place = draw(st.booleans())
    return unary_model(kind, shape, qi, qo, alpha), draw(st.integers(0, 2**16)), in_place


@SETTINGS
@given(unaries())
def test_table_activations(kernel_objs: list[Path], tmp_path: Path, case) -> None:
    """Out of place, or in place over the input at gap 0 (one table read per element)."""
    model, seed, in_place = case
    inplace = "elementwise" if in_place else None
    got, want, _ = run_op(model, seed, kernel_objs, tmp_path, inplace=inplace)
    assert got == want
