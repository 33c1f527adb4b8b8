"""The compiled build of the profile math: the same floats as the pure module, and never a stale build."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import servotool.motion.otg as otg_mod
import servotool.motion.otg_profile as pure
from servotool.motion import compiled

BUILD = compiled.current_build()
needs_build = pytest.mark.skipif(BUILD is None, reason="this install has no current compiled build")

# the functions the generator calls through compiled.profile_module()
_CALLED = (
    "axis_constants",
    "duration_bound_axis",
    "follow",
    "plan_to_rest",
    "plan_warm",
    "stretch_to",
    "stretch_warm_axis",
    "warm_constants_axis",
)


def test_the_generator_calls_the_module_implementation_names():
    mod = compiled.profile_module()
    assert compiled.implementation() == ("python" if mod is pure else "compiled")
    for name in _CALLED:
        assert getattr(otg_mod, name) is getattr(mod, name)


def test_pure_python_is_chosen_when_the_environment_says_so():
    env = {**os.environ, compiled.PURE_ENV: "1"}
    code = "from servotool.motion import compiled; print(compiled.implementation())"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "python"


@needs_build
def test_a_build_of_other_source_is_not_used(tmp_path):
    edited = tmp_path / "otg_profile.py"
    edited.write_bytes(Path(pure.__file__).read_bytes() + b"\n# edited\n")
    assert compiled.current_build(edited) is None
    assert compiled.current_build() is BUILD


def test_a_missing_or_switched_off_build_is_none(monkeypatch):
    assert compiled.current_build(name="servotool.motion._no_such_build") is None
    monkeypatch.setenv(compiled.PURE_ENV, "1")
    assert compiled.current_build() is None


def test_a_broken_build_is_none(tmp_path, monkeypatch):
    """A build for another platform, or a damaged file, fails to load: the source runs."""
    import importlib.machinery

    pkg = tmp_path / "servotool_broken_build"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / f"mod{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(b"\x7fELF not a library")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert compiled.current_build(name="servotool_broken_build.mod") is None


def test_a_truncated_build_is_none(tmp_path):
    """A shared library cut short (an interrupted copy, a full disk) is not loaded: the loader would map
    pages past its end, and touching one kills the process (SIGBUS) where no exception can catch it."""
    import importlib.machinery

    lib = getattr(importlib.import_module("_decimal"), "__file__", None)
    if lib is None or not lib.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES)):
        pytest.skip("no shared library of the standard library to cut short")
    pkg = tmp_path / "servotool_cut_build"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    data = Path(lib).read_bytes()
    (pkg / f"m{importlib.machinery.EXTENSION_SUFFIXES[0]}").write_bytes(data[: len(data) // 10])
    code = "from servotool.motion import compiled as c; print(c.current_build(name='servotool_cut_build.m'))"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    env.pop(compiled.PURE_ENV, None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert (out.returncode, out.stdout.strip()) == (0, "None"), out.stderr[-2000:]


def _same(f, *args):
    """f of both modules on the same arguments: the same result (compared by repr, so NaN and -0.0 count)
    or the same exception type."""
    out = []
    for mod in (pure, BUILD):
        try:
            out.append(repr(getattr(mod, f)(*args)))
        except Exception as exc:  # the exception's type is the result compared
            out.append(type(exc).__name__)
    assert out[0] == out[1], f


_unit = st.floats(-1.0, 1.0, allow_nan=False)


@needs_build
@settings(max_examples=400, deadline=None, derandomize=True)
@given(
    lim=st.tuples(st.floats(0.2, 3.0), st.floats(0.5, 10.0), st.floats(5.0, 100.0)),
    state=st.tuples(_unit, _unit, st.floats(-3.0, 3.0, allow_nan=False)),
    stretch=st.floats(1.0, 3.0),
    dt=st.floats(1e-4, 0.05),
)
def test_compiled_functions_give_the_same_floats(lim, state, stretch, dt):
    vmax, amax, jmax = lim
    v0, a0, dx = state[0] * 1.05 * vmax, state[1] * 1.05 * amax, state[2]  # a few states beyond the limits
    k = pure.axis_constants(vmax, amax, jmax)
    _same("axis_constants", vmax, amax, jmax)
    _same("plan_to_rest", dx, v0, a0, vmax, amax, jmax)
    segs, duration, peak = pure.plan_to_rest(dx, v0, a0, vmax, amax, jmax)
    _same("follow", segs, dt, 0.0, v0, a0)
    _same("stretch_to", duration * stretch, dx, v0, a0, peak, duration, vmax, amax, jmax)
    c = pure.warm_constants_axis(v0, a0, k)
    _same("warm_constants_axis", v0, a0, k)
    if c is not None:
        _same("plan_warm", dx, v0, a0, c, vmax, amax, jmax, None)
        _same("duration_bound_axis", dx, c, k)
        _same("stretch_warm_axis", duration * stretch, dx, v0, a0, peak, c, k)


@needs_build
def test_a_seeded_stream_is_the_same_bit_for_bit(monkeypatch):
    from tests.motion.test_otg import _stream_outputs

    built = _stream_outputs()
    for name in _CALLED:
        monkeypatch.setattr(otg_mod, name, getattr(pure, name))
    assert built.tobytes() == _stream_outputs().tobytes()
    assert np.isfinite(built).all()


_FAST_MATH_PROBE = """
import numpy as np
import servotool.motion.otg as otg_mod
import servotool.motion.otg_profile as pure
from servotool.motion import compiled
from tests.motion.test_otg import _stream_outputs

tiny, half = 2.2250738585072014e-308, 0.5  # names, not literals: computed at run time, after the import
same = True
if compiled.implementation() == "compiled":
    built = _stream_outputs(cycles=400)
    for name in {names!r}:
        setattr(otg_mod, name, getattr(pure, name))
    same = built.tobytes() == _stream_outputs(cycles=400).tobytes()
print(tiny * half != 0.0, same)
"""


def _built_copy(tmp_path, cflags="", edit=b""):
    """A copy of the project in tmp_path, otg_profile.py ending in `edit`, built in place by setup.py with
    CFLAGS=`cflags`: the environment to run it with (the copy first on the path)."""
    pytest.importorskip("mypyc.build")
    pytest.importorskip("setuptools")  # not in a new venv from Python 3.12 on
    root = Path(__file__).resolve().parents[2]
    for name in ("setup.py", "pyproject.toml", "README.md"):
        (tmp_path / name).write_bytes((root / name).read_bytes())
    ignore = shutil.ignore_patterns("__pycache__", "*.so", "*.pyd")
    shutil.copytree(root / "servotool", tmp_path / "servotool", ignore=ignore)
    shutil.copytree(root / "tests", tmp_path / "tests", ignore=ignore)
    with (tmp_path / "servotool" / "motion" / "otg_profile.py").open("ab") as f:
        f.write(edit)
    env = {**os.environ, "CFLAGS": cflags, "PYTHONPATH": str(tmp_path)}
    env.pop(compiled.PURE_ENV, None)
    built = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    return env


@pytest.mark.slow
def test_a_build_with_fast_math_flags_never_runs_other_floats(tmp_path):
    """CFLAGS such as -ffast-math (or -Ofast) in the environment of the install make other floats, and
    GCC before 13 links a -shared library with them to crtfastmath.o, which flushes subnormal floats to
    zero in the whole process once loaded: such a build must not be the one that runs."""
    env = _built_copy(tmp_path, cflags="-O3 -ffast-math")
    code = _FAST_MATH_PROBE.format(names=_CALLED)
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.stdout.split() == ["True", "True"], out.stderr[-2000:]


@pytest.mark.slow
def test_a_source_mypyc_refuses_installs_pure(tmp_path):
    """A type error in otg_profile.py (an edit that still runs as Python) stops mypyc, not the install."""
    env = _built_copy(tmp_path, edit=b'\n\ndef _edited() -> int:\n    return "not an int"\n')
    assert not list((tmp_path / "servotool" / "motion").glob("_otg_profile_c*"))
    code = "from servotool.motion import compiled; print(compiled.implementation())"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "python", out.stderr[-2000:]


@pytest.mark.slow
def test_pure_python_at_install_outlasts_an_earlier_build_in_place(tmp_path):
    """An editable install puts the build beside the source; installing again with SERVOTOOL_PURE_PYTHON=1
    must leave the pure module running, not that earlier build."""
    env = _built_copy(tmp_path)
    code = "from servotool.motion import compiled; print(compiled.implementation())"
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "compiled", out.stderr[-2000:]
    pure_env = {**env, compiled.PURE_ENV: "1"}
    again = subprocess.run(
        [sys.executable, "setup.py", "build_ext", "--inplace"],
        cwd=tmp_path,
        env=pure_env,
        capture_output=True,
        text=True,
    )
    assert again.returncode == 0, again.stderr[-2000:]
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert out.stdout.strip() == "python", out.stderr[-2000:]


@pytest.mark.slow
def test_metadata_and_an_sdist_compile_nothing(tmp_path):
    """Only a build compiles: the metadata pip asks for first and an sdist (which ships otg_profile.py,
    compiled where it is installed) run no mypyc; a wheel asked to be pure Python is tagged as one."""
    env = _built_copy(tmp_path)
    shutil.rmtree(tmp_path / "build")
    for args in (["egg_info"], ["sdist", "-d", str(tmp_path / "dist")]):
        run = subprocess.run(
            [sys.executable, "setup.py", *args], cwd=tmp_path, env=env, capture_output=True, text=True
        )
        assert run.returncode == 0, run.stderr[-2000:]
        assert not (tmp_path / "build" / "servotool-compiled").exists(), args
    # the wheel's tag follows has_ext_modules (a pure wheel is py3-none-any)
    probe = (
        "from distutils.core import run_setup; "
        "print(run_setup('setup.py', ['egg_info'], stop_after='init').has_ext_modules())"
    )
    for pure_env, has in (("1", "False"), ("", "True")):
        dist = subprocess.run(
            [sys.executable, "-c", probe],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            env={**env, compiled.PURE_ENV: pure_env},
        )
        assert dist.stdout.strip().splitlines()[-1:] == [has], dist.stderr[-2000:]
