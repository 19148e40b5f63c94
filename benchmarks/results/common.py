"""What the section collectors share: paths, the reference files, exact ratios, timing."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
MODELS = SHARED / "models"
PAPER = SHARED / "reference" / "paper-tables.json"
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
MAX_DENOMINATOR = 64  # a ratio prints as a fraction when it is one with a small denominator


def paper_tables() -> dict:
    return json.loads(PAPER.read_text())


def exact_ratio(num: int | None, den: int | None) -> dict[str, Any]:
    """``num / den`` as a decimal, and as ``"p/q"`` when it is exactly a fraction with a
    denominator of at most MAX_DENOMINATOR (the paper's Table 3 reductions are)."""
    if num is None or not den:
        return {"fraction": None, "decimal": None}
    fr = Fraction(num, den)
    text = f"{fr.numerator}/{fr.denominator}" if fr.denominator <= MAX_DENOMINATOR else None
    if fr.denominator == 1:
        text = str(fr.numerator)
    return {"fraction": text, "decimal": round(num / den, 5)}


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, round(time.perf_counter() - t0, 1)


def one_line(error: Exception, path: Path) -> str:
    """An error's first line, the model named by its file name rather than this
    machine's path."""
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text.replace(str(path), path.name).replace(str(path.resolve()), path.name)
