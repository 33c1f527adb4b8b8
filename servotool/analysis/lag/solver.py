"""A small bounded least-squares solver for the dynamic fit's one or two nonlinear parameters.

Levenberg-Marquardt steps on the exact Jacobian, bounds kept by projection (a parameter at a bound that the
gradient pushes outwards is held there), and an optional soft-L1 loss by iteratively reweighted least
squares. It minimises the same cost as scipy.optimize.least_squares with loss="soft_l1" and reports the
same things (cost, residual, the loss-scaled Jacobian), at a fraction of its fixed cost per call, which on
a short recording was most of the fit.
"""

from __future__ import annotations

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


@dataclass
class LsqResult:
    """What the fit keeps: the optimum, the cost there (0.5 * sum of the loss), the plain residual and the
    Jacobian scaled as scipy scales it for a robust loss (J^T J approximates the cost's Hessian)."""

    x: np.ndarray
    cost: float
    fun: np.ndarray
    jac: np.ndarray


def _weights(r: np.ndarray, f_scale: float | None) -> tuple[float, np.ndarray, np.ndarray]:
    """(cost, IRLS weight of each residual, scale of each Jacobian row for the reported Jacobian)."""
    if f_scale is None:
        ones = np.ones(len(r))
        return 0.5 * float(r @ r), ones, ones
    t = 1.0 + (r / f_scale) ** 2
    root = np.sqrt(t)
    cost = f_scale**2 * float(np.sum(root - 1.0))  # 0.5 * f^2 * sum(2 (sqrt(1 + z) - 1))
    return cost, 1.0 / root, t**-0.75


def result_at(problem: Problem, x: np.ndarray, f_scale: float | None = None) -> LsqResult:
    """What solve reports, at x itself (no step taken)."""
    r, jac = problem(x)
    cost, _, row_scale = _weights(r, f_scale)
    return LsqResult(np.asarray(x, float), cost, r, jac * row_scale[:, None])


def cost_of(r: np.ndarray, f_scale: float | None = None) -> float:
    """The cost solve minimises, at the residual r."""
    return _weights(r, f_scale)[0]


def _step(jac: np.ndarray, w: np.ndarray, r: np.ndarray, free: np.ndarray, damping: float) -> np.ndarray:
    """The damped Gauss-Newton step in the free parameters (zero in the others)."""
    jw = jac[:, free]
    normal = jw.T @ (jw * w[:, None])
    grad = jw.T @ (w * r)
    diag = np.diag(normal).copy()
    diag[diag <= 0] = 1.0
    normal = normal + damping * np.diag(diag)
    step = np.zeros(jac.shape[1])
    try:
        step[free] = -np.linalg.solve(normal, grad)
    except np.linalg.LinAlgError:
        step[free] = -np.linalg.lstsq(normal, grad, rcond=None)[0]
    return step


def solve(
    problem: Problem, x0: np.ndarray, lower: np.ndarray, upper: np.ndarray, f_scale: float | None = None
) -> LsqResult | None:
    """Minimise 0.5 * sum(loss(r(x))) for lower <= x <= upper from x0; None when the residual is not finite.

    Stops when a step moves no parameter by more than STEP_TOL_S or gains less than COST_TOL of the cost,
    or after MAX_STEPS trials."""
    x = np.clip(np.asarray(x0, float), lower, upper)
    r, jac = problem(x)
    if not (np.all(np.isfinite(r)) and np.all(np.isfinite(jac))):
        return None
    cost, w, _ = _weights(r, f_scale)
    damping = DAMPING_START
    accepted = 0
    for _ in range(MAX_STEPS):
        grad = jac.T @ (w * r)
        held = ((x <= lower) & (grad > 0)) | ((x >= upper) & (grad < 0))
        free = ~held
        if not free.any():
            break
        x_new = np.clip(x + _step(jac, w, r, free, damping), lower, upper)
        moved = float(np.max(np.abs(x_new - x)))
        if moved == 0.0:
            break
        r_new, jac_new = problem(x_new)
        cost_new, w_new, _ = _weights(r_new, f_scale) if np.all(np.isfinite(r_new)) else (np.inf, w, w)
        if cost_new <= cost and np.all(np.isfinite(jac_new)):
            gain = cost - cost_new
            x, r, jac, cost, w = x_new, r_new, jac_new, cost_new, w_new
            damping = max(damping * DAMPING_DOWN, DAMPING_START)
            accepted += 1
            if moved <= STEP_TOL_S or (accepted >= MIN_ACCEPTED and gain <= COST_TOL * cost):
                break
        else:
            damping *= DAMPING_UP
            if damping > DAMPING_GIVE_UP or moved <= STEP_TOL_S:
                break
    _, _, row_scale = _weights(r, f_scale)
    return LsqResult(x, cost, r, jac * row_scale[:, None])
