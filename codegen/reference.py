"""The default test input, and TFLite Micro's output bytes on it (the independent oracle).

The default test input of an int8 input of N bytes is
``numpy.random.default_rng(k).integers(-128, 128, size=N, dtype=numpy.int8)`` for the k-th
model input (k = 0 for the usual single input), so anyone can reproduce it; a uint8 input
(a model whose QUANTIZE takes uint8 to int8) gets
``numpy.random.default_rng(k).integers(0, 256, size=N, dtype=numpy.uint8)``, and an int16
input of N values ``numpy.random.default_rng(k).integers(-32768, 32768, size=N,
dtype=numpy.int16)``. Outputs are checksummed as their raw little-endian bytes, whatever
their type. A model with state (variable tensors) is reset first (TFLite Micro's Reset): the
default input is the first invoke of a stream. For a model
with a float interface (QUANTIZE at the input, DEQUANTIZE at the outputs) the compiled
model's input and outputs are the int8 tensors inside those ops: the reference feeds the
float values that quantize exactly to those bytes, and reads back the int8 values the
float outputs dequantized from.
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from rip.core.errors import ReferenceRunError
from rip.frontend.ir import Graph

try:  # the oracle, a dependency of rip (--run checks against it)
    from tflite_micro import runtime
except ImportError as e:  # pragma: no cover - a platform without a tflite-micro wheel
    runtime, _MISSING = None, str(e)


def default_input(nbytes: int, index: int = 0, dtype: str = "int8") -> np.ndarray:
    """Input ``index``'s default values: int8, or for a uint8 input
    ``default_rng(index).integers(0, 256, size=N, dtype=numpy.uint8)``, for an int16 input
    of ``nbytes // 2`` values ``default_rng(index).integers(-32768, 32768, ...)``."""
    if dtype == "uint8":
        return np.random.default_rng(index).integers(0, 256, size=nbytes, dtype=np.uint8)
    if dtype == "int16":
        rng = np.random.default_rng(index)
        return rng.integers(-32768, 32768, size=nbytes // 2, dtype=np.int16)
    return np.random.default_rng(index).integers(-128, 128, size=nbytes, dtype=np.int8)


def default_inputs(graph: Graph) -> list[np.ndarray]:
    return [
        default_input(graph.tensors[t].nbytes, k, graph.tensors[t].dtype)
        for k, t in enumerate(graph.inputs)
    ]


OUTPUT_TYPES = {"int16": np.int16, "int32": np.int32}


def checksum(outputs: list[bytes]) -> int:
    """zlib's CRC-32 over the output tensors' bytes, concatenated in output order."""
    crc = 0
    for data in outputs:
        crc = zlib.crc32(data, crc)
    return crc


def _interface(graph: Graph) -> dict[int, tuple[str, int]]:
    """int8 tensor id -> (boundary op kind, float tensor id)."""
    return {q: (kind, f) for kind, f, q in graph.interface}


@dataclass(frozen=True)
class ArenaUse:
    """TFLite Micro's arena after AllocateTensors, as its recording allocator prints it:
    ``head``, the part its memory planner shares out (every activation tensor and every
    kernel's scratch buffer, the figure to compare an activation plan with), and ``tail``,
    the persistent part (tensor and node structs, quantization, op data)."""

    head: int
    tail: int

    @property
    def total(self) -> int:
        return self.head + self.tail


_ALLOCATION = re.compile(r"Arena allocation (head|tail) (\d+) bytes")


def _interpreter(model: Path | bytes):  # -> runtime.Interpreter
    if runtime is None:  # pragma: no cover - the test extra installs it
        raise ReferenceRunError(f"TFLite Micro is not installed ({_MISSING})")
    data = Path(model).read_bytes() if isinstance(model, Path) else model
    try:
        return runtime.Interpreter.from_bytes(data, arena_size=64 << 20)
    except Exception as e:  # the interpreter's own refusal, e.g. an unsupported op
        raise ReferenceRunError(f"TFLite Micro cannot load the model: {e}") from None


def arena_use(model: Path | bytes) -> ArenaUse:
    """The arena TFLite Micro allocates for ``model`` (its Python interpreter with the
    reference kernels, which ask for no more scratch than CMSIS-NN's). The interpreter
    prints the figures on the C stderr only: it is read through file descriptor 2."""
    it = _interpreter(model)
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            it.print_allocations()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        found = dict(_ALLOCATION.findall(tmp.read().decode(errors="replace")))
    if set(found) != {"head", "tail"}:
        raise ReferenceRunError("TFLite Micro printed no arena allocation figures")
    return ArenaUse(int(found["head"]), int(found["tail"]))


def reference_outputs(model: Path | bytes, graph: Graph) -> list[bytes]:
    """TFLite Micro's output bytes (int8, or the output's own type: int16, int32,
    little-endian) for the default test input, in ``graph.outputs`` order."""
    it = _interpreter(model)
    if graph.state:
        it.reset()  # variable tensors to their zero points, as rip_model_reset
    boundary = _interface(graph)
    for k, (t, x) in enumerate(zip(graph.inputs, default_inputs(graph), strict=True)):
        tensor = graph.tensors[t]
        if t in boundary:  # float input: the values that QUANTIZE maps onto our bytes
            if tensor.quant is None:
                raise ReferenceRunError(f"input {t}: int8 side of QUANTIZE has no quantization")
            scale = np.float32(tensor.quant.scale[0])
            zp = tensor.quant.zero_point[0]
            real = (x.astype(np.float32) - np.float32(zp)) * scale
            requant = np.round(real / scale).astype(np.int64) + zp
            if not np.array_equal(np.clip(requant, -128, 127), x.astype(np.int64)):
                raise ReferenceRunError(f"input {t}: float interface does not round-trip")
            x = real
        details = it.get_input_details(k)
        it.set_input(x.reshape(details["shape"]).astype(details["dtype"]), k)
    it.invoke()
    outputs = []
    for k, t in enumerate(graph.outputs):
        y = np.asarray(it.get_output(k))
        if t in boundary:  # float output: back to the int8 bytes it dequantized from
            q = graph.tensors[t].quant
            if q is None:
                raise ReferenceRunError(f"output {t}: int8 side of DEQUANTIZE has no quantization")
            y = np.round(y / np.float32(q.scale[0])) + q.zero_point[0]
            y = np.clip(y, -128, 127)
        # int8 bytes, or the tensor's own type (int16, int32: little-endian)
        dtype = OUTPUT_TYPES.get(graph.tensors[t].dtype, np.int8)
        outputs.append(y.astype(np.dtype(dtype).newbyteorder("<")).tobytes())
    return outputs
