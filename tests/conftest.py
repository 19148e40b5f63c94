"""Shared fixtures: where the shared reference data lives, and skips when it is absent; and
the one list of slow tests, which ``make test-fast`` (``pytest -m "not slow"``) leaves out."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
from cbuild import HOST_INIT, kernel_lib, kernel_objs  # noqa: F401  (the C build fixtures)
from paths import REPO, shared_path

# Every generated host project the tests build fills uninitialised locals with a pattern
# (cbuild.PATTERN_INIT): its Makefile adds EXTRA_CFLAGS to its defaults.
if HOST_INIT:
    os.environ.setdefault("EXTRA_CFLAGS", " ".join(HOST_INIT))
# Every generated project carries the same kernels: their objects are compiled once per
# source, flags and compiler (rip.firmware.object_cache), not once per project.
os.environ.setdefault("CC_LAUNCHER", f"{sys.executable} -m rip.firmware.object_cache")
os.environ.setdefault("RIP_OBJECT_CACHE", str(REPO / "build" / "object-cache"))

# The slow tier, in one place: whole modules, and single tests (by function name) of
# modules that are otherwise fast. Slow is a QEMU run, a build for the Pico cores (the Pico
# SDK, or arm-none-eabi-gcc over the kernels or a project), a whole-model compile of the
# shared models, or a model compiled whole (planned, emitted, built) and run on the host.
SLOW_MODULES = {
    "test_codegen_host.py": "every shared model compiled and run on the host, every strategy",
    "test_qemu_boards.py": "shared models on the emulated cores (QEMU)",
    "test_fused.py": "fused chains built and run on the host and under QEMU",
    "test_interrupt.py": "real solves stopped by signals and time limits",
    "test_models_memory.py": "the MILP over the shared models (Tables 3 and 7)",
    "test_packaging.py": "a wheel built with pip and installed elsewhere",
    "test_emulate.py": "Pico SDK firmware built and run on rp2040js",
    "test_pico_build.py": "Pico SDK configures and builds (with and without TinyUSB)",
    "test_pico_example.py": "the example application built with the Pico SDK, run on rp2040js",
    "test_timing.py": "firmware run under QEMU's timing plugin",
    "test_two_core_qemu.py": "two-core firmware on QEMU's mps2-an521 under a plugin",
}
SLOW_TESTS = {
    "test_placement.py": ("test_a_long_solve_cannot_block_on_its_own_output",),  # a 20 s solve
    "test_firmware.py": (
        "test_project_compiles_and_links_for_the_core",  # arm-none-eabi-gcc, whole project
        "test_build_with_the_pico_sdk",
        "test_main_on_qemu_prints_the_host_checksum_every_time",
        "test_shared_model_firmware_compiles_for_both_cores",
        "test_kernels_compile_at_every_pico_sdk_optimisation",
    ),
    "test_kernels_spatial.py": (
        "test_kernels_on_the_cores_under_qemu",
        "test_cross_compiles_for_the_picos",
    ),
    "test_kernels_elementwise.py": ("test_kernels_compile_for_the_pico",),
    "test_lower_spatial.py": ("test_emitted_c_cross_compiles_for_the_picos",),
    "test_lower_ops.py": ("test_chains_on_qemu_m33", "test_chain_model_matches_tflite_micro"),
    "test_lower_movement.py": (  # generated models compiled whole and run on the host
        "test_sample_model_under_every_strategy",
        "test_split_views_live_through_the_plan",
        "test_views_as_graph_outputs",
        "test_an_op_reading_a_tensor_and_a_view_of_it_runs_out_of_place",
        "test_resize_nearest_any_ratio_in_place_when_simulated",
        "test_space_to_batch_around_conv_folds_into_dilation",
    ),
    "test_output_dir.py": ("test_a_failed_run_leaves_the_previous_project_exactly_as_it_was",),
    "test_simulate_depthwise_rows.py": ("test_every_depthwise_layer_of_the_model",),
    "test_api.py": ("test_emit_runs_on_the_host_and_matches_the_reference",),
    "test_grouped_conv.py": ("test_compiled_model_matches_tflm", "test_grouped_model_on_qemu_m33"),
    "test_batch_matmul.py": (
        "test_attention_block_matches_tflm",
        "test_attention_block_on_qemu_m33",
    ),
    "test_rsqrt.py": (
        "test_compiled_model_with_rsqrt_matches_tflm",
        "test_rsqrt_model_on_qemu_m33",
    ),
    "test_uint8_interface.py": ("test_uint8_model_matches_tflm", "test_uint8_model_on_qemu_m33"),
    "test_constant_fold.py": ("test_folded_model_matches_tflm",),
    "test_svdf.py": (  # models compiled whole and streamed on the host
        "test_svdf_streams_byte_equal_to_tflite_micro",
        "test_quantize_between_int8_int16_int32",
        "test_softmax_into_int16",
        "test_keyword_scrambled_streams_as_tflite_micro",
    ),
    "test_resource_variables.py": (
        "test_streaming_state_byte_equal_to_tflite_micro",
        "test_streaming_model_on_qemu_m33",
    ),
    "test_wide.py": (
        "test_fully_connected_16x8_byte_equal_to_tflite_micro",
        "test_convolutions_16x8_byte_equal_to_tflite_micro",
        "test_ds_cnn_16x8_streams_as_tflite_micro",
        "test_ds_cnn_16x8_on_qemu_m33",
        "test_dense_16x8_on_the_cores",
        "test_binary_16x8_byte_equal_to_tflite_micro",
        "test_logistic_tanh_16x8_byte_equal_to_tflite_micro",
        "test_logistic_16x8_exhaustive",
        "test_models_16x8_stream_as_tflite_micro",
        "test_unrolled_lstm_int8_streams_as_tflite_micro",
        "test_models_16x8_on_qemu_m33",
        "test_movement_16x8_byte_equal_to_tflite_micro",
        "test_softmax_16x8_byte_equal_to_tflite_micro",
        "test_softmax_16x8_tables_over_every_difference",
        "test_reductions_16x8_byte_equal_to_tflite_micro",
        "test_pad_16x8_byte_equal_to_tflite_micro",
        "test_resize_nearest_16x8_byte_equal_to_tflite_micro",
        "test_relu_16x8_byte_equal_to_tflite_micro",
        "test_deep_sums_16x8_byte_equal_to_tflite_micro",
        "test_a_strided_slice_of_a_unit_led_int16_tensor",
    ),
    "test_lstm.py": (  # LSTM models compiled whole and streamed on the host, and on QEMU
        "test_lstm_streams_byte_equal_to_tflite_micro",
        "test_the_state_moves_and_resets",
        "test_lstm_on_qemu_m33",
    ),
    "test_float_islands.py": (
        "test_float_islands_byte_equal_to_tflite_micro",
        "test_float_island_on_the_cores",
    ),
    "test_refusals.py": ("test_an_unrolled_model_with_tanh_compiles_and_matches",),
    "test_tflm_arena.py": (
        "test_no_shared_model_needs_more_than_tflite_micros_arena",
        "test_adversarial_placements_need_no_more_than_tflite_micros_arena",  # solver limit
        "test_an_unrolled_gru_keeps_its_split_pieces_as_copies_and_matches",
    ),
    "test_staging.py": ("test_staged_firmware_on_qemu_gives_tflite_micros_checksum",),
    "test_residency.py": (
        "test_bound_covers_every_ops_emitted_data",  # shared models planned and compiled
        "test_resident_firmware_reads_sram_and_gives_tflite_micros_checksum",  # QEMU
    ),
}


def _check_slow_lists() -> None:
    """Every name above exists, so a renamed test cannot drop into the fast tier unseen."""
    tests = Path(__file__).parent
    for module in [*SLOW_MODULES, *SLOW_TESTS]:
        if not (tests / module).is_file():
            raise pytest.UsageError(f"tests/conftest.py names {module}, which does not exist")
    for module, names in SLOW_TESTS.items():
        text = (tests / module).read_text(encoding="utf-8")
        for name in names:
            if not re.search(rf"^def {name}\(", text, re.MULTILINE):
                raise pytest.UsageError(f"tests/conftest.py names {module}::{name}, not there")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "slow: QEMU, Pico builds, whole-model compiles (make test-fast skips them)"
    )
    _check_slow_lists()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        module = item.path.name
        name = getattr(item, "originalname", item.name)
        if module in SLOW_MODULES or name in SLOW_TESTS.get(module, ()):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def repo() -> Path:
    """The checkout's root (the `rip` package)."""
    return REPO


@pytest.fixture(scope="session")
def paper_tables() -> dict:
    return json.loads(shared_path("reference", "paper-tables.json").read_text())


@pytest.fixture(autouse=True, scope="session")
def _plan_cache_in_tmp(tmp_path_factory: pytest.TempPathFactory):
    """The CLI's plan cache goes to a temporary directory, never the user's ~/.cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("RIP_CACHE_DIR", str(tmp_path_factory.mktemp("rip-cache")))
    yield
    mp.undo()
