"""The models `make bench-cost` measures that no shared file has (its writer-models section
runs this script, so that no benchmark imports the tests): an attention block (BATCH_MATMUL,
SOFTMAX), a 16x8 DS-CNN (int16 activations, int8 weights) and a keyword-spotting LSTM (int8
and 16x8), written TensorFlow-free by the tests' TFLite writer (tests/tflite_writer) with the
tests' own builders, at the sizes of real keyword-spotting models:

- attention-kwt: one single-head attention block of a Keyword Transformer (KWT-1: 49 tokens
  of width 64): Q, K, V projections (FULLY_CONNECTED, keep_num_dims), Q K^T (BATCH_MATMUL
  adj_y), SOFTMAX, times V (BATCH_MATMUL), the output projection and the residual ADD
  (`tests/test_batch_matmul.attention_model`, calibrated quantization).
- lstm-kws / lstm16-kws: a keyword-spotting LSTM layer (Hello Edge's input: 49 steps of 10
  MFCC features; 64 units, batch 1, batch major) in int8 (8x8->16: int16 cell state, int32
  biases) and in 16x8 (int16 activations, int64 biases), with the converter's usual
  quantization: per-tensor symmetric int8 gate weights, the cell state at 2^-11 (a power of
  two: TFLite's integer LSTM needs one), the hidden state (the output) at about 2 / 255 around
  zero, no cell clip (`tests/test_lstm.lstm_model`).
- ds-cnn16: DS-CNN-S in 16x8 (49 x 10 MFCC input, 64 channels): a strided 3x3 CONV_2D, four
  depthwise-separable blocks (3x3 DEPTHWISE_CONV_2D, 1x1 CONV_2D, fused RELU, int64 biases,
  per-channel weights; `tests/test_wide._conv_stack`), a global AVERAGE_POOL_2D, RESHAPE and
  a 12-way FULLY_CONNECTED with per-tensor weights (TFLite Micro's cmsis_nn
  FULLY_CONNECTED refuses per-channel 16x8 weights; its reference kernel, and rip, take both).

    python tests/bench_models.py [--out DIR]    # writes DIR/<name>.tflite, prints each path
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
from test_batch_matmul import attention_model
from test_lstm import lstm_model
from test_wide import _conv_stack
from tflite_writer import ModelBuilder

from rip.core.terms import Activation

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "build" / "bench-models"


def attention_kwt() -> bytes:
    return attention_model(0, tokens=49, width=64, head=64)


def lstm_kws(wide: bool = False, seed: int = 5) -> bytes:
    fine = 256.0 if wide else 1.0  # 16x8: the same ranges in 256 times finer steps
    # input (MFCC, asymmetric), its zero point, hidden state, its zero point, cell, weights
    scales = (0.05 / fine, -20, 2 / 255 / fine, -1, 2.0**-11, [0.004] * 8)
    return lstm_model(1, 49, 10, 64, time_major=False, wide=wide, cell_clip=0.0,
                      scales=scales, rng=np.random.default_rng(seed))  # fmt: skip


def lstm16_kws() -> bytes:
    return lstm_kws(wide=True)


def ds_cnn16(seed: int = 3, channels: int = 64, blocks: int = 4, labels: int = 12) -> bytes:
    rng = np.random.default_rng(seed)
    relu = Activation.RELU.value
    convs = [("conv", 3, 2, 1, "SAME", channels, "int64", relu)]
    for _ in range(blocks):
        convs += [("dw", 3, 1, 1, "SAME", 1, "int64", relu),
                  ("conv", 1, 1, 1, "SAME", channels, "int64", relu)]  # fmt: skip
    mb, x, first, (h, w, c, s_x) = _conv_stack(ModelBuilder(), (49, 10), 1, convs, rng)
    pooled = mb.activation((1, 1, 1, c), s_x, 0, "pooled", dtype="int16")
    mb.average_pool2d(x, pooled, filter_size=(h, w), stride=1, padding="VALID")
    flat = mb.activation((1, c), s_x, 0, "flat", dtype="int16")
    mb.reshape(pooled, flat)
    s_w = float(np.float32(0.01))
    wt = mb.constant_int8(rng.integers(-127, 128, (labels, c), dtype=np.int8), [s_w], 0)
    b = mb.constant_int64(rng.integers(-1000, 1000, labels),
                          [float(np.float32(s_x) * np.float32(s_w))])  # fmt: skip
    s_y = float(np.float32(s_x * s_w * 50 * math.sqrt(c)))  # logits mostly inside int16
    y = mb.activation((1, labels), s_y, 0, "logits", dtype="int16")
    mb.fully_connected(flat, wt, b, y)
    mb.inputs([first])
    mb.outputs([y])
    return mb.to_bytes()


MODELS: dict[str, Callable[[], bytes]] = {
    "attention-kwt": attention_kwt,
    "ds-cnn16": ds_cnn16,
    "lstm-kws": lstm_kws,
    "lstm16-kws": lstm16_kws,
}


def write_models(out: Path = OUT, names: list[str] | None = None) -> dict[str, Path]:
    """Each model (default: all) as ``out/<name>.tflite``, rewritten only when its bytes
    change; name -> path."""
    out.mkdir(parents=True, exist_ok=True)
    paths = {}
    for name in names or list(MODELS):
        data = MODELS[name]()
        path = out / f"{name}.tflite"
        if not path.is_file() or path.read_bytes() != data:
            path.write_bytes(data)
        paths[name] = path
    return paths


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=OUT, help=f"folder (default {OUT})")
    args = ap.parse_args(argv)
    for path in write_models(args.out).values():
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
