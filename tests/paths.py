"""Where the checkout and the shared reference data are, for tests that need them at
collection time (parametrize lists cannot use fixtures); everything else uses the fixtures
of conftest.py."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"

# The paper's models among the shared files: Table 3's eleven MCUNet models and Table 7's
# keras graphs. The results page lists the same (benchmarks/results/common.py; no test
# imports a benchmark, and benchmarks/tests/test_model_lists.py keeps the two equal).
MCUNET = (
    "mcunet-in0",
    "mcunet-in1",
    "mcunet-in2",
    "mcunet-in3",
    "mcunet-in4",
    "mbv2-w0.35",
    "proxyless-w0.3",
    "mcunet-vww0",
    "mcunet-vww1",
    "mcunet-vww2",
    "person-det",
)  # Table 3's order
# The paper's row name -> file stem under shared/models/keras (Table 7's order).
KERAS_FILES = {
    "MobileNet": "MobileNet",
    "MobileNetV2": "MobileNetV2",
    "MobileNetV3-S": "MobileNetV3Small",
    "MobileNetV3-L": "MobileNetV3Large",
    "VGG-16": "VGG16",
    "VGG-19": "VGG19",
    "ResNet-50": "ResNet50",
    "ResNet-50v2": "ResNet50V2",
    "ResNet-101": "ResNet101",
    "ResNet-101v2": "ResNet101V2",
    "ResNet-152": "ResNet152",
    "ResNet-152v2": "ResNet152V2",
    "DenseNet-121": "DenseNet121",
    "DenseNet-169": "DenseNet169",
    "DenseNet-201": "DenseNet201",
    "Inception-v3": "InceptionV3",
    "InceptionResNetV2": "InceptionResNetV2",
    "Xception": "Xception",
    **{f"EfficientNet-B{i}": f"EfficientNetB{i}" for i in range(8)},
    **{f"EffNetV2-B{i}": f"EfficientNetV2B{i}" for i in range(4)},
    "EffNetV2-S": "EfficientNetV2S",
    "EffNetV2-M": "EfficientNetV2M",
    "EffNetV2-L": "EfficientNetV2L",
}

__all__ = ["KERAS_FILES", "MCUNET", "REPO", "SHARED", "picotool", "shared_path"]


def shared_path(*parts: str) -> Path:
    """A file under ../shared, or skip the test saying what is missing."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (CI keeps ../shared beside the checkout)")
    return path


def picotool() -> str | None:
    """Raspberry Pi's picotool: $RIP_PICOTOOL (``.ci/run`` builds it from
    ../shared/pico/picotool, off PATH so that Pico SDK builds stay as a user's without it),
    else one on PATH; None without either."""
    built = os.environ.get("RIP_PICOTOOL")
    if built and Path(built).is_file():
        return built
    return shutil.which("picotool")
