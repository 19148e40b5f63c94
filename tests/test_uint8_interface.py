"""uint8 interface tensors (issue 28): a uint8 model input that a QUANTIZE takes to int8,
and a uint8 output a QUANTIZE makes from int8, run as TFLite Micro runs them
(quantize_common.cc, reference_ops::Requantize) through a 256-entry table, byte-equal.

The compiled model's input and output are the uint8 tensors themselves (raw bytes through
the same API); the default test input of a uint8 input k of N bytes is
``numpy.random.default_rng(k).integers(0, 256, size=N, dtype=numpy.uint8)``.
"""

from __future__ import annotations

import math
from pathlib import Path

import cbuild as cb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_batch_matmul import assert_matches_on_qemu_m33
from test_codegen_host import compile_and_run
from test_lower_elementwise import check, read, tflm
from tflite_writer import ModelBuilder
from tflite_writer.generators import _Calibrated

from rip.codegen.reference import default_inputs
from rip.core.errors import ModelError
from rip.core.terms import InPlaceKind
from rip.frontend.reader import read_model

F32 = np.float32
scales = st.floats(-7.0, 0.0).map(lambda e: float(F32(math.exp(e))))


def requantize_model(to_uint8: bool, si: float, zi: int, so: float, zo: int) -> bytes:
    """One QUANTIZE over all 256 input bytes: int8 -> uint8 (an output), or uint8 -> int8."""
    mb = ModelBuilder()
    x = mb.activation((1, 256), si, zi, "x", dtype="int8" if to_uint8 else "uint8")
    y = mb.activation((1, 256), so, zo, "y", dtype="uint8" if to_uint8 else "int8")
    mb.quantize(x, y)
    mb.inputs([x])
    mb.outputs([y])
    return mb.to_bytes()


@settings(max_examples=30, deadline=None)
@given(to_uint8=st.booleans(), si=scales, so=scales, zi=st.integers(0, 255),
       zo=st.integers(0, 255), same_scale=st.booleans())  # fmt: skip
def test_uint8_requantize_matches_tflm_on_every_byte(kernel_objs, tmp_path_factory, to_uint8,
                                                     si, so, zi, zo, same_scale):  # fmt: skip
    """Both directions, any scales (or one scale for both sides), every input byte, out of
    place and in place."""
    if same_scale:
        so = si
    zi, zo = (zi - 128, zo) if to_uint8 else (zi, zo - 128)  # the int8 side's zero point
    model = requantize_model(to_uint8, si, zi, so, zo)
    graph = read(model)
    dtype = np.int8 if to_uint8 else np.uint8
    x = np.arange(256, dtype=np.uint8).view(dtype).reshape(1, 256)
    want = tflm(model, [x])
    work = tmp_path_factory.mktemp("u8")
    check(graph, want, {graph.inputs[0]: x}, kernel_objs, work)
    check(graph, want, {graph.inputs[0]: x}, kernel_objs, work, inplace=InPlaceKind.ELEMENTWISE)


def test_the_xor_fast_path(kernel_objs, tmp_path) -> None:
    """Same scale, zero points 128 apart: every byte flips its top bit, both ways."""
    for to_uint8, zi, zo in ((True, -3, 125), (False, 125, -3)):
        model = requantize_model(to_uint8, 0.05, zi, 0.05, zo)
        x = np.arange(256, dtype=np.uint8).view(np.int8 if to_uint8 else np.uint8)
        want = tflm(model, [x.reshape(1, 256)])
        assert want == (np.arange(256, dtype=np.uint8) ^ 0x80).tobytes()
        graph = read(model)
        check(graph, want, {graph.inputs[0]: x.reshape(1, 256)}, kernel_objs, tmp_path)


def uint8_model(seed: int = 0) -> bytes:
    """uint8 input -> QUANTIZE -> conv (RELU) -> conv -> QUANTIZE -> uint8 output."""
    net = _Calibrated(seed)
    u = net.mb.activation((1, 8, 8, 3), 0.02, 128, "image", dtype="uint8")
    x = net.input((1, 8, 8, 3))
    net.mb.quantize(u, x)
    y = net.conv(net.conv(x, 6, 3, activation="RELU"), 4, 1)
    q = net.mb.quantization(y)
    out = net.mb.activation((1, 8, 8, 4), q.scales[0] * 1.25, 131, "scores", dtype="uint8")
    net.mb.quantize(y, out)
    return net.finish([u], [out])


def test_default_uint8_input_is_the_documented_one() -> None:
    graph = read_model(uint8_model(), name="m")
    (x,) = default_inputs(graph)
    want = np.random.default_rng(0).integers(0, 256, size=8 * 8 * 3, dtype=np.uint8)
    assert x.dtype == np.uint8 and np.array_equal(x, want)


@pytest.mark.parametrize("strategy", ["rip", "dual"])
def test_uint8_model_matches_tflm(tmp_path, strategy) -> None:
    got, want, _ = compile_and_run(uint8_model(), tmp_path, strategy)
    assert got == want, f"{strategy}: 0x{got:08x} != 0x{want:08x}"


def test_uint8_inside_the_graph_is_refused() -> None:
    """uint8 only at the interface: a uint8 tensor between two ops is refused in one line."""
    mb = ModelBuilder()
    x = mb.activation((1, 4), 0.1, 0, "x")
    u = mb.activation((1, 4), 0.1, 128, "u", dtype="uint8")
    y = mb.activation((1, 4), 0.1, 0, "y")
    mb.quantize(x, u)
    mb.quantize(u, y)
    mb.inputs([x])
    mb.outputs([y])
    with pytest.raises(ModelError, match="uint8 activations are not supported"):
        read_model(mb.to_bytes(), name="m")


@pytest.mark.skipif(not (cb.ARM_GCC and cb.QEMU), reason=cb.NEED_QEMU)
def test_uint8_model_on_qemu_m33(tmp_path: Path, capsys) -> None:
    assert_matches_on_qemu_m33(uint8_model(3), tmp_path, capsys)
