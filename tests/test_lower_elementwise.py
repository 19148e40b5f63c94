"""The elementwise, activation and data-movement lowerings (codegen/lower_elementwise.py,
lower_activation.py, lower_shape.py) against TensorFlow Lite Micro, byte for byte, through
real compiled C.

Each case is a single-op int8 model written with frontend.tflite_writer, read and rewritten
as the compiler does; the op is lowered with buffers pointing into a test arena, and a tiny C
program (arena, inputs copied in, the op's decls, its call, the output bytes to stdout) is
built with gcc -Werror and run. In-place cases put the output over a full-size input as the
plan would (ADD/SUB/MUL and activations at or below it, nearest upsampling from the same
base in reverse). Every program is also compiled for the Pico's cores with arm-none-eabi-gcc.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

import cbuild as cb
import numpy as np
import pytest
from tflite_micro import runtime
from tflite_writer import ModelBuilder, random_add_model, random_upsample_model

from rip.codegen import lower_activation, lower_elementwise, lower_shape
from rip.codegen.lowering import Lowered, OpBuffers
from rip.codegen.lowerings import lowering_for
from rip.core import kernel_variants as kv
from rip.core.errors import LoweringError
from rip.core.operators import of_family
from rip.frontend.ir import Graph, NoParams, Operator, Tensor
from rip.frontend.reader import read_model
from rip.frontend.rewrite import rewrite

ALIGN = 16  # arena offsets as a planner would align them

# ---- building and running one lowered op (tests/cbuild.py) ---------------------------------


@pytest.fixture(scope="session")
def kernel_objects(kernel_objs: list[Path]) -> list[Path]:
    """The kernel sources compiled once per session; each test program links them."""
    return kernel_objs


def _align(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


@dataclass(frozen=True)
class Layout:
    """Where the op's activations sit in the test arena."""

    buffers: OpBuffers
    offsets: dict[int, int]  # activation input tensor id -> arena offset
    output_offset: int
    arena_bytes: int


def layout(
    graph: Graph, op: Operator, inplace: str | None = None, over: int = 0, gap: int = 0
) -> Layout:
    """Inputs one after another, then the output; in place, input ``over`` at ``gap`` and
    the output at 0 (``gap`` bytes below it, 0 for the same base), other inputs after both."""
    out = graph.tensors[op.outputs[0]]
    offsets: dict[int, int] = {}
    end = 0
    if inplace is not None:
        tid = op.inputs[over]
        offsets[tid] = gap
        end = _align(max(gap + graph.tensors[tid].nbytes, out.nbytes))
    for tid in op.inputs:
        t = graph.tensors.get(tid)
        if t is None or t.is_constant or tid in offsets:
            continue
        offsets[tid] = end
        end = _align(end + t.nbytes)
    output_offset = 0 if inplace is not None else end
    arena = max(end, output_offset + out.nbytes)
    pointers = tuple(f"(rip_arena + {offsets[t]})" if t in offsets else None for t in op.inputs)
    buffers = OpBuffers(
        pointers, f"(rip_arena + {output_offset})", inplace, over if inplace else None
    )
    return Layout(buffers, offsets, output_offset, arena)


def c_bytes(data: bytes) -> str:
    return ", ".join(str(v) for v in np.frombuffer(data, dtype=np.int8)) or "0"


def program(lowered: Lowered, lay: Layout, inputs: dict[int, np.ndarray], out_bytes: int) -> str:
    """A whole C program around one lowered op: inputs copied into the arena, the call run
    from a function shaped like rip_model_invoke, the output bytes written to stdout."""
    includes = "\n".join(f'#include "{h}"' for h in lowered.headers)
    data = "\n".join(
        f"static const int8_t test_input{tid}[{a.size}] = {{{c_bytes(a.tobytes())}}};"
        for tid, a in inputs.items()
    )
    copies = "\n    ".join(
        f"memcpy(rip_arena + {lay.offsets[tid]}, test_input{tid}, {a.size});"
        for tid, a in inputs.items()
    )
    call = "\n".join(f"    {line}" if line else "" for line in lowered.call.splitlines())
    # the op's own scratch (a MEAN over H and W runs as the global pool, 4 B a channel)
    scratch = max(16, lowered.scratch_bytes)
    return f"""#include <stdio.h>
#include <string.h>
{includes}

static int8_t rip_arena[{lay.arena_bytes}];
static int8_t rip_scratch[{scratch}] __attribute__((aligned(4)));
static rip_context rip_ctx = {{.buf = rip_scratch, .size = {scratch}}};

{data}

{lowered.decls}
static int invoke(void) {{
{call}
    return 0;
}}

int main(void) {{
    int status;
    (void)rip_ctx; /* most of these kernels use no scratch */
    {copies}
    status = invoke();
    if (status != 0) {{
        return status;
    }}
    fwrite(rip_arena + {lay.output_offset}, 1, {out_bytes}, stdout);
    return 0;
}}
"""


def build_and_run(source: str, objects: Sequence[Path], workdir: Path) -> bytes:
    """Compile with gcc -Werror and run; also compile for Cortex-M0+ and M33 when the Arm
    toolchain is present."""
    status, out = cb.build_and_run(source, objects, workdir, opt="-O2", cross=True)
    assert status == 0, f"exit {status}"
    return out


def tflm(model: bytes, arrays: Sequence[np.ndarray]) -> bytes:
    """TFLite Micro's output 0 of ``model`` on ``arrays`` (in the model's input order)."""
    it = runtime.Interpreter.from_bytes(model, arena_size=8 << 20)
    for i, a in enumerate(arrays):
        it.set_input(a, i)
    it.invoke()
    return np.asarray(it.get_output(0)).astype(np.int8).tobytes()


def read(model: bytes) -> Graph:
    return rewrite(read_model(model))


def random_inputs(graph: Graph, rng: np.random.Generator) -> dict[int, np.ndarray]:
    return {
        t: rng.integers(-128, 128, size=graph.tensors[t].shape).astype(np.int8)
        for t in graph.inputs
    }


def check(
    graph: Graph,
    reference: bytes,
    inputs: dict[int, np.ndarray],
    objects: Sequence[Path],
    workdir: Path,
    inplace: str | None = None,
    over: int = 0,
    gap: int = 0,
    index: int = 0,
) -> Lowered:
    """Lower the graph's only op, run it as C and compare with ``reference`` (TFLite Micro's
    output bytes). Returns the lowering for further checks."""
    assert len(graph.operators) == 1, [op.kind for op in graph.operators]
    op = graph.operators[0]
    lay = layout(graph, op, inplace, over, gap)
    lowered = lowering_for(graph, op)(graph, op, index, lay.buffers, f"op{index}")
    assert lowered.scratch_bytes == 0
    out_bytes = graph.tensors[op.outputs[0]].nbytes
    got = build_and_run(program(lowered, lay, inputs, out_bytes), objects, workdir)
    assert got == reference, f"{op.kind} inplace={inplace} over={over} gap={gap}"
    return lowered


def check_model(
    model: bytes,
    rng: np.random.Generator,
    objects: Sequence[Path],
    workdir: Path,
    inplace: str | None = None,
    over: int = 0,
    gap: int = 0,
    index: int = 0,
) -> Lowered:
    """``check`` for a model read from bytes, on random inputs, against TFLite Micro."""
    graph = read(model)
    inputs = random_inputs(graph, rng)
    reference = tflm(model, list(inputs.values()))
    return check(graph, reference, inputs, objects, workdir, inplace, over, gap, index)


def rand_quant(rng: np.random.Generator, lo: float = 0.004, hi: float = 0.2) -> tuple[float, int]:
    """A log-uniform scale in [lo, hi] and a zero point anywhere in int8."""
    scale = float(np.float32(math.exp(rng.uniform(math.log(lo), math.log(hi)))))
    return scale, int(rng.integers(-128, 128))


def finish(mb: ModelBuilder, inputs: Sequence[int], outputs: Sequence[int]) -> bytes:
    mb.inputs(inputs)
    mb.outputs(outputs)
    return mb.to_bytes()


# ---- ADD, SUB, MUL ---------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(5, 3, 6), (16, 16, 8)])
@pytest.mark.parametrize("activation", ["NONE", "RELU6"])
def test_add_out_of_place_and_in_place(
    kernel_objects: list[Path],
    tmp_path: Path,
    activation: Literal["NONE", "RELU6"],
    shape: tuple[int, int, int],
) -> None:
    """random_add_model: disjoint output; output == input 0 (same base); output 40 bytes
    below input 1. At 2,048 elements the op takes its term table (rip_add_params.terms)."""
    tabled = shape[0] * shape[1] * shape[2] >= kv.ADD_TERMS_MIN_ELEMENTS
    for seed in range(2):
        model = random_add_model(seed, *shape, activation)
        for inplace, over, gap in ((None, 0, 0), ("elementwise", 0, 0), ("elementwise", 1, 40)):
            rng = np.random.default_rng(seed)
            lowered = check_model(
                model,
                rng,
                kernel_objects,
                tmp_path,
                inplace=inplace,
                over=over,
                gap=gap,
                index=5,
            )
            assert "rip_add_s8(&op5_params" in lowered.call and "return 6;" in lowered.call
            assert lowered.headers == ("rip_elementwise.h",)
            assert ("op5_terms[512]" in lowered.decls) == tabled
            assert (".terms = op5_terms" in lowered.decls) == tabled


def test_sub_broadcast_first_operand_in_place_over_second(
    kernel_objects: list[Path], tmp_path: Path
) -> None:
    """SUB of a 1x1x1xC activation minus a full tensor, in place over the full operand."""
    rng = np.random.default_rng(11)
    mb = ModelBuilder()
    a = mb.activation((1, 1, 1, 5), *rand_quant(rng))
    b = mb.activation((1, 4, 3, 5), *rand_quant(rng))
    y = mb.activation((1, 4, 3, 5), 0.3, 4)
    mb.operator("SUB", [a, b], [y], "SubOptions", (("FusedActivationFunction", 0),))
    model = finish(mb, [a, b], [y])
    for inplace in (None, "elementwise"):
        check_model(
            model, np.random.default_rng(1), kernel_objects, tmp_path, inplace=inplace, over=1
        )


@pytest.mark.parametrize("constant", [True, False])
def test_mul_broadcast_channel_operand(
    kernel_objects: list[Path], tmp_path: Path, constant: bool
) -> None:
    """MUL by a 1x1x1xC operand: a constant (the lowering emits it as op data) or a second
    model input; out of place and in place over the full-size operand."""
    rng = np.random.default_rng(7)
    mb = ModelBuilder()
    x = mb.activation((1, 3, 4, 6), *rand_quant(rng))
    if constant:
        c = mb.constant_int8(
            rng.integers(-128, 128, size=(1, 1, 1, 6)).astype(np.int8), *rand_quant(rng)
        )
    else:
        c = mb.activation((1, 1, 1, 6), *rand_quant(rng))
    y = mb.activation((1, 3, 4, 6), 0.01, -3)
    mb.mul(x, c, y, activation="RELU")
    model = finish(mb, [x] if constant else [x, c], [y])
    for inplace in (None, "elementwise"):
        lowered = check_model(
            model,
            np.random.default_rng(2),
            kernel_objects,
            tmp_path,
            inplace=inplace,
            over=0,
            index=2,
        )
        # the op's own const data (external: model.c sees it through model_data.h)
        definition = "\nconst int8_t op2_operand1[6] RIP_CONSTANT = {"
        assert (definition in "\n" + lowered.decls) == constant
        assert ("extern const int8_t op2_operand1[6];" in lowered.declarations) == constant


# ---- activations -----------------------------------------------------------------------------


def unary_model(kind: str, rng: np.random.Generator, shape: tuple[int, ...]) -> bytes:
    si, zi = rand_quant(rng, 0.01, 0.3)
    so, zo = {
        "LOGISTIC": (1.0 / 256.0, -128),
        "TANH": (1.0 / 128.0, 0),
        "HARD_SWISH": (si * 0.7, 9),
    }.get(kind, rand_quant(rng))
    mb = ModelBuilder()
    x = mb.activation(shape, si, zi)
    y = mb.activation(shape, so, zo)
    if kind == "QUANTIZE":
        mb.quantize(x, y)  # int8 -> int8: a requantization inside the graph
    else:
        mb.operator(kind, [x], [y])
    return finish(mb, [x], [y])


@pytest.mark.parametrize("kind", ["RELU", "RELU6", "QUANTIZE", "LOGISTIC", "TANH", "HARD_SWISH"])
def test_unary_out_of_place_and_in_place(
    kernel_objects: list[Path], tmp_path: Path, kind: str
) -> None:
    """Each activation disjoint and in place (output at, and 7 bytes below, its input)."""
    rng = np.random.default_rng(len(kind))
    model = unary_model(kind, rng, (1, 5, 4, 3))
    graph = read(model)
    inputs = random_inputs(graph, rng)
    reference = tflm(model, list(inputs.values()))
    for inplace, gap in ((None, 0), ("elementwise", 0), ("elementwise", 7)):
        check(graph, reference, inputs, kernel_objects, tmp_path, inplace=inplace, gap=gap)


@pytest.mark.parametrize("shape", [(2, 10), (1, 3, 4, 7)])
def test_softmax(kernel_objects: list[Path], tmp_path: Path, shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(shape[-1])
    mb = ModelBuilder()
    x = mb.activation(shape, *rand_quant(rng, 0.05, 0.5))
    y = mb.activation(shape, 1.0 / 256.0, -128)
    mb.softmax(x, y, beta=1.0)
    lowered = check_model(finish(mb, [x], [y]), rng, kernel_objects, tmp_path)
    assert lowered.headers == ("rip_activation.h",)


# ---- data movement ---------------------------------------------------------------------------


@pytest.mark.parametrize("factor", [2, (3, 2)])
def test_resize_nearest_upsample_out_of_place_and_reverse_in_place(
    kernel_objects: list[Path], tmp_path: Path, factor: int | tuple[int, int]
) -> None:
    """random_upsample_model: disjoint, and in place from the same base (reverse)."""
    model = random_upsample_model(3, 3, 4, 5, factor)
    for inplace in (None, "reverse"):
        lowered = check_model(
            model, np.random.default_rng(3), kernel_objects, tmp_path, inplace=inplace
        )
        assert (".reverse = 1" in lowered.decls) == (inplace == "reverse")


def test_resize_nearest_float_map_in_place(kernel_objects: list[Path], tmp_path: Path) -> None:
    """A non-integer ratio with half-pixel centers (the kernel's float32 map), in place too."""
    rng = np.random.default_rng(5)
    mb = ModelBuilder()
    x = mb.activation((1, 3, 2, 4), 0.05, 3)
    y = mb.activation((1, 7, 5, 4), 0.05, 3)
    mb.resize_nearest_neighbor(x, y, half_pixel_centers=True)
    model = finish(mb, [x], [y])
    for inplace in (None, "reverse"):
        lowered = check_model(model, rng, kernel_objects, tmp_path, inplace=inplace)
        assert ".scale_h = 0" in lowered.decls


@pytest.mark.parametrize("axis", [3, 1])
def test_concatenation(kernel_objects: list[Path], tmp_path: Path, axis: int) -> None:
    """Three inputs of one quantization along channels or rows."""
    rng = np.random.default_rng(axis)
    q = rand_quant(rng)
    mb = ModelBuilder()
    shapes = [[1, 3, 2, 4], [1, 3, 2, 4], [1, 3, 2, 4]]
    for k, s in enumerate(shapes):
        s[axis] = k + 1
    xs = [mb.activation(s, *q) for s in shapes]
    out = [1, 3, 2, 4]
    out[axis] = 6
    y = mb.activation(out, *q)
    mb.concatenation(xs, y, axis=axis)
    lowered = check_model(finish(mb, xs, [y]), rng, kernel_objects, tmp_path)
    assert ".requantize = NULL" in lowered.decls


def test_concatenation_requantizes_an_input(kernel_objects: list[Path], tmp_path: Path) -> None:
    """An input quantized unlike the output (TFLite refuses it; rip requantizes) equals
    TFLite Micro running QUANTIZE on that input first."""
    rng = np.random.default_rng(13)
    qa, qo = rand_quant(rng), rand_quant(rng)
    shape_a, shape_b, shape_y = (1, 2, 3, 3), (1, 2, 3, 2), (1, 2, 3, 5)

    mb = ModelBuilder()  # what rip compiles
    a, b = mb.activation(shape_a, *qa), mb.activation(shape_b, *qo)
    y = mb.activation(shape_y, *qo)
    mb.operator(
        "CONCATENATION",
        [a, b],
        [y],
        "ConcatenationOptions",
        (("Axis", 3), ("FusedActivationFunction", 0)),
    )
    graph = read(finish(mb, [a, b], [y]))

    ref = ModelBuilder()  # what TFLite Micro runs
    ra, rb = ref.activation(shape_a, *qa), ref.activation(shape_b, *qo)
    ra_q = ref.activation(shape_a, *qo)
    ry = ref.activation(shape_y, *qo)
    ref.quantize(ra, ra_q)
    ref.concatenation([ra_q, rb], ry, axis=3)
    inputs = random_inputs(graph, rng)
    reference = tflm(finish(ref, [ra, rb], [ry]), list(inputs.values()))
    lowered = check(graph, reference, inputs, kernel_objects, tmp_path)
    assert "&op0_requantize0" in lowered.decls


@pytest.mark.parametrize("perm", [(0, 2, 1, 3), (1, 0)])
def test_transpose(kernel_objects: list[Path], tmp_path: Path, perm: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(perm))
    shape = (1, 3, 4, 5) if len(perm) == 4 else (3, 7)
    mb = ModelBuilder()
    x = mb.activation(shape, *rand_quant(rng))
    y = mb.activation(
        tuple(shape[p] for p in perm), *mb.quantization(x).scales, *mb.quantization(x).zero_points
    )
    mb.operator(
        "TRANSPOSE",
        [x, mb.constant_int32(np.asarray(perm, dtype=np.int32))],
        [y],
        "TransposeOptions",
    )
    check_model(finish(mb, [x], [y]), rng, kernel_objects, tmp_path)


@pytest.mark.parametrize(
    "pads", [[(0, 0), (1, 0), (0, 2), (1, 2)], [(0, 0), (0, 0), (0, 0), (3, 0)]]
)
def test_pad_with_channel_padding(
    kernel_objects: list[Path], tmp_path: Path, pads: list[tuple[int, int]]
) -> None:
    """Explicit PADs the rewrites keep (a channel pad is never folded), zero point fill."""
    rng = np.random.default_rng(sum(map(sum, pads)))
    shape = (1, 3, 2, 4)
    mb = ModelBuilder()
    x = mb.activation(shape, 0.07, -20)
    y = mb.activation(
        tuple(d + lo + hi for d, (lo, hi) in zip(shape, pads, strict=True)), 0.07, -20
    )
    mb.pad(x, pads, y)
    lowered = check_model(finish(mb, [x], [y]), rng, kernel_objects, tmp_path)
    assert ".pad_value = -20" in lowered.decls


# ---- what the lowerings refuse ---------------------------------------------------------------


def _lower(graph: Graph, **buffers: object) -> Lowered:
    op = graph.operators[0]
    lay = layout(graph, op)
    b = replace(lay.buffers, **buffers)
    return lowering_for(graph, op)(graph, op, 0, b, "op0")


def _without_weights(graph: Graph) -> Graph:
    """The graph-only form of a model: constants keep their shapes, lose their data."""
    tensors = {t: replace(v, data=None) if v.is_constant else v for t, v in graph.tensors.items()}
    return graph.with_(tensors=tensors, has_weights=False)


def test_refusals() -> None:
    """No weights, in place where the kernel cannot, the wrong mode, mismatched buffers."""
    rng = np.random.default_rng(0)
    mb = ModelBuilder()
    x = mb.activation((1, 2, 2, 3), 0.1, 0)
    c = mb.constant_int8(np.ones((1, 1, 1, 3), dtype=np.int8), 0.1, 0)
    y = mb.activation((1, 2, 2, 3), 0.1, 0)
    mb.mul(x, c, y)
    mul = read(finish(mb, [x], [y]))
    with pytest.raises(LoweringError, match=r"MUL at index 0 .*model has no weights"):
        _lower(_without_weights(mul))
    with pytest.raises(LoweringError, match="in place over constant input 1"):
        _lower(mul, output="(rip_arena + 0)", inplace="elementwise", inplace_input=1)
    with pytest.raises(LoweringError, match="'rip' is not supported"):
        _lower(mul, inplace="rip", inplace_input=0)
    with pytest.raises(LoweringError, match="1 input buffers for 2 inputs"):
        _lower(mul, inputs=("(rip_arena + 0)",))
    with pytest.raises(LoweringError, match="is an activation but has no buffer"):
        _lower(mul, inputs=(None, None))

    mb = ModelBuilder()
    a = mb.activation((1, 2, 2, 3), 0.1, 0)
    b = mb.activation((1, 1, 1, 3), 0.1, 0)
    y = mb.activation((1, 2, 2, 3), 0.2, 0)
    mb.add(a, b, y)
    add = read(finish(mb, [a, b], [y]))
    with pytest.raises(LoweringError, match="broadcast operand"):
        _lower(add, inplace="elementwise", inplace_input=1)

    mb = ModelBuilder()
    x = mb.activation((1, 10), 0.1, 0)
    y = mb.activation((1, 10), 1.0 / 256.0, -128)
    mb.softmax(x, y)
    with pytest.raises(LoweringError, match=r"SOFTMAX .*needs disjoint buffers"):
        _lower(read(finish(mb, [x], [y])), inplace="elementwise", inplace_input=0)

    mb = ModelBuilder()
    x = mb.activation((1, 4, 4, 2), 0.1, 0)
    y = mb.activation((1, 2, 2, 2), 0.1, 0)
    mb.resize_nearest_neighbor(x, y)
    resize = read(finish(mb, [x], [y]))
    with pytest.raises(LoweringError, match="cannot run in place"):  # downsampling
        _lower(resize, inplace="reverse", inplace_input=0)
    with pytest.raises(LoweringError, match="only 'reverse'"):
        _lower(resize, inplace="elementwise", inplace_input=0)

    mb = ModelBuilder()
    x = mb.activation((1, 2, 2, 3), 0.1, 0)
    y = mb.activation((1, 2, 2, 6), 0.1, 0)
    mb.concatenation([x, x], y, axis=3)
    with pytest.raises(LoweringError, match="CONCATENATION"):
        _lower(read(finish(mb, [x], [y])), inplace="elementwise", inplace_input=0)

    mb = ModelBuilder()
    x = mb.activation((1, 2, 2, 3), 0.1, 0)
    y = mb.activation((1, 3, 2, 4), 0.1, 0)
    mb.pad(x, [(0, 0), (1, 0), (0, 0), (0, 1)], y)
    pad = read(finish(mb, [x], [y]))
    _lower(pad)
    with pytest.raises(LoweringError, match=r"PAD at index 0 .*model has no weights"):
        _lower(_without_weights(pad))

    mb = ModelBuilder()  # LOGISTIC off its fixed output zero point: TFLite Micro refuses it
    x = mb.activation((1, 4), *rand_quant(rng))
    y = mb.activation((1, 4), 1.0 / 256.0, 0)
    mb.operator("LOGISTIC", [x], [y])
    with pytest.raises(LoweringError, match=r"LOGISTIC at index 0 \(output tensor .*-128"):
        _lower(read(finish(mb, [x], [y])))


def test_every_kind_is_registered() -> None:
    graph = Graph("g", {0: Tensor(0, "t", (1,), "int8")}, (), (0,), (0,))
    for le in (lower_elementwise, lower_activation, lower_shape):
        for kind in of_family(le.__name__.rsplit("_", 1)[-1]):
            op = Operator(kind, (0,), (0,), NoParams(), 0)
            assert lowering_for(graph, op).__module__ == le.__name__
