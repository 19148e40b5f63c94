"""TFLite Micro's arena as the memory oracle (issue 25): ``reference.arena_use`` reads the
recording allocator's figures, and the default plan is compared with them."""

from __future__ import annotations

import pytest
from tflite_writer import (
    example_model,
    random_conv_model,
)

from rip.codegen.reference import arena_use
from rip.core.errors import ReferenceRunError
from rip.frontend.liveness import live_bytes
from rip.frontend.reader import read_model


def test_the_arena_head_holds_at_least_the_largest_live_set(tmp_path):
    """TFLite Micro's planned part of the arena can be no smaller than the bytes of the
    tensors alive together at one step (our liveness, a bound any planner must meet
    without in-place reuse), and it has a persistent tail."""
    for name, data in (("example", example_model(0)), ("conv", random_conv_model(1))):
        path = tmp_path / f"{name}.tflite"
        path.write_bytes(data)
        use = arena_use(path)
        assert use.head >= max(live_bytes(read_model(path)))
        assert use.tail > 0 and use.total == use.head + use.tail


def test_a_model_tflite_micro_cannot_load_is_a_reference_error():
    with pytest.raises(ReferenceRunError, match="cannot load"):
        arena_use(b"not a flatbuffer at all")
