"""The spatial lowerings (codegen/lower_conv.py, lower_pool.py) against TensorFlow Lite Micro,
byte for byte.

Each case is a single-op model from tests/tflite_writer/, read and rewritten by the front
end. Its op is lowered with buffers pointing into a test arena laid out as the generator
would: disjoint input and output, the planner's in-place gap (conv, pooling: output at the
base, input ``align_up(gap, 4)`` above), or one shared base (channel in-place depthwise).
The test wraps the lowering's declarations and call in a tiny C program of its own (arena,
scratch, ``rip_ctx``, the input copied in, the output bytes written to stdout), builds it
with gcc -Werror against the kernels and compares its bytes with TFLite Micro's. The same
text, without ``main``, cross-compiles for both Pico cores with -Werror.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

import cbuild as cb
import numpy as np
import pytest
import tflite_writer as tw
from tflite_micro import runtime
from tflite_writer import ModelBuilder, conv_output_size

from rip.allocator.planning.requirements import op_scratch_bytes, requirements
from rip.codegen import lower_conv, lower_pool
from rip.codegen.lowering import Lowered, OpBuffers, grouped
from rip.codegen.lowerings import lowering_for
from rip.core.errors import LoweringError
from rip.frontend.ir import Graph, Operator
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

TAIL = 16  # canary bytes past the arena's used part: a kernel must never write there
GARBAGE = 0x5A  # what the arena and scratch hold before the input is copied in


# ---- models --------------------------------------------------------------------------------


def pool_with_pad(
    seed: int, kind: str, h: int, w: int, c: int, size: int, stride: int, pads: tuple[int, ...]
) -> bytes:
    """A PAD then a VALID pool (AVERAGE_POOL_2D or MAX_POOL_2D): the front end folds the PAD
    into the pool with ``pad_counts`` (padded cells hold the zero point and count)."""
    rng = np.random.default_rng(seed)
    scale, zp = float(rng.uniform(0.01, 0.05)), int(rng.integers(-40, 41))
    top, bottom, left, right = pads
    mb = ModelBuilder()
    x = mb.activation((1, h, w, c), scale, zp)
    padded = mb.activation((1, h + top + bottom, w + left + right, c), scale, zp)
    mb.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), padded)
    out_hw = [conv_output_size(n, size, stride, 1, "VALID") for n in mb.shape(padded)[1:3]]
    y = mb.activation((1, *out_hw, c), scale, zp)
    pool = mb.average_pool2d if kind == "avg" else mb.max_pool2d
    pool(padded, y, filter_size=size, stride=stride, padding="VALID")
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


def mean_model(seed: int, h: int, w: int, c: int, axes: tuple[int, ...], keep_dims: bool) -> bytes:
    """MEAN over ``axes``, requantized to an output scale and zero point of its own."""
    rng = np.random.default_rng(seed)
    scale, zp = float(rng.uniform(0.01, 0.05)), int(rng.integers(-40, 41))
    mb = ModelBuilder()
    x = mb.activation((1, h, w, c), scale, zp)
    shape = [1, h, w, c]
    out_shape = [1 if k in axes else d for k, d in enumerate(shape)]
    if not keep_dims:
        out_shape = [d for k, d in enumerate(shape) if k not in axes]
    out_scale = scale * float(rng.uniform(0.05, 1.5))
    y = mb.activation(tuple(out_shape), out_scale, int(rng.integers(-40, 41)))
    mb.mean(x, axes, y, keep_dims=keep_dims)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


conv, dw, pool = tw.random_conv_model, tw.random_depthwise_model, tw.random_pool_model

# name -> (model from a seed, layouts to run it in). "out": disjoint buffers; "rip": output at
# the arena's base, input align_up(gap, 4) above; "channel": one shared base.
CASES: dict[str, tuple[Callable[[int], bytes], tuple[str, ...]]] = {
    "conv_same_3x3": (lambda s: conv(s, 8, 8, 4, 8, 3), ("out", "rip")),
    "conv_same_s2_relu6_odd_cin": (
        lambda s: conv(s, 9, 7, 3, 8, 3, 2, 1, "SAME", "RELU6"),
        ("out", "rip"),
    ),
    "conv_dilated_relu": (lambda s: conv(s, 10, 10, 5, 6, 3, 1, 2, "SAME", "RELU"), ("rip",)),
    "conv_folded_pad": (lambda s: conv(s, 8, 8, 4, 5, 3, 1, 1, (1, 2, 0, 1)), ("out", "rip")),
    "conv_valid_rect_per_tensor": (
        lambda s: conv(s, 9, 8, 3, 4, (5, 3), (2, 1), 1, "VALID", per_channel=False),
        ("out", "rip"),
    ),
    "conv_pointwise_expand": (lambda s: conv(s, 6, 6, 8, 16, 1), ("rip",)),
    "dw_same_3x3": (lambda s: dw(s, 8, 8, 8, 3), ("out", "channel")),
    "dw_same_s2_odd_c_relu6": (
        lambda s: dw(s, 8, 9, 7, 3, 2, activation="RELU6"),
        ("out", "channel"),
    ),
    "dw_folded_pad": (lambda s: dw(s, 8, 8, 4, 3, 1, 1, (0, 1, 1, 0)), ("channel",)),
    "dw_valid_per_tensor": (
        lambda s: dw(s, 9, 8, 5, (5, 3), (2, 1), 1, "VALID", per_channel=False),
        ("out", "channel"),
    ),
    "dw_mult2_s2": (lambda s: dw(s, 9, 9, 4, 3, 2, depth_multiplier=2), ("out",)),
    # one column, a kernel along H (streaming keyword models): run as the row it is in memory
    "dw_column_valid_k5": (lambda s: dw(s, 28, 1, 8, (5, 1), 1, 1, "VALID"), ("out", "channel")),
    "dw_column_same_k3_s2": (lambda s: dw(s, 15, 1, 12, (3, 1), 2, 1, "SAME"), ("out", "channel")),
    "dw_column_k10_dilated": (
        lambda s: dw(s, 30, 1, 8, (10, 1), 1, 2, "VALID"),
        ("out", "channel"),
    ),
    "dw_column_k7_relu_mult2": (
        lambda s: dw(s, 16, 1, 4, (7, 1), 1, 1, "SAME", "RELU", depth_multiplier=2),
        ("out",),
    ),
    "dw_mult2_relu": (
        lambda s: dw(s, 7, 6, 3, 3, 1, 1, "SAME", "RELU", depth_multiplier=2),
        ("out",),
    ),
    "avg_same_3x3_s2": (lambda s: pool(s, 7, 7, 4, "avg", 3, 2, "SAME"), ("out", "rip")),
    "avg_same_3x3_s1_odd_c": (lambda s: pool(s, 6, 5, 5, "avg", 3, 1, "SAME"), ("rip",)),
    "avg_valid_2x2": (lambda s: pool(s, 8, 8, 4, "avg", 2, 2, "VALID"), ("out", "rip")),
    "max_same_3x3_s2": (lambda s: pool(s, 7, 8, 5, "max", 3, 2, "SAME"), ("out", "rip")),
    "max_valid_3x2": (lambda s: pool(s, 8, 7, 4, "max", (3, 2), (2, 1), "VALID"), ("rip",)),
    "avg_folded_pad": (
        lambda s: pool_with_pad(s, "avg", 7, 7, 4, 3, 2, (1, 1, 2, 0)),
        ("out", "rip"),
    ),
    "max_folded_pad_s1": (
        lambda s: pool_with_pad(s, "max", 5, 6, 3, 3, 1, (1, 1, 1, 1)),
        ("rip",),
    ),
    "fc_per_tensor_relu": (lambda s: tw.random_fully_connected_model(s, 24, 10, "RELU"), ("out",)),
    "fc_per_tensor_relu6_wide": (
        lambda s: tw.random_fully_connected_model(s, 67, 3, "RELU6"),
        ("out",),
    ),
    "fc_per_channel_batch2": (
        lambda s: tw.random_fully_connected_model(s, 32, 9, "RELU", per_channel=True, batch=2),
        ("out",),
    ),
    # one input channel, depth multiplier M: run as the CONV_2D [M, KH, KW, 1] it equals
    # (micro_speech's first layer: 10x8 kernel, stride 2, M = 8)
    "dw_one_channel_mult8_s2": (
        lambda s: dw(s, 13, 12, 1, (5, 4), 2, depth_multiplier=8),
        ("out",),
    ),
    "dw_one_channel_mult3_wide": (
        lambda s: dw(s, 20, 19, 1, 3, 1, 1, "SAME", "RELU", depth_multiplier=3),
        ("out",),
    ),
    "fc_odd_units_batch3": (
        lambda s: tw.random_fully_connected_model(s, 13, 7, "NONE", batch=3),
        ("out",),
    ),
    "fc_per_channel_one_unit": (
        lambda s: tw.random_fully_connected_model(s, 5, 1, "RELU", per_channel=True),
        ("out",),
    ),
    "fc_depth1_units6": (lambda s: tw.random_fully_connected_model(s, 1, 6, "RELU"), ("out",)),
    "fc_units2_relu6": (lambda s: tw.random_fully_connected_model(s, 9, 2, "RELU6"), ("out",)),
    "mean_hw_keep": (lambda s: mean_model(s, 7, 7, 8, (1, 2), True), ("out",)),
    "mean_hw_flat": (lambda s: mean_model(s, 5, 3, 6, (1, 2), False), ("out",)),
}

PARAMS = [
    pytest.param(name, layout, id=f"{name}-{layout}")
    for name, (_, layouts) in CASES.items()
    for layout in layouts
]


def single_op(model: bytes, *, rewritten: bool = True) -> tuple[Graph, Operator]:
    """The model's graph (after the front end's rewrites unless ``rewritten`` is False) and
    its only operator."""
    graph = read_model(model)
    if rewritten:
        graph = rewrite(graph)
    assert len(graph.operators) == 1, [op.kind for op in graph.operators]
    return graph, graph.operators[0]


def random_input(graph: Graph, seed: int) -> np.ndarray:
    shape = graph.tensors[graph.inputs[0]].shape
    return np.random.default_rng(1000 + seed).integers(-128, 128, size=shape, dtype=np.int8)


def tflm(model: bytes, x: np.ndarray) -> bytes:
    it = runtime.Interpreter.from_bytes(model, arena_size=8 << 20)
    it.set_input(x, 0)
    it.invoke()
    return np.asarray(it.get_output(0)).tobytes()


# ---- arena layouts and the C program ------------------------------------------------------


def align_up(n: int, to: int = 4) -> int:
    return -(-n // to) * to


@dataclass(frozen=True)
class Layout:
    """Where one op's input and output sit in the test arena, and its buffers for the
    lowering."""

    input_at: int
    output_at: int
    arena_bytes: int
    buffers: OpBuffers


def layout(graph: Graph, op: Operator, mode: str) -> Layout:
    """The arena layout of ``mode``: "out" (disjoint), "rip" (the planner's gap) or
    "channel" (one base)."""
    n_in = graph.tensors[op.inputs[0]].nbytes
    n_out = graph.tensors[op.outputs[0]].nbytes
    if mode == "out":
        input_at, output_at = 0, align_up(n_in)
    elif mode == "rip":
        req = requirements(graph).ops[0]
        assert req.candidates, req.reason
        input_at, output_at = align_up(req.candidates[0].gap), 0
    else:
        input_at = output_at = 0
    inputs = tuple(f"(rip_arena + {input_at})" if k == 0 else None for k in range(len(op.inputs)))
    buffers = OpBuffers(inputs, f"(rip_arena + {output_at})", None if mode == "out" else mode, None)
    if mode != "out":
        buffers = replace(buffers, inplace_input=0)
    end = max(input_at + n_in, output_at + n_out)
    return Layout(input_at, output_at, end, buffers)


def indent(text: str, by: str = "    ") -> str:
    return "".join(by + line if line.strip() else line for line in text.splitlines(True))


def program(
    lowered: Lowered, where: Layout, x: np.ndarray | None, n_out: int, scratch: int | None = None
) -> str:
    """A C program running one lowered op over a ``uint8_t`` arena (so the lowering's casts
    are needed), with the scratch exactly as large as the lowering says unless ``scratch``
    overrides it. ``main`` (absent when ``x`` is None, or under RIP_TEST_NO_MAIN) fills
    arena and scratch with garbage, copies the input in, runs the call, checks the canary
    tail and writes the output bytes to stdout."""
    size = lowered.scratch_bytes if scratch is None else scratch
    includes = "".join(f'#include "{h}"\n' for h in lowered.headers)
    main = ""
    if x is not None:
        data = ", ".join(str(int(v)) for v in x.reshape(-1))
        main = f"""
#ifndef RIP_TEST_NO_MAIN
#include <stdio.h>
static const int8_t test_input[{x.size}] = {{{data}}};

int main(void) {{
    memset(rip_arena, {GARBAGE}, sizeof rip_arena);
    memset(rip_scratch, {GARBAGE}, sizeof rip_scratch);
    memcpy(rip_arena + {where.input_at}, test_input, sizeof test_input);
    const int status = rip_test_run();
    if (status != 0) {{
        return status;
    }}
    for (size_t i = {where.arena_bytes}; i < sizeof rip_arena; ++i) {{
        if (rip_arena[i] != {GARBAGE}) {{
            return 100;
        }}
    }}
    fwrite(rip_arena + {where.output_at}, 1, {n_out}, stdout);
    return 0;
}}
#endif
"""
    return f"""#include <stdint.h>
#include <string.h>
{includes}
static uint8_t rip_arena[{where.arena_bytes + TAIL}] __attribute__((aligned(4)));
static int8_t rip_scratch[{max(size, 4)}] __attribute__((aligned(4)));
static const rip_context rip_ctx = {{.buf = rip_scratch, .size = {size}}};

{lowered.decls}
int rip_test_run(void);
int rip_test_run(void) {{
{indent(lowered.call)}    return 0;
}}
{main}"""


@pytest.fixture(scope="session")
def kernel_objects(kernel_objs: list[Path]) -> list[Path]:
    """The kernels compiled once for every test program (tests/cbuild.py)."""
    return kernel_objs


def build_and_run(source: str, objects: list[Path], tmp_path: Path) -> tuple[int, bytes]:
    """Compile the program with -Werror, run it; (exit status, stdout bytes)."""
    return cb.build_and_run(source, objects, tmp_path, opt="-O1")


def lower(graph: Graph, op: Operator, buffers: OpBuffers, index: int = 0) -> Lowered:
    return lowering_for(graph, op)(graph, op, index, buffers, f"op{index}")


# ---- against TFLite Micro ------------------------------------------------------------------


@pytest.mark.parametrize(("name", "mode"), PARAMS)
def test_lowered_op_matches_tflite_micro(
    name: str, mode: str, kernel_objects: list[Path], tmp_path: Path
) -> None:
    """The emitted C computes TFLite Micro's bytes, out of place and in each in-place mode,
    within the arena bytes the layout gives it, with exactly the scratch it reports."""
    model = CASES[name][0](0)
    graph, op = single_op(model)
    x = random_input(graph, 0)
    where = layout(graph, op, mode)
    lowered = lower(graph, op, where.buffers, index=2)
    # a kernel variant may use less than the planner's formula (the row-streamed in-place
    # depthwise, when its ring fits), never more than the model's buffer (one op here)
    assert lowered.scratch_bytes <= op_scratch_bytes(graph, op)
    status, out = build_and_run(
        program(lowered, where, x, graph.tensors[op.outputs[0]].nbytes), kernel_objects, tmp_path
    )
    assert status == 0
    assert out == tflm(model, x)


@pytest.mark.parametrize("name", ["mean_hw_keep", "mean_hw_flat"])
def test_mean_over_hw_unrewritten(name: str, kernel_objects: list[Path], tmp_path: Path) -> None:
    """A MEAN over H and W the rewrite did not rename lowers to the same global pool. (Its
    scratch, 4 C bytes, is what the kernel needs; the planner counts it only for
    GLOBAL_AVERAGE_POOL.)"""
    model = CASES[name][0](1)
    graph, op = single_op(model, rewritten=False)
    assert op.kind == "MEAN"
    x = random_input(graph, 1)
    where = layout(graph, op, "out")
    lowered = lower(graph, op, where.buffers)
    assert lowered.scratch_bytes == 4 * graph.tensors[op.outputs[0]].hwc[2]
    assert lowered.headers == ("rip_pool.h",)
    status, out = build_and_run(
        program(lowered, where, x, graph.tensors[op.outputs[0]].nbytes), kernel_objects, tmp_path
    )
    assert status == 0
    assert out == tflm(model, x)


def test_kernel_failure_returns_step_plus_one(kernel_objects: list[Path], tmp_path: Path) -> None:
    """A kernel that refuses its arguments (here: scratch one byte short) makes the call
    return the op's step + 1, so a failing model says which op failed."""
    graph, op = single_op(CASES["conv_same_3x3"][0](0))
    where = layout(graph, op, "out")
    lowered = lower(graph, op, where.buffers, index=6)
    x = random_input(graph, 0)
    source = program(lowered, where, x, 1, scratch=lowered.scratch_bytes - 1)
    status, _ = build_and_run(source, kernel_objects, tmp_path)
    assert status == 7


# ---- what the lowering emits and refuses ---------------------------------------------------


def test_registered_kinds_and_headers() -> None:
    """Every spatial kind has its lowering, and each names the header of its kernel."""
    expected = {
        "conv_same_3x3": (lower_conv.lower_conv, ("rip_conv.h",), "rip_conv2d_fast_rq_s8("),
        "dw_same_3x3": (
            lower_conv.lower_conv,
            ("rip_conv.h",),
            "rip_depthwise_conv2d_fast_rq_s8(",
        ),
        "fc_per_tensor_relu": (
            lower_conv.lower_fully_connected,
            ("rip_conv.h",),
            "rip_fully_connected_fast_rq_s8(",
        ),
        "fc_per_channel_batch2": (
            lower_conv.lower_fully_connected,
            ("rip_conv.h",),
            "rip_fully_connected_fast_rq_s8(",
        ),
        "dw_one_channel_mult8_s2": (  # the conv it equals, with the conv kernels' scratch
            lower_conv.lower_conv,
            ("rip_conv.h",),
            "rip_conv2d_fast_rq_s8(",
        ),
        "dw_one_channel_mult3_wide": (
            lower_conv.lower_conv,
            ("rip_conv.h",),
            "rip_conv2d_fast_rq_s8(",
        ),
        "avg_valid_2x2": (lower_pool.lower_pool, ("rip_pool.h",), "rip_avg_pool_s8("),
        "max_valid_3x2": (lower_pool.lower_pool, ("rip_pool.h",), "rip_max_pool_s8("),
        "mean_hw_keep": (
            lower_pool.lower_global_pool,
            ("rip_pool.h",),
            "rip_global_avg_pool_s8(",
        ),
    }
    for name, (fn, headers, call) in expected.items():
        graph, op = single_op(CASES[name][0](0))
        assert lowering_for(graph, op) is fn
        lowered = lower(graph, op, layout(graph, op, "out").buffers)
        assert lowered.headers == headers
        assert call in lowered.call and "&rip_ctx" in lowered.call
        assert "return 1;" in lowered.call


def test_inplace_calls() -> None:
    """Channel in place calls the in-place depthwise kernel on the shared base (the
    row-streamed one: the planner's scratch holds its ring); "rip" keeps the out-of-place
    conv and pool calls, over overlapping pointers."""
    graph, op = single_op(CASES["dw_same_3x3"][0](0))
    lowered = lower(graph, op, layout(graph, op, "channel").buffers)
    assert "rip_depthwise_conv2d_inplace_rows_fast_rq_s8(" in lowered.call
    assert "(int8_t *)(rip_arena + 0)" in lowered.call
    for name, fn in (
        ("conv_same_3x3", "rip_conv2d_fast_rq_s8("),
        ("avg_valid_2x2", "rip_avg_pool_s8("),
    ):
        graph, op = single_op(CASES[name][0](0))
        where = layout(graph, op, "rip")
        call = lower(graph, op, where.buffers).call
        assert fn in call
        assert f"(const int8_t *)(rip_arena + {where.input_at})" in call
        assert "(int8_t *)(rip_arena + 0)" in call


def test_decls_are_prefixed_const_data() -> None:
    """Every file-scope symbol carries the prefix and is const, its storage RIP_CONSTANT's
    (flash, unless the model's constants are resident in SRAM); the weights are the
    model's bytes."""
    graph, op = single_op(CASES["conv_same_3x3"][0](0))
    lowered = lower(graph, op, layout(graph, op, "out").buffers, index=5)
    statics = [line for line in lowered.decls.splitlines() if line[:1].isalpha()]
    assert statics and all(line.startswith("const ") for line in statics)
    assert all(line.split("=")[0].split()[-1] == "RIP_CONSTANT" for line in statics)
    assert all(line.split("=")[0].split()[-2].startswith("op5_") for line in statics)
    weights = np.frombuffer(graph.tensors[op.inputs[1]].data, np.int8)
    first = lowered.decls.split("op5_filter[")[1].split("{")[1].split(",")[0]
    assert int(first) == int(weights[0])
    assert f"op5_filter[{weights.size}]" in lowered.decls


def test_bare_pointer_expressions_are_parenthesized() -> None:
    """A cast must cover the whole expression: ``rip_arena + 8`` becomes ``(rip_arena + 8)``,
    an already grouped one is left alone."""
    assert grouped("rip_arena + 8") == "(rip_arena + 8)"
    assert grouped("(rip_arena + 8)") == "(rip_arena + 8)"
    assert grouped("(a) + (b)") == "((a) + (b))"
    graph, op = single_op(CASES["avg_valid_2x2"][0](0))
    call = lower(graph, op, OpBuffers(("rip_arena + 8",), "rip_arena")).call
    assert "(const int8_t *)(rip_arena + 8)" in call and "(int8_t *)(rip_arena)" in call


def test_graph_only_model_is_refused() -> None:
    graph, op = single_op(CASES["conv_same_3x3"][0](0))
    w = op.inputs[1]
    empty = graph.with_(tensors={**graph.tensors, w: replace(graph.tensors[w], data=None)})
    with pytest.raises(LoweringError, match=r"CONV_2D at index 0 .*model has no weights"):
        lower(empty, op, layout(graph, op, "out").buffers)


@pytest.mark.parametrize(
    ("name", "mode", "message"),
    [
        ("fc_per_tensor_relu", "rip", "cannot run in place as 'rip'"),
        ("mean_hw_keep", "rip", "cannot run in place"),
        ("mean_hw_keep", "elementwise", "cannot run in place"),
        ("conv_same_3x3", "channel", "cannot run in place as 'channel'"),
        ("dw_same_3x3", "rip", "cannot run in place as 'rip'"),
        ("avg_valid_2x2", "channel", "cannot run in place as 'channel'"),
        ("dw_mult2_s2", "channel", "depth multiplier 1"),
    ],
)
def test_unsupported_inplace_modes_are_refused(name: str, mode: str, message: str) -> None:
    graph, op = single_op(CASES[name][0](0))
    buffers = OpBuffers(("(rip_arena + 0)",), "(rip_arena + 0)", mode, 0)
    with pytest.raises(LoweringError, match=message):
        lower(graph, op, buffers)


def test_channel_inplace_needs_one_base() -> None:
    graph, op = single_op(CASES["dw_same_3x3"][0](0))
    with pytest.raises(LoweringError, match="output at its input's base"):
        lower(graph, op, OpBuffers(("(rip_arena + 64)",), "(rip_arena + 0)", "channel", 0))


def test_mean_not_over_hw_runs_the_reduction_kernel() -> None:
    """Issue 14: a MEAN over other axes is no longer refused; it runs rip_reduce.h (its
    bytes against TFLite Micro: tests/test_lower_ops.py)."""
    graph, op = single_op(mean_model(0, 4, 4, 3, (3,), True))
    assert op.kind == "MEAN"
    lowered = lower(graph, op, OpBuffers(("(rip_arena + 0)", None), "(rip_arena + 64)"))
    assert "rip_reduce_sum_s8(" in lowered.call and lowered.headers == ("rip_reduce.h",)


# ---- the Pico cores ------------------------------------------------------------------------


@pytest.mark.parametrize("cpu", cb.ARM_CPUS)
def test_emitted_c_cross_compiles_for_the_picos(tmp_path: Path, cpu: str) -> None:
    """Every case's program, without main, builds for both Pico cores with -Werror."""
    for k, (name, mode) in enumerate((p.values[0], p.values[1]) for p in PARAMS):
        graph, op = single_op(CASES[str(name)][0](0))
        where = layout(graph, op, str(mode))
        source = tmp_path / f"case{k}.c"
        source.write_text(program(lower(graph, op, where.buffers, index=k), where, None, 0))
        cb.cross_compile(source, cpu, tmp_path / f"case{k}.o", opt="-Os")
