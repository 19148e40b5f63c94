"""Firmware side: the result line every board prints, and (later) Pico projects and UF2."""
