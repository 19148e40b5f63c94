"""rip: Right In-Place convolution compiler for int8 TFLite models on microcontrollers."""

__version__ = "0.1.0"
