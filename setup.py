"""Build of servotool: pure Python, plus one optional compiled module.

The jerk-limited generator re-plans every axis inside a control cycle, and its per-axis profile math
(servotool/motion/otg_profile.py, plain floats and tuples, fully typed) runs about three times faster
compiled by mypyc. The build compiles a copy of that file as servotool.motion._otg_profile_c, with the
SHA-256 of the source it was made from; servotool.motion.compiled uses it only while otg_profile.py beside
it has that digest, so a stale build never runs in place of edited source.

The compiled module is an optimisation, never a requirement: with SERVOTOOL_PURE_PYTHON=1 set, without
mypyc, or where the compiler fails, the install goes on with the pure module (the same floats, bit for bit:
floating-point contraction is turned off so that no compiler fuses a multiply and an add).
"""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCE = Path("servotool/motion/otg_profile.py")
MODULE = "_otg_profile_c"
GEN_ROOT = Path("build/servotool-compiled")


def _generated_copy() -> Path:
    """The source file copied under the compiled module's name, with the digest of the source appended."""
    text = (HERE / SOURCE).read_bytes()
    digest = hashlib.sha256(text).hexdigest()
    pkg = GEN_ROOT / "servotool" / "motion"
    pkg.mkdir(parents=True, exist_ok=True)
    for init in (GEN_ROOT / "servotool" / "__init__.py", pkg / "__init__.py"):
        init.write_text("")
    out = pkg / f"{MODULE}.py"
    out.write_bytes(text + f'\n\nSOURCE_SHA256 = "{digest}"\n'.encode())
    return out


def _ext_modules() -> list:
    if os.environ.get("SERVOTOOL_PURE_PYTHON", "") not in ("", "0"):
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("servotool: mypyc not available, installing the pure-Python generator", file=sys.stderr)
        return []
    try:
        exts = mypycify([str(_generated_copy())], opt_level="3")
    except Exception as exc:  # a failed compile must not fail the install
        print(f"servotool: not compiling the generator ({exc})", file=sys.stderr)
        return []
    if sys.platform != "win32":  # MSVC's default /fp:precise does not contract
        for ext in exts:
            # The same floats as the pure module: no fused multiply-add where the target has one.
            ext.extra_compile_args = [*ext.extra_compile_args, "-ffp-contract=off"]
    return exts


class OptionalBuildExt(build_ext):
    """build_ext that leaves the pure-Python module in place when the C compiler fails."""

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            print(f"servotool: compiled generator not built ({exc}); using pure Python", file=sys.stderr)

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"servotool: {ext.name} not built ({exc}); using pure Python", file=sys.stderr)


setup(ext_modules=_ext_modules(), cmdclass={"build_ext": OptionalBuildExt})
