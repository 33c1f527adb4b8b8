"""How every result names its uncertainty, in one place: the 95 % confidence interval as its two bounds
(`95 % CI 78.04 to 78.18 ms`, never a "±" that reads as a standard error as easily) and the standard error
by its name (`standard error 0.02 ms`). The terminal, the plots and the campaign reports all use these, and
the JSON keys say the same (`ci95_low_ms`, `ci95_high_ms`, `stderr_ms`). Plain text; imports nothing."""

from __future__ import annotations

import math


def ci95_text(lo: float, hi: float, unit: str = "ms", spec: str = ".2f") -> str:
    """`95 % CI 78.04 to 78.18 ms`, or `one pass: no 95 % CI` when the fit gives none."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return "one pass: no 95 % CI"
    return f"95 % CI {lo:{spec}} to {hi:{spec}} {unit}"


def stderr_text(se: float | None, unit: str = "ms", spec: str = ".2f") -> str:
    """`standard error 0.02 ms`, or "" when the fit gives none for the figure. One that `spec` would round
    to zero is given to one significant digit (`standard error 0.004 ms`), never as a zero."""
    if se is None or not math.isfinite(se):
        return ""
    text = f"{se:{spec}}"
    if se > 0 and float(text) == 0:
        text = f"{se:.1g}"
    return f"standard error {text} {unit}"


def with_stderr(value: str, se: float | None, unit: str, spec: str = ".2f") -> str:
    """`value unit (standard error se unit)`, or `value unit` when there is no standard error."""
    text = stderr_text(se, unit, spec)
    return f"{value} {unit}" + (f" ({text})" if text else "")
