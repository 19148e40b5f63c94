"""Rewrite examples/example-cnn.tflite with the test suite's TFLite writer (seed 0).

The writer is test machinery and does not ship in the wheel, so this script puts
``tests/`` on the path: run it from a checkout, ``python examples/regenerate.py``.
"""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from tflite_writer import example_model  # noqa: E402

if __name__ == "__main__":
    out = ROOT / "examples" / "example-cnn.tflite"
    out.write_bytes(example_model(0))
    print(f"wrote {out}")
