"""User-facing errors: each becomes one line and a non-zero exit code at the CLI edge."""


class RipError(Exception):
    """A problem with the user's input; the message names the field, file or operator."""

    exit_code = 2


class LayerError(RipError):
    """A layer description that no bound or simulator can accept."""


class ModelError(RipError):
    """A model file rip cannot read or does not support (bad file, unsupported operator or
    data type); the message starts with the file name."""
