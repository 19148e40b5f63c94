"""Code generation: kernel parameters from TFLite quantization, and Jinja2-emitted C."""
