"""The scratch each C kernel needs outside the arena: one formula, written once.

Each kernel with a scratch need has a ``..._get_buffer_size()`` twin in C (kernels/*.h);
`scratch_bytes` is the Python side of the same formulas, called by the planner
(allocator.planning.requirements, to reserve it) and by the code generator (codegen, to
size ``rip_scratch`` and check the plan). `BUFFER_SIZE_FUNCTION` names the C twin of each
op kind; a test calls every twin and compares. Dims are (n, h, w, c), as ``rip_dims``.
"""

from __future__ import annotations

Dims = tuple[int, int, int, int]

# op kind -> the C function whose formula scratch_bytes mirrors for it
BUFFER_SIZE_FUNCTION: dict[str, str] = {
    "CONV_2D": "rip_conv2d_fast_s8_get_buffer_size",
    "DEPTHWISE_CONV_2D": "rip_depthwise_conv2d_inplace_s8_get_buffer_size",
    "AVERAGE_POOL_2D": "rip_avg_pool_s8_get_buffer_size",
    "MAX_POOL_2D": "rip_max_pool_s8_get_buffer_size",
    "GLOBAL_AVERAGE_POOL": "rip_global_avg_pool_s8_get_buffer_size",
    "MEAN": "rip_global_avg_pool_s8_get_buffer_size",  # a MEAN over H and W runs that kernel
}


def scratch_bytes(kind: str, input_dims: Dims, filter_dims: Dims, output_dims: Dims) -> int:
    """Bytes of scratch the kernel running an op of ``kind`` needs (0 for a kind not in
    `BUFFER_SIZE_FUNCTION`):

    - CONV_2D, ``rip_conv2d_fast_s8_get_buffer_size``: two gathered receptive fields,
      2 * KH * KW * C_in (sigma = 0, Eq. 6, for the pixel pair the generated kernel
      rip_conv2d_fast_s8 gathers before writing; the reference rip_conv2d_s8 needs half);
    - DEPTHWISE_CONV_2D, ``rip_depthwise_conv2d_inplace_s8_get_buffer_size``: one output
      channel plane, H_out * W_out (the channel in-place kernel; out of place uses none, but
      the planner reserves it whichever runs). It is the minimum: the fast in-place kernel
      on DSP cores runs groups of 4k channels when the model's scratch buffer (the maximum
      of this formula over its ops) holds 4k planes, without asking for more;
    - AVERAGE_POOL_2D, MAX_POOL_2D, GLOBAL_AVERAGE_POOL (and MEAN over H and W),
      ``rip_{avg,max,global_avg}_pool_s8_get_buffer_size``: one pixel's int32 accumulators,
      4 * C.

    ``input_dims`` is unused by these formulas, as in C; it keeps CMSIS-NN's signature."""
    del input_dims
    if kind == "CONV_2D":
        return 2 * filter_dims[1] * filter_dims[2] * filter_dims[3]
    if kind == "DEPTHWISE_CONV_2D":
        return output_dims[1] * output_dims[2]
    if kind in BUFFER_SIZE_FUNCTION:
        return 4 * output_dims[3]
    return 0
