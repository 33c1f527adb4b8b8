"""Build of servotool: pure Python, plus one optional compiled module.

The jerk-limited generator re-plans every axis inside a control cycle, and its per-axis profile math
(servotool/motion/otg_profile.py, plain floats and tuples, fully typed) runs about three times faster
compiled by mypyc. The build compiles a copy of that file as servotool.motion._otg_profile_c, with the
SHA-256 of the source it was made from; servotool.motion.compiled uses it only while otg_profile.py beside
it has that digest, so a stale build never runs in place of edited source.

The compiled module is an optimisation, never a requirement: with SERVOTOOL_PURE_PYTHON=1 set, without
mypyc, or where the compiler fails, the install goes on with the pure module (the same floats, bit for bit:
floating-point contraction is turned off so that no compiler fuses a multiply and an add). A build that
is not the same floats after all (CFLAGS such as -ffast-math or -Ofast from the environment) is found by
comparing it with the source in a fresh interpreter, and dropped.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
SOURCE = Path("servotool/motion/otg_profile.py")
MODULE = "_otg_profile_c"
GEN_ROOT = Path("build/servotool-compiled")
LISTING_COMMANDS = {"egg_info", "dist_info", "sdist"}  # commands that build nothing


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


def _drop_builds_in_place() -> None:
    """Delete the compiled builds an earlier in-place (editable) install left beside the source: the pure
    module asked for at install must be the one that runs, not what an install before made."""
    for path in (HERE / SOURCE).parent.glob(f"{MODULE}*"):
        if path.name.endswith(tuple(EXTENSION_SUFFIXES)):
            print(f"servotool: removing the earlier build {path.name}", file=sys.stderr)
            path.unlink()


def _pure_asked() -> bool:
    return os.environ.get("SERVOTOOL_PURE_PYTHON", "") not in ("", "0")


def _ext_modules() -> list:
    if _pure_asked():
        return []
    try:
        from mypyc.build import mypycify
    except ImportError:
        print("servotool: mypyc not available, installing the pure-Python generator", file=sys.stderr)
        return []
    try:
        exts = mypycify([str(_generated_copy())], opt_level="3")
    except (Exception, SystemExit) as exc:  # a failed compile (mypyc exits on a type error) fails no install
        print(f"servotool: not compiling the generator ({exc})", file=sys.stderr)
        return []
    if sys.platform != "win32":  # MSVC's default /fp:precise does not contract
        for ext in exts:
            # The same floats as the pure module: no fused multiply-add where the target has one.
            ext.extra_compile_args = [*ext.extra_compile_args, "-ffp-contract=off"]
    return exts


# Run by a fresh interpreter on a finished build: exit 1 if loading it flushes subnormal floats to zero (a
# library linked with -ffast-math or -Ofast sets that for the whole process) or if it gives other floats
# than the source on seeded inputs; 2 if it does not load here at all (a build for another platform).
_CHECK = r"""
import importlib, importlib.util, random, sys, types
build_dir, source = sys.argv[1], sys.argv[2]
for name, path in (("servotool", []), ("servotool.motion", [build_dir])):
    sys.modules[name] = types.ModuleType(name)
    sys.modules[name].__path__ = path
spec = importlib.util.spec_from_file_location("servotool.motion.otg_profile", source)
pure = sys.modules[spec.name] = importlib.util.module_from_spec(spec)
spec.loader.exec_module(pure)
try:
    built = importlib.import_module("servotool.motion._otg_profile_c")
except ImportError:
    sys.exit(2)
tiny, half = 2.2250738585072014e-308, 0.5
if tiny * half == 0.0:
    sys.exit("it flushes subnormal floats to zero")
def same(f, *args):
    out = []
    for mod in (pure, built):
        try:
            out.append(repr(getattr(mod, f)(*args)))
        except Exception as exc:
            out.append(type(exc).__name__)
    if out[0] != out[1]:
        sys.exit(f"{f}{args!r} gives {out[1]}, the source {out[0]}")
rng = random.Random(1)
for _ in range(300):
    vmax, amax, jmax = rng.uniform(0.2, 3.0), rng.uniform(0.5, 10.0), rng.uniform(5.0, 100.0)
    v0, a0 = rng.uniform(-1.05, 1.05) * vmax, rng.uniform(-1.05, 1.05) * amax
    dx, stretch = rng.uniform(-3.0, 3.0), rng.uniform(1.0, 3.0)
    same("plan_to_rest", dx, v0, a0, vmax, amax, jmax)
    segs, duration, peak = pure.plan_to_rest(dx, v0, a0, vmax, amax, jmax)
    same("follow", segs, rng.uniform(1e-4, 0.05), 0.0, v0, a0)
    same("stretch_to", duration * stretch, dx, v0, a0, peak, duration, vmax, amax, jmax)
    k = pure.axis_constants(vmax, amax, jmax)
    c = pure.warm_constants_axis(v0, a0, k)
    if c is not None:
        same("plan_warm", dx, v0, a0, c, vmax, amax, jmax, None)
        same("duration_bound_axis", dx, c, k)
        same("stretch_warm_axis", duration * stretch, dx, v0, a0, peak, c, k)
for _ in range(200):  # far from the usual scales, where overflow and infinities come in
    lim = [rng.uniform(0.2, 3.0), rng.uniform(0.5, 10.0), rng.uniform(5.0, 100.0)]
    lim[rng.randrange(3)] *= 10.0 ** rng.choice((-300, -200, -12, 12, 200, 300))
    dx = rng.uniform(-3.0, 3.0) * 10.0 ** rng.choice((0, -300, 300))
    same("plan_to_rest", dx, rng.uniform(-1.0, 1.0) * lim[0], rng.uniform(-1.0, 1.0) * lim[1], *lim)
"""


class OptionalBuildExt(build_ext):
    """build_ext that leaves the pure-Python module in place when the C compiler fails, or when what it
    built is not the same floats as the source (compiler flags such as -ffast-math in CFLAGS)."""

    def finalize_options(self) -> None:
        # mypyc runs here, when an extension is to be built: not on every run of this file, nor where the
        # metadata or an sdist only list the sources (pip asks for the metadata first; an sdist ships
        # otg_profile.py, compiled where it is installed)
        if self.distribution.ext_modules is None:
            listing = set(self.distribution.commands) <= LISTING_COMMANDS
            self.distribution.ext_modules = [] if listing else _ext_modules()
        super().finalize_options()

    def run(self) -> None:
        try:
            super().run()
        except Exception as exc:
            print(f"servotool: compiled generator not built ({exc}); using pure Python", file=sys.stderr)
            return
        self._drop_unless_same_floats()

    def _drop_unless_same_floats(self) -> None:
        built = [Path(self.get_ext_fullpath(ext.name)) for ext in self.extensions]
        module = Path(self.get_ext_fullpath(f"servotool.motion.{MODULE}"))
        if not module.exists():
            return
        check = [sys.executable, "-c", _CHECK, str(module.parent), str(HERE / SOURCE)]
        try:  # 0.1 s; a build that never answers is no build to keep, nor a reason to hang the install
            proc = subprocess.run(check, capture_output=True, text=True, timeout=300)
            code, err = proc.returncode, proc.stderr
        except subprocess.TimeoutExpired:
            code, err = -1, "its check did not end in 300 s"
        if code in (0, 2):  # the same floats, or a build that cannot be tried here
            return
        why = err.strip().splitlines()[-1:] or [f"exit status {code}"]
        print(f"servotool: compiled generator dropped ({why[0][:300]}); using pure Python", file=sys.stderr)
        for path in built:
            path.unlink(missing_ok=True)

    def build_extension(self, ext) -> None:  # type: ignore[no-untyped-def]
        try:
            super().build_extension(ext)
        except Exception as exc:
            print(f"servotool: {ext.name} not built ({exc}); using pure Python", file=sys.stderr)


class MaybeCompiled(Distribution):
    """Has an extension module to build unless SERVOTOOL_PURE_PYTHON is set: the build runs build_ext (which
    makes the module, or falls back), and a wheel asked to be pure Python is tagged as such."""

    def has_ext_modules(self) -> bool:
        return not _pure_asked()


if _pure_asked():  # whatever command runs (an editable install of pure Python builds no extension)
    _drop_builds_in_place()
setup(distclass=MaybeCompiled, cmdclass={"build_ext": OptionalBuildExt})
