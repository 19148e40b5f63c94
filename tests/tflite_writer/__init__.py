"""The test suite's TFLite writer: `builder` (the flatbuffer builder, ModelBuilder) and
`generators` (calibrated random single-layer models and the bundled example). Test
machinery only: it is not part of the wheel."""

from tflite_writer.builder import *  # noqa: F403
from tflite_writer.builder import (  # noqa: F401  (private helpers some tests poke at)
    _OP_VERSION,
    _TENSOR_TYPE,
    _data_buffer,
    _int32_vector,
    _operator_code,
    _options,
    _pair,
    _table_vector,
)
from tflite_writer.generators import *  # noqa: F403
