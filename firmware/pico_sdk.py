"""What rip needs to know about the user's Pico SDK before it configures anything: where it
is (``PICO_SDK_PATH``), which version, and whether its TinyUSB is there.

USB serial (``pico_enable_stdio_usb``) needs TinyUSB, a submodule of the SDK
(``lib/tinyusb``). A plain ``git clone`` of the SDK leaves it empty, and the SDK then
builds every project without USB with no more than a CMake warning: the firmware would
talk on UART0 only and a board on a USB cable would look dead. :func:`find_tinyusb` looks
where the SDK looks (``src/rp2_common/tinyusb/CMakeLists.txt``: ``PICO_TINYUSB_PATH`` on
the cmake command line, then in the environment, then ``lib/tinyusb``; present when it has
``hw/bsp/rp2040``), so rip knows before configuring and can say so in one line.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from rip.core.errors import PicoSdkMissing

SDK_HINT = (
    "git clone https://github.com/raspberrypi/pico-sdk && "
    "(cd pico-sdk && git submodule update --init) && export PICO_SDK_PATH=$PWD/pico-sdk"
)
# The folder the SDK tests for (TINYUSB_TEST_PATH): the same on the RP2040 and the RP2350.
TINYUSB_TEST_PATH = "hw/bsp/rp2040"


def sdk_path(environ: dict[str, str] | None = None) -> Path:
    """The SDK folder ``PICO_SDK_PATH`` names, resolved; a PicoSdkMissing (exit 5) saying
    how to get one when it is unset or not an SDK."""
    raw = (os.environ if environ is None else environ).get("PICO_SDK_PATH", "").strip()
    if not raw:
        raise PicoSdkMissing(f"--build needs the Pico SDK: PICO_SDK_PATH is not set ({SDK_HINT})")
    sdk = Path(raw).expanduser()
    if not (sdk / "pico_sdk_init.cmake").is_file():
        raise PicoSdkMissing(
            f"PICO_SDK_PATH={raw} has no pico_sdk_init.cmake: point it at the top folder "
            "of the Pico SDK"
        )
    return sdk.resolve()


def sdk_version(sdk: Path) -> str:
    """``MAJOR.MINOR.REVISION`` from the SDK's ``pico_sdk_version.cmake``, or "unknown"."""
    try:
        text = (sdk / "pico_sdk_version.cmake").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "unknown"
    parts = [re.search(rf"set\(PICO_SDK_VERSION_{k}\s+(\w+)\)", text) for k in
             ("MAJOR", "MINOR", "REVISION")]  # fmt: skip
    return ".".join(m[1] for m in parts if m) if all(parts) else "unknown"


@dataclass(frozen=True)
class TinyUsb:
    """Where the SDK will look for TinyUSB, who said so, and whether it is there."""

    path: Path
    origin: str  # "the SDK's lib/tinyusb", "-DPICO_TINYUSB_PATH" or "$PICO_TINYUSB_PATH"
    present: bool
    sdk: Path

    @property
    def problem(self) -> str:
        """Why the build would have no USB serial (empty when it would have it)."""
        if self.present:
            return ""
        if self.origin == "the SDK's lib/tinyusb":
            return (
                f"the Pico SDK at {self.sdk} has no TinyUSB (its lib/tinyusb submodule is not "
                "initialised)"
            )
        return f"TinyUSB is not at {self.path} ({self.origin}: no {TINYUSB_TEST_PATH} in it)"

    @property
    def fix(self) -> str:
        """The command that makes TinyUSB available."""
        if self.origin == "the SDK's lib/tinyusb":
            return f"run git submodule update --init lib/tinyusb in {self.sdk}"
        return f"point {self.origin.lstrip('-D$')} at a TinyUSB checkout"


def find_tinyusb(
    sdk: Path, defines: dict[str, str], environ: dict[str, str] | None = None
) -> TinyUsb:
    """TinyUSB as the SDK will find it: ``defines`` are the ``-D`` cache entries the
    configure gets (``--cmake-arg``), ``environ`` the build's environment."""
    env = os.environ if environ is None else environ
    if defines.get("PICO_TINYUSB_PATH"):
        path, origin = Path(defines["PICO_TINYUSB_PATH"]), "-DPICO_TINYUSB_PATH"
    elif env.get("PICO_TINYUSB_PATH"):
        path, origin = Path(env["PICO_TINYUSB_PATH"]), "$PICO_TINYUSB_PATH"
    else:
        path, origin = sdk / "lib" / "tinyusb", "the SDK's lib/tinyusb"
    path = path.expanduser()
    return TinyUsb(path, origin, (path / TINYUSB_TEST_PATH).is_dir(), sdk)
