"""Argument checks shared by the motion modules: a bad number is refused with its name, never let through."""

from __future__ import annotations

import math


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
