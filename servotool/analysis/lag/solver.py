"""A small bounded least-squares solver for the dynamic fit's one or two nonlinear parameters.

Levenberg-Marquardt steps on the exact Jacobian, bounds kept by projection (a parameter at a bound that the
gradient pushes outwards is held there), and an optional soft-L1 loss by iteratively reweighted least
squares. It minimises the same cost as scipy.optimize.least_squares with loss="soft_l1" and reports the
same things (cost, residual, the loss-scaled Jacobian), at a fraction of its fixed cost per call, which on
a short recording was most of the fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Problem = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]  # x -> (residual, Jacobian)

STEP_TOL_S = 1e-9  # converged when no parameter moves by more than this (s) ...
COST_TOL = 1e-10  # ... or an accepted step lowers the cost by less than this fraction (after the first
MIN_ACCEPTED = 3  # few steps: from tau = 0, where the cost is flat in tau, the first gains are tiny)
MAX_STEPS = 60  # accepted or rejected trial steps at the most
DAMPING_START = 1e-6  # Marquardt damping, relative to the normal matrix's diagonal
DAMPING_DOWN = 0.2
DAMPING_UP = 8.0
DAMPING_GIVE_UP = 1e12


@dataclass(frozen=True)
class Tolerances:
    """When solve stops: no parameter moved by more than step (in the parameters' units), or an accepted
    step gained less than cost (a fraction of the cost) once min_accepted steps were taken; with predicted,
    also when the next step's gain predicted by the Gauss-Newton model is below that fraction (the step is
    then not tried: near the optimum of a flat cost the trial steps are most of the evaluations)."""

    step: float = STEP_TOL_S
    cost: float = COST_TOL
    min_accepted: int = MIN_ACCEPTED
    predicted: bool = False


TIGHT = Tolerances()


@dataclass
class LsqResult:
    """What the fit keeps: the optimum, the cost there (0.5 * sum of the loss), the plain residual and the
    Jacobian scaled as scipy scales it for a robust loss (J^T J approximates the cost's Hessian)."""

    x: np.ndarray
    cost: float
    fun: np.ndarray
    jac: np.ndarray


def _weights(r: np.ndarray, f_scale: float | None) -> tuple[float, np.ndarray | None]:
    """(cost, IRLS weight of each residual; None: all 1)."""
    if f_scale is None:
        return 0.5 * float(r @ r), None
    root = _one_plus_z(r, f_scale)
    np.sqrt(root, out=root)
    cost = f_scale**2 * float((root - 1.0).sum())  # 0.5 * f^2 * sum(2 (sqrt(1 + z) - 1))
    return cost, np.divide(1.0, root, out=root)


def _one_plus_z(r: np.ndarray, f_scale: float) -> np.ndarray:
    """1 + (r / f_scale)^2, in one new array (the same floats as the expression)."""
    z = r / f_scale
    z *= z
    z += 1.0
    return z


def _row_scale(r: np.ndarray, f_scale: float | None) -> np.ndarray | float:
    """Scale of each Jacobian row for the reported Jacobian (as scipy scales it for the soft-L1 loss)."""
    if f_scale is None:
        return 1.0
    z = _one_plus_z(r, f_scale)
    z **= -0.75
    return z[:, None]


def result_at(problem: Problem, x: np.ndarray, f_scale: float | None = None) -> LsqResult:
    """What solve reports, at x itself (no step taken)."""
    r, jac = problem(x)
    return LsqResult(np.asarray(x, float), _weights(r, f_scale)[0], r, jac * _row_scale(r, f_scale))


def cost_of(r: np.ndarray, f_scale: float | None = None) -> float:
    """The cost solve minimises, at the residual r."""
    return _weights(r, f_scale)[0]


def _weighted(v: np.ndarray, w: np.ndarray | None) -> np.ndarray:
    """v (a vector, or a matrix by rows) times the weights; v itself when there are none."""
    if w is None:
        return v
    return v * (w[:, None] if v.ndim == 2 else w)


def _step(normal: list[list[float]], grad: list[float], free: list[bool], damping: float) -> list[float]:
    """The damped Gauss-Newton step in the free parameters (zero in the others), from the normal matrix
    J^T W J and the gradient J^T W r at the current point (as Python floats: one or two parameters, where
    numpy's cost per call would be most of the step)."""
    idx = [i for i, f in enumerate(free) if f]
    step = [0.0] * len(grad)
    diag = [normal[i][i] if normal[i][i] > 0 else 1.0 for i in idx]
    if len(idx) == 1:  # one or two parameters (the dynamic fit's): closed form, no LAPACK call
        i = idx[0]
        a = normal[i][i] + damping * diag[0]
        if a != 0.0:
            step[i] = -grad[i] / a
            return step
    elif len(idx) == 2:
        i, k = idx
        a, b, d = normal[i][i] + damping * diag[0], normal[i][k], normal[k][k]
        d += damping * diag[1]
        det = a * d - b * normal[k][i]
        if det != 0.0 and math.isfinite(det):
            gi, gk = grad[i], grad[k]
            step[i] = -(d * gi - b * gk) / det
            step[k] = -(a * gk - normal[k][i] * gi) / det
            return step
    mask = np.array(free)
    sub = np.array(normal)[np.ix_(mask, mask)] + damping * np.diag(diag)
    rhs = np.array(grad)[mask]
    try:
        part = -np.linalg.solve(sub, rhs)
    except np.linalg.LinAlgError:
        part = -np.linalg.lstsq(sub, rhs, rcond=None)[0]
    for i, v in zip(idx, part.tolist(), strict=True):
        step[i] = v
    return step


Floats = list[float]


def _predicted_gain(normal: list[Floats], grad: Floats, x_new: Floats, x: Floats) -> float:
    """The cost's fall over the step from x to x_new by the Gauss-Newton model at x (numpy's products, as
    before: their rounding decides where a fit stops)."""
    d = np.array(x_new) - np.array(x)
    return float(-(np.array(grad) @ d) - 0.5 * (d @ np.array(normal) @ d))


def _free(x: list[float], lower: list[float], upper: list[float], grad: list[float]) -> list[bool]:
    """Which parameters may move: not those at a bound that the gradient pushes outwards."""
    bounds = zip(x, lower, upper, grad, strict=True)
    return [not ((v <= a and g > 0) or (v >= b and g < 0)) for v, a, b, g in bounds]


def _largest(values: list[float]) -> float:
    """The largest value, NaN if any is NaN (as np.max)."""
    return math.nan if any(v != v for v in values) else max(values)


def _products(jac: np.ndarray, r: np.ndarray, w: np.ndarray | None) -> tuple[list[list[float]], list[float]]:
    """(J^T W J, J^T W r) as Python floats."""
    normal: list[list[float]] = (jac.T @ _weighted(jac, w)).tolist()
    grad: list[float] = (jac.T @ _weighted(r, w)).tolist()
    return normal, grad


def solve(
    problem: Problem,
    x0: np.ndarray,
    lower: np.ndarray,
    upper: np.ndarray,
    f_scale: float | None = None,
    tol: Tolerances = TIGHT,
) -> LsqResult | None:
    """Minimise 0.5 * sum(loss(r(x))) for lower <= x <= upper from x0; None when the residual is not finite.

    Stops when a step moves no parameter by more than tol.step or gains less than tol.cost of the cost
    (see Tolerances), or after MAX_STEPS trials. The parameters, bounds and the small normal matrix are
    handled as Python floats (the same operations as numpy's on them, without its cost per call)."""
    lo, up = np.asarray(lower, float).tolist(), np.asarray(upper, float).tolist()
    x = [min(max(v, a), b) for v, a, b in zip(np.asarray(x0, float).tolist(), lo, up, strict=True)]
    r, jac = problem(np.array(x))
    if not (np.isfinite(r).all() and np.isfinite(jac).all()):
        return None
    cost, w = _weights(r, f_scale)
    damping = DAMPING_START
    accepted = 0
    normal, grad = _products(jac, r, w)
    for _ in range(MAX_STEPS):
        free = _free(x, lo, up, grad)
        if not any(free):
            break
        step = _step(normal, grad, free, damping)
        x_new = [min(max(v + d, a), b) for v, d, a, b in zip(x, step, lo, up, strict=True)]
        moved = _largest([abs(u - v) for u, v in zip(x_new, x, strict=True)])
        if moved == 0.0 or (
            tol.predicted
            and accepted >= tol.min_accepted
            and _predicted_gain(normal, grad, x_new, x) <= tol.cost * cost
        ):
            break
        r_new, jac_new = problem(np.array(x_new))
        cost_new, w_new = _weights(r_new, f_scale) if np.isfinite(r_new).all() else (np.inf, w)
        if cost_new <= cost and np.isfinite(jac_new).all():
            gain = cost - cost_new
            x, r, jac, cost, w = x_new, r_new, jac_new, cost_new, w_new
            normal, grad = _products(jac, r, w)
            damping = max(damping * DAMPING_DOWN, DAMPING_START)
            accepted += 1
            if moved <= tol.step or (accepted >= tol.min_accepted and gain <= tol.cost * cost):
                break
        else:
            damping *= DAMPING_UP
            if damping > DAMPING_GIVE_UP or moved <= tol.step:
                break
    return LsqResult(np.array(x), cost, r, jac * _row_scale(r, f_scale))
