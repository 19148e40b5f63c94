"""Issue 14's data-movement and resampling operators against TensorFlow Lite Micro, byte for
byte: STRIDED_SLICE, SLICE, SPLIT, SPLIT_V, UNPACK, PACK, EXPAND_DIMS, DEPTH_TO_SPACE,
SPACE_TO_DEPTH, GATHER, PADV2, MIRROR_PAD, RESIZE_BILINEAR, and SPACE_TO_BATCH_ND ->
convolution -> BATCH_TO_SPACE_ND folded into a dilated convolution.

Each model is written with tests/tflite_writer (Hypothesis draws shapes, parameters and
quantization), read and rewritten as the compiler does. Every op left after the rewrites is
lowered into a disjoint test arena, built with gcc -Werror and run (tests/cbuild.py); a
slice the rewrites turned into a view is checked as the bytes of its input from its offset.
Expected bytes always come from TFLite Micro's interpreter. Whole models (views kept alive
through the plan, the dilated-convolution fold) go through the whole compiler on the host.
"""

from __future__ import annotations

from pathlib import Path

import cbuild as cb
import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from test_codegen_host import compile_and_run
from test_lower_elementwise import ALIGN, Layout, layout, program
from tflite_micro import runtime
from tflite_writer import ModelBuilder, movement_sample_model

from rip.allocator.planning.requirements import requirements
from rip.codegen.lowering import OpBuffers
from rip.codegen.lowerings import lowering_for
from rip.codegen.shape_params import merged_transpose
from rip.core.errors import LoweringError, ModelError
from rip.core.terms import InPlaceKind
from rip.frontend.ir import Graph
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

SETTINGS = settings(
    max_examples=6,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
quants = st.tuples(
    st.floats(0.005, 0.2).map(lambda s: float(np.float32(s))), st.integers(-128, 127)
)
shapes = st.lists(st.integers(1, 5), min_size=1, max_size=4).map(tuple)


def tflm_outputs(model: bytes, arrays: list[np.ndarray]) -> list[bytes]:
    it = runtime.Interpreter.from_bytes(model, arena_size=4 << 20)
    for i, a in enumerate(arrays):
        it.set_input(a, i)
    it.invoke()
    n = len(read_model(model).outputs)
    return [np.asarray(it.get_output(k)).astype(np.int8).tobytes() for k in range(n)]


def check(model: bytes, objects: list[Path], workdir: Path, seed: int = 0) -> Graph:
    """Every graph output equals TFLite Micro's: a view as its input's bytes from its offset,
    anything else by running the lowered op as C."""
    graph = rewrite(read_model(model))
    rng = np.random.default_rng(seed)
    inputs = {
        t: rng.integers(-128, 128, size=graph.tensors[t].shape).astype(np.int8)
        for t in graph.inputs
    }
    want = dict(zip(graph.outputs, tflm_outputs(model, list(inputs.values())), strict=True))
    produced = {op.outputs[0]: op for op in graph.operators}
    for t in graph.outputs:
        if t in produced:
            op = produced[t]
            single = graph.with_(operators=(op,))
            lay = layout(single, op)
            lowered = lowering_for(graph, op)(single, op, 0, lay.buffers, "op0")
            used = {s: a for s, a in inputs.items() if s in lay.offsets}
            source = program(lowered, lay, used, graph.tensors[t].nbytes)
            status, got = cb.build_and_run(source, objects, workdir, opt="-O2")
            assert status == 0
        else:  # a view: no op, its bytes are its storage's from its offset
            base = inputs[graph.storage(t)].tobytes()
            offset = graph.storage_offset(t)
            got = base[offset : offset + graph.tensors[t].nbytes]
        assert got == want[t], f"output {t} of {[op.kind for op in graph.operators]}"
    return graph


def one_input(shape: tuple[int, ...], q: tuple[float, int]) -> tuple[ModelBuilder, int]:
    mb = ModelBuilder()
    return mb, mb.activation(shape, *q)


def finish(mb: ModelBuilder, inputs: list[int], outputs: list[int]) -> bytes:
    mb.inputs(inputs)
    mb.outputs(outputs)
    return mb.to_bytes()


# ---- slicing ---------------------------------------------------------------------------------


@st.composite
def strided_slices(draw):
    shape = draw(shapes)
    rank = len(shape)
    begin, end, strides = [], [], []
    begin_mask = end_mask = shrink = 0
    index: list[object] = []
    for k, n in enumerate(shape):
        stride = draw(st.sampled_from([1, 1, 2, 3, -1, -2]))
        b, e = draw(st.integers(-n - 1, n + 1)), draw(st.integers(-n - 1, n + 1))
        if draw(st.booleans()) and -n <= b < n and stride == 1 and draw(st.booleans()):
            shrink |= 1 << k
            index.append(b)
            begin.append(b), end.append(b + 1), strides.append(1)
            continue
        bm, em = draw(st.booleans()), draw(st.booleans())
        begin_mask |= bm << k
        end_mask |= em << k
        index.append(slice(None if bm else b, None if em else e, stride))
        begin.append(b), end.append(e), strides.append(stride)
    out_shape = np.zeros(shape)[tuple(index)].shape  # numpy's slicing rules fix the shape
    masks = {"begin_mask": begin_mask, "end_mask": end_mask, "shrink_axis_mask": shrink}
    return shape, begin, end, strides, masks, out_shape, rank


@SETTINGS
@given(case=strided_slices(), q=quants)
def test_strided_slice(kernel_objs, tmp_path, case, q):
    shape, begin, end, strides, masks, out_shape, _ = case
    assume(0 not in out_shape)  # TFLite Micro cannot allocate an empty tensor
    mb, x = one_input(shape, q)
    y = mb.activation(out_shape, *q)
    mb.strided_slice(x, begin, end, strides, y, **masks)
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)


@SETTINGS
@given(shape=shapes, data=st.data(), q=quants)
def test_slice(kernel_objs, tmp_path, shape, data, q):
    begin = [data.draw(st.integers(0, n - 1)) for n in shape]
    size = [
        data.draw(st.sampled_from([-1, *range(1, n - b + 1)]))
        for n, b in zip(shape, begin, strict=True)
    ]
    out = tuple(n - b if s == -1 else s for n, b, s in zip(shape, begin, size, strict=True))
    mb, x = one_input(shape, q)
    y = mb.activation(out, *q)
    mb.slice(x, begin, size, y)
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)


@SETTINGS
@given(shape=shapes, data=st.data(), q=quants, kind=st.sampled_from(["SPLIT", "SPLIT_V"]))
def test_split_and_split_v(kernel_objs, tmp_path, shape, data, q, kind):
    """Pieces along the outermost non-unit axis become views; others run the slice kernel."""
    axis = data.draw(st.integers(0, len(shape) - 1))
    n = shape[axis]
    if kind == "SPLIT":
        count = data.draw(st.sampled_from([d for d in range(1, n + 1) if n % d == 0]))
        sizes = [n // count] * count
    else:
        cuts = sorted(data.draw(st.sets(st.integers(1, n - 1), max_size=3))) if n > 1 else []
        sizes = [b - a for a, b in zip([0, *cuts], [*cuts, n], strict=True)]
    mb, x = one_input(shape, q)
    ys = [mb.activation((*shape[:axis], s, *shape[axis + 1 :]), *q) for s in sizes]
    if kind == "SPLIT":
        mb.split(x, axis - len(shape) * data.draw(st.integers(0, 1)), ys)
    else:
        listed = list(sizes)
        if len(listed) > 1 and data.draw(st.booleans()):
            listed[data.draw(st.integers(0, len(listed) - 1))] = -1
        mb.split_v(x, listed, axis, ys)
    graph = check(finish(mb, [x], ys), kernel_objs, tmp_path)
    outer = next((k for k, d in enumerate(shape) if d > 1), len(shape))
    if axis == outer and len(sizes) > 1:  # contiguous pieces: views (one op stays)
        assert len(graph.operators) <= 1


@SETTINGS
@given(shape=shapes, data=st.data(), q=quants)
def test_unpack_and_pack(kernel_objs, tmp_path, shape, data, q):
    axis = data.draw(st.integers(0, len(shape) - 1))
    mb, x = one_input(shape, q)
    ys = [mb.activation(shape[:axis] + shape[axis + 1 :], *q) for _ in range(shape[axis])]
    mb.unpack(x, axis, ys)
    check(finish(mb, [x], ys), kernel_objs, tmp_path)

    n = data.draw(st.integers(1, 3))
    mb = ModelBuilder()
    qs = [data.draw(quants) for _ in range(n)]  # PACK copies bytes whatever their scale
    xs = [mb.activation(shape, *qk) for qk in qs]
    y = mb.activation((*shape[:axis], n, *shape[axis:]), *q)
    mb.pack(xs, axis - (len(shape) + 1) * data.draw(st.integers(0, 1)), y)
    check(finish(mb, xs, [y]), kernel_objs, tmp_path)


@SETTINGS
@given(shape=st.lists(st.integers(1, 4), min_size=1, max_size=5).map(tuple), data=st.data())
def test_transpose_any_permutation(kernel_objs, tmp_path, shape, data):
    """Any permutation of up to five axes (TFLite Micro's limit), five that no merging
    reduces included."""
    perm = data.draw(st.permutations(range(len(shape))))
    q = data.draw(quants)
    mb, x = one_input(shape, q)
    y = mb.activation(tuple(shape[p] for p in perm), *q)
    mb.operator("TRANSPOSE", [x, mb._ints(perm)], [y], "TransposeOptions")
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)


def test_transpose_of_five_axes_no_merge_reduces(kernel_objs, tmp_path):
    """A 5-D permutation whose axes all move apart (merged_transpose keeps five): TFLite
    Micro's bytes."""
    shape, perm = (2, 3, 4, 2, 3), (4, 2, 0, 3, 1)
    assert len(merged_transpose(shape, perm)[1]) == 5
    mb, x = one_input(shape, (0.05, 3))
    y = mb.activation(tuple(shape[p] for p in perm), 0.05, 3)
    mb.operator("TRANSPOSE", [x, mb._ints(perm)], [y], "TransposeOptions")
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)


@SETTINGS
@given(shape=shapes, data=st.data(), q=quants)
def test_concatenation_any_axis(kernel_objs, tmp_path, shape, data, q):
    axis = data.draw(st.integers(0, len(shape) - 1))
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
    mb = ModelBuilder()
    xs = [mb.activation((*shape[:axis], n, *shape[axis + 1 :]), *q) for n in sizes]
    y = mb.activation((*shape[:axis], sum(sizes), *shape[axis + 1 :]), *q)
    mb.concatenation(xs, y, axis=axis - len(shape) * data.draw(st.integers(0, 1)))
    check(finish(mb, xs, [y]), kernel_objs, tmp_path)


# ---- block moves, gather, pads ------------------------------------------------------------------


@SETTINGS
@given(
    n=st.integers(1, 2),
    hw=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    c=st.integers(1, 3),
    block=st.integers(2, 3),
    q=quants,
)
def test_depth_to_space_and_space_to_depth(kernel_objs, tmp_path, n, hw, c, block, q):
    h, w = hw
    mb, x = one_input((n, h, w, c * block * block), q)
    y = mb.activation((n, h * block, w * block, c), *q)
    mb.depth_to_space(x, block, y)
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)
    mb, x = one_input((n, h * block, w * block, c), q)
    y = mb.activation((n, h, w, c * block * block), *q)
    mb.space_to_depth(x, block, y)
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)


@SETTINGS
@given(shape=shapes, data=st.data(), q=quants)
def test_gather(kernel_objs, tmp_path, shape, data, q):
    axis = data.draw(st.integers(0, len(shape) - 1))
    batch_dims = data.draw(st.integers(0, min(axis, 1)))
    coords_shape = (
        *shape[:batch_dims],
        *data.draw(st.lists(st.integers(1, 3), min_size=0 if batch_dims else 1, max_size=2)),
    )
    rng = np.random.default_rng(data.draw(st.integers(0, 99)))
    coords = rng.integers(0, shape[axis], size=coords_shape).astype(np.int32)
    mb, x = one_input(shape, q)
    y = mb.activation((*shape[:axis], *coords_shape[batch_dims:], *shape[axis + 1 :]), *q)
    mb.gather(x, coords, axis, y, batch_dims)
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)


@SETTINGS
@given(shape=shapes, data=st.data(), q=quants)
def test_padv2_and_mirror_pad(kernel_objs, tmp_path, shape, data, q):
    pads = [(data.draw(st.integers(0, 2)), data.draw(st.integers(0, 2))) for _ in shape]
    out = tuple(d + lo + hi for d, (lo, hi) in zip(shape, pads, strict=True))
    value = data.draw(st.one_of(st.none(), st.integers(-128, 127)))
    mb, x = one_input(shape, q)
    y = mb.activation(out, *q)
    mb.padv2(x, pads, value, y)
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)

    symmetric = data.draw(st.booleans())
    limit = [d if symmetric else d - 1 for d in shape]
    pads = [(data.draw(st.integers(0, m)), data.draw(st.integers(0, m))) for m in limit]
    out = tuple(d + lo + hi for d, (lo, hi) in zip(shape, pads, strict=True))
    mb, x = one_input(shape, q)
    y = mb.activation(out, *q)
    mb.mirror_pad(x, pads, symmetric, y)
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)


# ---- resampling --------------------------------------------------------------------------------


@SETTINGS
@given(
    n=st.integers(1, 2),
    hw_in=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    hw_out=st.tuples(st.integers(1, 9), st.integers(1, 9)),
    c=st.integers(1, 4),
    mode=st.sampled_from(["plain", "align_corners", "half_pixel_centers"]),
    q=quants,
)
def test_resize_bilinear(kernel_objs, tmp_path, n, hw_in, hw_out, c, mode, q):
    mb, x = one_input((n, *hw_in, c), q)
    y = mb.activation((n, *hw_out, c), *q)
    mb.resize_bilinear(
        x, y, align_corners=mode == "align_corners", half_pixel_centers=mode[0] == "h"
    )
    check(finish(mb, [x], [y]), kernel_objs, tmp_path)


@SETTINGS
@given(
    hw=st.tuples(st.integers(1, 4), st.integers(1, 4)),
    channels=st.tuples(st.integers(1, 4), st.integers(1, 5)),
    k=st.tuples(st.integers(1, 4), st.integers(1, 3)),
    stride=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    padding=st.sampled_from(["SAME", "VALID"]),
    activation=st.sampled_from(["NONE", "RELU", "RELU6"]),
    per_channel=st.booleans(),
    with_bias=st.booleans(),
    q=quants,
    seed=st.integers(0, 99),
)
def test_transpose_conv(
    kernel_objs,
    tmp_path,
    hw,
    channels,
    k,
    stride,
    padding,
    activation,
    per_channel,
    with_bias,
    q,
    seed,
):
    rng = np.random.default_rng(seed)
    (h, w), (c_in, c_out) = hw, channels
    out_hw = [
        n * s if padding == "SAME" else (n - 1) * s + kk
        for n, s, kk in zip(hw, stride, k, strict=True)
    ]
    mb, x = one_input((1, h, w, c_in), q)
    w_scales = rng.uniform(0.002, 0.05, size=c_out if per_channel else 1).astype(np.float32)
    wt = mb.constant_int8(
        rng.integers(-127, 128, size=(c_out, *k, c_in)).astype(np.int8), w_scales.tolist()
    )
    bias = mb.bias(rng.integers(-3000, 3000, size=c_out), q[0], w_scales.tolist())
    y = mb.activation(
        (1, *out_hw, c_out), float(rng.uniform(0.02, 0.3)), int(rng.integers(-20, 20))
    )
    mb.transpose_conv(
        x, wt, bias if with_bias else None, y, stride=stride, padding=padding, activation=activation
    )
    check(finish(mb, [x], [y]), kernel_objs, tmp_path, seed)


# ---- L2_NORMALIZATION: in place at gap 0, one alignment unit less corrupts -------------------


def run_layout(graph: Graph, lay: Layout, x: np.ndarray, objects, workdir) -> bytes:
    op = graph.operators[0]
    lowered = lowering_for(graph, op)(graph, op, 0, lay.buffers, "op0")
    source = program(lowered, lay, {op.inputs[0]: x}, graph.tensors[op.outputs[0]].nbytes)
    status, got = cb.build_and_run(source, objects, workdir, opt="-O2")
    assert status == 0
    return got


@SETTINGS
@given(shape=shapes, q=quants, seed=st.integers(0, 99))
def test_l2_normalization(kernel_objs, tmp_path, shape, q, seed):
    mb, x = one_input(shape, q)
    y = mb.activation(shape, 1 / 128, 0)
    mb.operator("L2_NORMALIZATION", [x], [y], "L2NormOptions")
    model = finish(mb, [x], [y])
    graph = rewrite(read_model(model))
    op = graph.operators[0]
    a = np.random.default_rng(seed).integers(-128, 128, size=shape).astype(np.int8)
    want = tflm_outputs(model, [a])[0]
    assert run_layout(graph, layout(graph, op), a, kernel_objs, tmp_path) == want
    same_base = layout(graph, op, "elementwise", 0, 0)
    assert run_layout(graph, same_base, a, kernel_objs, tmp_path) == want


def test_l2_normalization_one_alignment_unit_less_gap_corrupts(kernel_objs, tmp_path):
    """The planner's gap is 0; the output one alignment unit above its input (gap -16)
    overwrites values of the row before they are read."""
    shape = (2, 40)
    mb, x = one_input(shape, (0.05, 3))
    y = mb.activation(shape, 1 / 128, 0)
    mb.operator("L2_NORMALIZATION", [x], [y], "L2NormOptions")
    model = finish(mb, [x], [y])
    graph = rewrite(read_model(model))
    op = graph.operators[0]
    assert requirements(graph).ops[0].candidates[0].gap == 0
    a = np.random.default_rng(1).integers(-128, 128, size=shape).astype(np.int8)
    want = tflm_outputs(model, [a])[0]
    n = graph.tensors[x].nbytes
    pointers = ("(rip_arena + 0)",)
    above = Layout(
        OpBuffers(pointers, f"(rip_arena + {ALIGN})", InPlaceKind.ELEMENTWISE, 0),
        {op.inputs[0]: 0},
        ALIGN,
        n + ALIGN,
    )
    assert run_layout(graph, above, a, kernel_objs, tmp_path) != want


# ---- RESIZE_NEAREST_NEIGHBOR in place at ratios Theorem 14 does not cover -------------------


@pytest.mark.parametrize(
    ("hw_in", "hw_out", "half_pixel", "in_place"),
    [((3, 2), (7, 5), True, True), ((4, 3), (5, 7), False, True), ((4, 6), (5, 4), False, False)],
)
def test_resize_nearest_any_ratio_in_place_when_simulated(
    tmp_path, hw_in, hw_out, half_pixel, in_place
):
    """Non-integer ratios run in place (same base, reverse) exactly when the simulator finds
    no corrupted read; the plan is replayed and the compiled model matches TFLite Micro."""
    mb = ModelBuilder()
    x = mb.activation((1, *hw_in, 3), 0.05, 2)
    y = mb.activation((1, *hw_out, 3), 0.05, 2)
    mb.resize_nearest_neighbor(x, y, half_pixel_centers=half_pixel)
    model = finish(mb, [x], [y])
    req = requirements(rewrite(read_model(model))).ops[0]
    if in_place:
        (c,) = req.candidates
        assert (c.gap, c.kind) == (0, InPlaceKind.REVERSE)
    else:
        assert not req.candidates and "overwrote" in req.reason
    got, want, plan = compile_and_run(model, tmp_path, "rip")
    assert got == want
    assert bool(plan.aliased) == in_place


# ---- whole models: views through the plan, the dilated-convolution fold ----------------------


def conv_weights(mb: ModelBuilder, rng, c_in: int, c_out: int, k: int, in_scale: float):
    w = rng.integers(-127, 128, size=(c_out, k, k, c_in)).astype(np.int8)
    w_scale = 0.02
    return mb.constant_int8(w, w_scale), mb.bias(
        rng.integers(-500, 500, size=c_out), in_scale, w_scale
    )


def conv(mb: ModelBuilder, rng, x: int, c_out: int, k: int, dilation: int = 1, padding="SAME"):
    (n, h, w, c_in), q = mb.shape(x), mb.quantization(x)
    wt, b = conv_weights(mb, rng, c_in, c_out, k, q.scales[0])
    span = (k - 1) * dilation
    oh, ow = (h, w) if padding == "SAME" else (h - span, w - span)
    y = mb.activation((n, oh, ow, c_out), 0.5, 3)
    mb.conv2d(x, wt, b, y, stride=1, padding=padding, dilation=dilation)
    return y


@pytest.mark.parametrize("source_output", [True, False], ids=["views", "copies"])
def test_split_views_live_through_the_plan(tmp_path, source_output):
    """A conv's output split along H into views (and along C by the slice kernel), each view
    read by a later op: the producer's buffer must live until the last view is read. Where
    the conv's output is a graph output too it lives to the end anyway and the pieces are
    views; where it is not, the top piece (a graph output through EXPAND_DIMS) would hold
    the whole output to the end, and the pieces stay copies, which free it at once."""
    rng = np.random.default_rng(4)
    mb = ModelBuilder()
    x = mb.activation((1, 6, 5, 3), 0.05, -4)
    t = conv(mb, rng, x, 4, 3)
    top, bottom = mb.activation((1, 2, 5, 4), 0.5, 3), mb.activation((1, 4, 5, 4), 0.5, 3)
    mb.split_v(t, [2, 4], 1, [top, bottom])
    u = conv(mb, rng, bottom, 4, 3)  # the last view read after another op
    e = mb.activation((1, 1, 2, 5, 4), 0.5, 3)
    mb.expand_dims(top, 0, e)
    lo, hi = mb.activation((1, 4, 5, 1), 0.5, 3), mb.activation((1, 4, 5, 3), 0.5, 3)
    mb.split_v(u, [1, 3], 3, [lo, hi])
    model = finish(mb, [x], [e, hi, *([t] if source_output else [])])
    graph = rewrite(read_model(model))
    assert {op.kind for op in graph.operators} == {"CONV_2D", "SPLIT_V"}
    assert graph.storage_offset(bottom) == (2 * 5 * 4 if source_output else 0)
    assert (graph.storage(bottom) == graph.storage(t)) == source_output
    for strategy in ("dual", "rip"):
        got, want, _ = compile_and_run(model, tmp_path, strategy)
        assert got == want, strategy


def test_an_op_reading_a_tensor_and_a_view_of_it_runs_out_of_place(tmp_path):
    """ADD(t, first pixel of t): the pixel is a view into t's storage (a contiguous SLICE), so
    writing the sum over t would change the broadcast operand while it is still read."""
    rng = np.random.default_rng(2)
    mb = ModelBuilder()
    x = mb.activation((1, 4, 4, 3), 0.05, 1)
    t = conv(mb, rng, x, 4, 3)
    pixel = mb.activation((1, 1, 1, 4), 0.5, 3)
    mb.slice(t, [0, 0, 0, 0], [1, 1, 1, 4], pixel)
    y = mb.activation((1, 4, 4, 4), 0.8, -2)
    mb.add(t, pixel, y)
    model = finish(mb, [x], [y])
    graph = rewrite(read_model(model))
    assert [op.kind for op in graph.operators] == ["CONV_2D", "ADD"]
    add = requirements(graph).ops[1]
    assert not add.candidates and "view into part of it" in add.reason
    got, want, _ = compile_and_run(model, tmp_path, "rip")
    assert got == want


def test_views_as_graph_outputs(tmp_path):
    """Every piece of a SPLIT along the outermost axis is a view: no op is left, and the
    model's outputs are offsets into its input."""
    mb = ModelBuilder()
    x = mb.activation((1, 4, 3, 2), 0.1, 4)
    ys = [mb.activation((1, 1, 3, 2), 0.1, 4) for _ in range(4)]
    mb.split(x, 1, ys)
    model = finish(mb, [x], [ys[2], ys[1]])
    graph = rewrite(read_model(model))
    assert graph.operators == () and graph.storage_offset(ys[2]) == 12
    got, want, _ = compile_and_run(model, tmp_path, "rip")
    assert got == want


def test_space_to_batch_not_folded_where_tflite_micro_pads_with_an_unset_value():
    """With a non-zero input zero point, cells TFLite Micro's SPACE_TO_BATCH_ND pads hold
    its never-set output_offset: a fold that reads them is not made."""
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    x = mb.activation((1, 4, 4, 2), 0.05, 7)
    s2b = mb.activation((4, 3, 3, 2), 0.05, 7)
    mb.space_to_batch_nd(x, [2, 2], [(1, 1), (1, 1)], s2b)
    mid = conv(mb, rng, s2b, 3, 3, padding="VALID")
    y = mb.activation((1, 2, 2, 3), 0.5, 3)
    mb.batch_to_space_nd(mid, [2, 2], [(0, 0), (0, 0)], y)
    graph = rewrite(read_model(finish(mb, [x], [y])))
    kinds = [op.kind for op in graph.operators]
    assert kinds == ["SPACE_TO_BATCH_ND", "CONV_2D", "BATCH_TO_SPACE_ND"]


def test_sample_model_under_every_strategy(tmp_path):
    """Issue 14's operators in one model (tflite_writer.movement_sample_model), compiled whole:
    the same checksum as TFLite Micro under dual, tinyengine and rip."""
    model = movement_sample_model()
    for strategy in ("dual", "tinyengine", "rip"):
        got, want, _ = compile_and_run(model, tmp_path, strategy)
        assert got == want, strategy


@pytest.mark.parametrize("kind", ["CONV_2D", "DEPTHWISE_CONV_2D"])
def test_space_to_batch_around_conv_folds_into_dilation(tmp_path, kind):
    """The pattern older converters emit for a dilated SAME convolution (input zero point 0,
    as TFLite Micro pads with 0 there) becomes one dilated convolution with the same bytes."""
    rng = np.random.default_rng(7)
    d, k, c = 2, 3, 3
    mb = ModelBuilder()
    x = mb.activation((1, 7, 6, c), 0.05, 0)
    # SAME for a 3x3 dilated by 2 pads 2 on each side; S2B pads to a multiple of the block.
    pads = [(2, 3), (2, 2)]
    s2b = mb.activation((d * d, (7 + 5) // d, (6 + 4) // d, c), 0.05, 0)
    mb.space_to_batch_nd(x, [d, d], pads, s2b)
    if kind == "CONV_2D":
        mid = conv(mb, rng, s2b, 4, k, padding="VALID")
    else:
        w = mb.constant_int8(rng.integers(-127, 128, size=(1, k, k, c)).astype(np.int8), 0.02)
        b = mb.bias(rng.integers(-500, 500, size=c), 0.05, 0.02)
        mid = mb.activation((d * d, 6 - k + 1, 5 - k + 1, c), 0.5, 3)
        mb.depthwise_conv2d(s2b, w, b, mid, stride=1, padding="VALID")
    c_out = mb.shape(mid)[3]
    y = mb.activation((1, 7, 6, c_out), 0.5, 3)
    mb.batch_to_space_nd(mid, [d, d], [(0, 1), (0, 0)], y)
    model = finish(mb, [x], [y])
    graph = rewrite(read_model(model))
    assert [op.kind for op in graph.operators] == [kind]
    assert graph.operators[0].params.dilation == (d, d)
    got, want, _ = compile_and_run(model, tmp_path, "rip")
    assert got == want


# ---- refusals ----------------------------------------------------------------------------------


def test_refusals():
    q = (0.1, 0)
    mb, x = one_input((1, 4, 4, 2), q)
    y = mb.activation((1, 2, 2, 2), *q)
    window = (("FilterWidth", 2), ("FilterHeight", 2), ("StrideW", 2), ("StrideH", 2))
    mb.operator("L2_POOL_2D", [x], [y], "Pool2DOptions", window)
    with pytest.raises(ModelError, match=r"L2_POOL_2D at index 0 .*float32 only"):
        read_model(finish(mb, [x], [y]))

    mb, x = one_input((4, 3), q)
    y = mb.activation((4, 6), *q)
    mb.mirror_pad(x, [(0, 0), (3, 0)], False, y)
    with pytest.raises(ModelError, match=r"MIRROR_PAD at index 0: paddings .* exceed"):
        read_model(finish(mb, [x], [y]))

    mb, x = one_input((4, 3), q)
    ys = [mb.activation((4, 1), *q), mb.activation((4, 1), *q)]
    mb.split_v(x, [1, 1], 1, ys)
    with pytest.raises(ModelError, match=r"SPLIT_V at index 0: pieces \[1, 1\] do not split"):
        read_model(finish(mb, [x], ys))

    mb, x = one_input((1, 4, 4, 2), (0.1, 5))  # not folded: a standalone block move
    y = mb.activation((4, 2, 2, 2), 0.1, 5)
    mb.space_to_batch_nd(x, [2, 2], [(0, 0), (0, 0)], y)
    graph = rewrite(read_model(finish(mb, [x], [y])))
    op = graph.operators[0]
    with pytest.raises(LoweringError, match=r"SPACE_TO_BATCH_ND at index 0 .*folded into a"):
        lowering_for(graph, op)(graph, op, 0, layout(graph, op).buffers, "op0")
