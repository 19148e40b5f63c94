"""Issue 22, class 3: the validator is never stricter than TFLite Micro on a model TFLite
Micro loads and runs. It passes every model in ../shared/models and every model the tests'
generators write, and the converter quirks TFLite Micro ignores (an axis on a 1-D bias, as
TFLite Micro's own person_detect has; per-channel arrays no kernel reads; empty optional
arrays; a zero point array shorter than its scales) are accepted, TFLite Micro runs each,
and a model with all of them compiles to TFLite Micro's bytes."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import adversarial_models as adv
import make_bad_models as mbm
import pytest
import tflite_writer as tw
from make_bad_models import DW_B, FC_B, FC_W, SHAPE, B, RawModel, W
from paths import SHARED

from rip.cli.compile import main as compile_main
from rip.codegen.reference_process import run_reference
from rip.frontend.reader import read_model
from rip.frontend.validate import validate_model

SHARED_MODELS = sorted((SHARED / "models").rglob("*.tflite")) if SHARED.is_dir() else []


@pytest.mark.skipif(not SHARED_MODELS, reason=f"{SHARED}/models is absent")
@pytest.mark.parametrize("path", SHARED_MODELS, ids=lambda p: p.name)
def test_the_validator_passes_every_shared_model(path: Path) -> None:
    validate_model(path.read_bytes(), str(path))


GENERATED: dict[str, Callable[[], bytes]] = {
    "corpus_base": lambda: mbm.base().to_bytes(),
    "example_model": tw.example_model,
    "movement_sample_model": tw.movement_sample_model,
    "overlapping_adds": lambda: adv.overlapping_adds(50),
    "hard_packing": adv.hard_packing,
    **{
        f"{name}_{seed}": (lambda f=f, seed=seed: f(seed))
        for name, f in (
            ("conv", tw.random_conv_model),
            ("depthwise", tw.random_depthwise_model),
            ("fully_connected", tw.random_fully_connected_model),
            ("pool", tw.random_pool_model),
            ("add", tw.random_add_model),
        )
        for seed in range(4)
    },
}


@pytest.mark.parametrize("name", sorted(GENERATED))
def test_the_validator_passes_every_generated_model(name: str) -> None:
    validate_model(GENERATED[name](), name)


def _bias_axis_3(m: RawModel) -> None:  # person_detect's quirk: 1-D biases on axis 3
    m.tensors[B].axis = 3
    m.tensors[DW_B].axis = 3


def _bias_axis_past_rank(m: RawModel) -> None:
    m.tensors[B].axis = 7


def _shape_tensor_quantized(m: RawModel) -> None:  # per-channel arrays on an int32 shape
    m.tensors[SHAPE].scales = [1.0, 0.5, 0.25]
    m.tensors[SHAPE].zero_points = [0]
    m.tensors[SHAPE].axis = 2


def _bias_scale_count_differs(m: RawModel) -> None:  # no kernel reads a bias's scales
    m.tensors[FC_B].scales = [0.001] * 3
    m.tensors[FC_B].zero_points = [0] * 3


def _short_zero_points(m: RawModel) -> None:  # one zero point for four scales
    m.tensors[W].zero_points = [0]


def _empty_quantization_arrays(m: RawModel) -> None:  # a table with empty arrays
    for t in (B, DW_B, FC_B, SHAPE):
        m.tensors[t].scales = []
        m.tensors[t].zero_points = []


def _per_tensor_weights_any_axis(m: RawModel) -> None:  # one scale: the axis is unread
    m.tensors[FC_W].axis = 5


QUIRKS: dict[str, Callable[[RawModel], None]] = {
    f.__name__.strip("_"): f
    for f in (
        _bias_axis_3,
        _bias_axis_past_rank,
        _shape_tensor_quantized,
        _bias_scale_count_differs,
        _short_zero_points,
        _empty_quantization_arrays,
        _per_tensor_weights_any_axis,
    )
}


def quirky(*names: str) -> bytes:
    m = mbm.base()
    for name in names:
        QUIRKS[name](m)
    return m.to_bytes()


@pytest.mark.parametrize("name", sorted(QUIRKS))
def test_a_converter_quirk_tflm_runs_is_accepted(name: str) -> None:
    model = quirky(name)
    graph = read_model(model, name=name)
    outcome = run_reference(model, graph)  # TFLite Micro in a child: it runs the model
    assert outcome.status == "ok", outcome.reason


def test_a_model_with_every_quirk_compiles_to_tflms_bytes(tmp_path: Path) -> None:
    path = tmp_path / "quirks.tflite"
    path.write_bytes(quirky(*QUIRKS))
    argv = [str(path), "--board", "host", "--placer", "firstfit", "--no-cache", "--quiet"]
    assert compile_main([*argv, "-o", str(tmp_path / "out"), "--run"]) == 0


def test_tflms_person_detect_compiles_to_tflms_bytes(tmp_path: Path) -> None:
    """TFLite Micro's own example model (tensorflow/lite/micro/models/person_detect.tflite,
    not kept in this repository): set RIP_PERSON_DETECT to its path."""
    given = os.environ.get("RIP_PERSON_DETECT")
    if not given or not Path(given).is_file():
        pytest.skip("RIP_PERSON_DETECT does not name TFLite Micro's person_detect.tflite")
    argv = [given, "--board", "host", "--placer", "firstfit", "--no-cache", "--quiet"]
    assert compile_main([*argv, "-o", str(tmp_path / "out"), "--run"]) == 0
