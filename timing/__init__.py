"""The Pico timing model: an emulated run of a firmware turned into estimated cycles on the
real chip (RP2040 or RP2350) executing in place from QSPI flash.

``plugin/pico_timing.c`` is a QEMU TCG plugin (built on first use with the host's C
compiler, ``plugin.py``) that charges every executed instruction the cycles its core's
reference manual gives and passes every flash fetch and data read through a model of the
chip's XIP cache; ``model.py`` turns a board file's timing fields into its arguments,
``estimate.py`` runs a firmware under it and reads what it measured. docs/pico-timing.md
has every figure and its source."""
