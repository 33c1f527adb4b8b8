"""Argument checks shared by the motion modules: a bad number is refused with its name, never let through."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt


def finite(value: object, name: str) -> float:
    """`value` as a float; ValueError naming `name` when it is not a finite number (str and bool refused)."""
    if isinstance(value, (str, bytes, bool)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError, OverflowError):  # OverflowError: an int beyond any float
        raise ValueError(f"{name} must be a finite number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {value!r}")
    return x


def positive(value: object, name: str) -> float:
    """`value` as a float; ValueError naming `name` unless it is finite and > 0."""
    x = finite(value, name)
    if x <= 0:
        raise ValueError(f"{name} must be finite and > 0, got {value!r}")
    return x


def within(value: object, name: str, bound: float) -> float:
    """`value` as a float; ValueError naming `name` unless it is finite and within +-bound."""
    x = finite(value, name)
    if not -bound <= x <= bound:
        raise ValueError(f"{name} must be within +-{bound:g}, got {x!r}")
    return x


def flat_floats(values: npt.ArrayLike) -> list[float]:
    """`values` flattened to a list of floats (the numbers np.asarray(values, float).reshape(-1) holds)."""
    if isinstance(values, np.ndarray) and values.dtype == np.float64:
        out: list[float] = values.ravel().tolist()
        return out
    flat: list[float] = np.asarray(values, dtype=float).reshape(-1).tolist()
    return flat


def all_finite(xs: list[float]) -> bool:
    """Every value is finite."""
    # over a handful of axes, cheaper than np.isfinite and a reduction
    return all(map(math.isfinite, xs))
