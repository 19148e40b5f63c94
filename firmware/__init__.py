"""Firmware side: the result line every board prints, Pico SDK projects, UF2, flashing
and serial verification."""
