"""Section 2, a layer study in the spirit of the paper's Table 6: every distinct CONV_2D
geometry of the shared models, per family, RiP (Theorem 4, padded, taps from the workspace,
row order) against the generalized herringbone bound (Theorem 11, same layout and taps),
and against dual buffering (padded input + output). Closed forms only; the sweep of
section 1 is what checks them against the simulator."""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

from rip.allocator.planning.requirements import conv_geometry
from rip.allocator.theory.bounds import rip_bound
from rip.allocator.theory.geometry import ConvGeometry
from rip.allocator.theory.herringbone import herringbone_bound
from rip.compiler import front
from rip.core.errors import RipError
from rip.core.operators import Op

from .common import MCUNET, MODELS, one_line

WITHIN = 1.05
# File stem prefix -> family, first match wins (the keras graphs by architecture).
FAMILIES = (
    ("mcunet-", "MCUNet"),
    ("mbv2-", "MCUNet"),
    ("proxyless-", "MCUNet"),
    ("person-det", "MCUNet"),
    ("mlperf-", "MLPerf Tiny"),
    ("armzoo-", "Arm ML-Zoo"),
    ("tflm-", "TFLite Micro examples"),
    ("ResNet", "ResNet"),
    ("DenseNet", "DenseNet"),
    ("EfficientNetV2", "EfficientNetV2"),
    ("EfficientNet", "EfficientNet"),
    ("MobileNet", "MobileNet"),
    ("VGG", "VGG"),
    ("Inception", "Inception"),
    ("Xception", "Xception"),
)


def family(stem: str) -> str:
    return next((fam for prefix, fam in FAMILIES if stem.startswith(prefix)), "other")


def model_files(quick: bool) -> list[Path]:
    """The shared models, each graph once (the keras graphs' weighted twins skipped)."""
    if quick:
        return [MODELS / "mcunet" / f"{m}.tflite" for m in MCUNET]
    files = sorted((MODELS / "mcunet").glob("*.tflite")) + sorted(
        (MODELS / "tinyml").glob("*.tflite")
    )
    return files + sorted((MODELS / "keras").glob("*.graph.tflite"))


def layer(g: ConvGeometry) -> dict[str, Any]:
    """One layer's workspaces (scalars) and ratios."""
    row = rip_bound(g, "padded", "workspace", "row").workspace
    col = rip_bound(g, "padded", "workspace", "col").workspace
    hb = herringbone_bound(g).workspace
    dual = g.n_in_padded + g.n_out
    return {"rip": row, "col": col, "herringbone": hb, "dual": dual}


def collect(quick: bool) -> dict[str, Any]:
    per_family: dict[str, dict[tuple, dict]] = {}
    models: dict[str, list[str]] = {}
    refused = {}
    for path in model_files(quick):
        stem = path.name.split(".")[0]
        try:
            _, graph = front(path)
        except RipError as e:
            refused[stem] = one_line(e, path)
            continue
        fam = family(stem)
        models.setdefault(fam, []).append(stem)
        seen = per_family.setdefault(fam, {})
        for op in graph.operators:
            if op.kind != Op.CONV_2D:
                continue
            g = conv_geometry(graph, op)
            key = tuple(sorted(vars(g).items()))
            if key not in seen:
                seen[key] = layer(g)
    families = []
    for fam, layers in per_family.items():
        ls = list(layers.values())
        if not ls:
            continue
        ratios = [x["rip"] / x["herringbone"] for x in ls]
        savings = [100.0 * (1 - x["rip"] / x["dual"]) for x in ls]
        families.append(
            {
                "family": fam,
                "models": len(models[fam]),
                "layers": len(ls),
                "equal": sum(x["rip"] == x["herringbone"] for x in ls),
                "within_5pct": sum(r <= WITHIN for r in ratios),
                "worst_ratio": round(max(ratios), 3),
                "mean_saving_pct": round(statistics.fmean(savings), 1),
                "col_beats_row": sum(x["col"] < x["rip"] for x in ls),
            }
        )
    all_layers = [x for layers in per_family.values() for x in layers.values()]
    total = None
    if all_layers:
        ratios = [x["rip"] / x["herringbone"] for x in all_layers]
        savings = [100.0 * (1 - x["rip"] / x["dual"]) for x in all_layers]
        total = {
            "families": len(families),
            "models": sum(len(v) for v in models.values()),
            "layers": len(all_layers),
            "equal": sum(x["rip"] == x["herringbone"] for x in all_layers),
            "within_5pct": sum(r <= WITHIN for r in ratios),
            "worst_ratio": round(max(ratios), 3),
            "mean_saving_pct": round(statistics.fmean(savings), 1),
            "median_saving_pct": round(statistics.median(savings), 1),
            "col_beats_row": sum(x["col"] < x["rip"] for x in all_layers),
        }
    return {"families": families, "total": total, "refused": refused}
