"""Jerk-limited profiles for one axis: the time-optimal plan to rest, its synchronised stretch, stepping.

Everything here works on plain floats (one axis, consistent units: position, /s, /s^2, /s^3), because a
handful of scalar operations per call is far cheaper in Python than any array machinery.

A plan from velocity v0 and acceleration a0 to rest at displacement dx has the seven-segment shape

    transfer (v0, a0) -> (u, 0)   jerk toward a peak acceleration, hold it (at most a_max), jerk back to zero
    cruise at u                   only at |u| = v_max, or in a plan stretched for synchronisation
    brake (u, 0) -> (0, 0)        the mirror transfer to rest

and the peak velocity u is its one free parameter. S(u), the displacement of transfer plus brake without
cruise, increases with u except for one dip next to v_rd = v0 + a0|a0| / (2 j_max), the velocity reached by
ramping the acceleration straight to zero. The search variable is x = sign(u - v_rd) sqrt(j_max |u - v_rd|):
S has an infinite slope in u at v_rd but not in x, so the root finder converges there in a few steps.

The transfer is a symmetric one (zero acceleration at both ends) seen from where (v0, a0) lies on it: on the
side of v_rd where it keeps the sign of a0, the tail of a symmetric transfer that started |a0| / j_max s
earlier at zero acceleration; on the other side, the ramp of the acceleration to zero followed by a
symmetric transfer from v_rd. A symmetric transfer over a velocity change c takes tau(|c|) (the brake time)
and covers c tau(|c|) / 2 beyond its start velocity, so S, T and their slopes have short closed forms, and
S is quadratic in u where transfer and brake both hold a_max. The dip lies on the side where the transfer
ramps the acceleration through zero, where S rises to a maximum above S(v_rd) and falls back to it; the
other side is monotonic. So S(v_rd) decides on which side the one time-optimal root lies, and a
safeguarded Newton search on that side alone finds it (plan_to_rest, for a moving state inside the limits).
Any other state goes to the general search: the domain is split at x = 0 and x = +-a_max (where the
transfer starts holding its acceleration); every piece whose ends bracket dx is solved and the shortest
plan wins. A piece can also hold two roots that do not bracket it (the two sides of the dip); such plans
are never shorter than the root on the far side of v_rd or the cruise at v_max, so they need no search.

One case falls outside the seven segments: a state that decelerates toward v_rd (a0 and v_rd of opposite
signs) with its target a little beyond its stopping point. Reaching a peak between 0 and v_rd would touch zero
acceleration on the way down; the time-optimal plan eases the deceleration first and then brakes harder,
without touching zero (three ramps, "eased brake"). That family replaces the peaks between 0 and v_rd.

A plan stretched to a longer duration cruises at a lowered peak u; with the same decomposition,
u (T + cruise - duration) is H(u - base) + H(u) + u (+-t - duration) + dx - L (H(c) = c tau(|c|) / 2), a
smooth closed form on which Newton steps find the peak (stretch_to).

A synchronised planning need not search every axis: duration_bound gives the duration of one admissible
plan (the search's model peak, cruising), an upper bound of the minimum, and stretch_warm finds the stretched
plan straight from a guess of its peak. Since S rises with u except on the one interval beside v_rd, a peak
whose plan cruises forward lies at or below the time-optimal one unless it lies beyond v_rd with the target
short of S(v_rd); refusing that case (and the eased brake's targets) makes its plan stretch_to's, and its
existence proves the axis no slower than the duration it was stretched to.

Checked against ruckig (tests/motion/test_otg_ruckig.py): the durations agree to rounding, rest to rest and
from moving states inside the limits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from math import copysign, sqrt

# A plan's segments as a flat (duration s, jerk, duration s, jerk, ...) tuple.
Segments = tuple[float, ...]
# (segments, duration s, peak velocity): what plan_to_rest and stretch_to return.
Plan = tuple[Segments, float, float]
_Residual = Callable[..., float]

__all__ = [
    "OtgPlan",
    "Axis",
    "advance",
    "axis_constants",
    "duration_bound",
    "duration_bound_axis",
    "follow",
    "plan_to_rest",
    "plan_warm",
    "stretch_to",
    "stretch_warm",
    "stretch_warm_axis",
    "warm_constants",
    "warm_constants_axis",
]

_EPS = 2.220446049250313e-16  # float64 machine epsilon
# Root-finder iterations are bounded by this; in practice 3 to 12 suffice.
_MAX_ITER = 100
_EMPTY_PLAN: Plan = ((), 0.0, 0.0)
_INF = float("inf")


def _transfer(
    v0: float, a0: float, u: float, amax: float, jmax: float, x: float | None = None
) -> tuple[float, float, float, float, float, float]:
    """Durations and jerks (t1, j1, t2, ap, t3, j3) of the time-optimal move from (v0, a0) to (u, 0).

    Segment 1 ramps the acceleration from a0 to the peak ap with jerk j1, segment 2 holds ap for t2, segment 3
    ramps it to zero with jerk j3. |ap| <= a_max; an a0 beyond a_max is ramped back first. The arithmetic is
    exactly _shape's, so that a plan built here has the duration and displacement the search saw. Given x
    (the search variable of u, see _lean_s), the peak acceleration comes from x itself, which keeps its
    precision where u is within rounding of v_rd.
    """
    h = 0.5 * a0 * a0
    if x is not None:
        d = 1.0 if x >= 0.0 else -1.0
        sq = x * x + (a0 * a0 if (x >= 0.0) == (a0 >= 0.0) else 0.0)
    elif jmax * (u - v0) >= (h if a0 >= 0.0 else -h):
        # u >= v_rd  <=>  j (u - v0) >= a0 |a0| / 2
        d = 1.0
        sq = h + jmax * (u - v0)
    else:
        d = -1.0
        sq = h - jmax * (u - v0)
    a2 = amax * amax
    if sq > a2:
        ap = d * amax
        j1 = jmax if ap >= a0 else -jmax
        v1 = v0 + (a2 - a0 * a0) / (2.0 * j1)
        v2 = u - ap * amax / (2.0 * jmax)
        t2 = (v2 - v1) / ap
        if t2 < 0.0:
            t2 = 0.0
    else:
        ap = d * sqrt(sq) if sq > 0.0 else 0.0
        j1 = jmax if ap >= a0 else -jmax
        t2 = 0.0
    t1 = (ap - a0) / j1
    t3 = d * ap / jmax
    return t1, j1, t2, ap, t3, -d * jmax


def _shape(v0: float, a0: float, u: float, amax: float, jmax: float) -> tuple[float, float]:
    """(S, T): displacement and duration of the transfer to (u, 0) followed at once by the brake to rest.

    The same profile as _transfer plus the closed-form brake, written out because every search evaluates it.
    """
    h = 0.5 * a0 * a0
    w = jmax * (u - v0)
    # u >= v_rd  <=>  j (u - v0) >= a0 |a0| / 2
    if w >= (h if a0 >= 0.0 else -h):
        d = 1.0
        sq = h + w
    else:
        d = -1.0
        sq = h - w
    a2 = amax * amax
    if sq > a2:
        ap = d * amax
        j1 = jmax if ap >= a0 else -jmax
        v1 = v0 + (a2 - a0 * a0) / (2.0 * j1)
        v2 = u - ap * amax / (2.0 * jmax)
        t2 = (v2 - v1) / ap
        if t2 < 0.0:
            t2 = 0.0
        disp = t2 * (v1 + v2) * 0.5
    else:
        ap = d * sqrt(sq) if sq > 0.0 else 0.0
        j1 = jmax if ap >= a0 else -jmax
        v1 = v2 = v0 + (sq - a0 * a0) / (2.0 * j1)
        t2 = disp = 0.0
    t1 = (ap - a0) / j1
    t3 = d * ap / jmax
    # Constant-jerk segment: displacement = t (v_start + v_end) / 2 - jerk t^3 / 12.
    disp += 0.5 * (t1 * (v0 + v1) + t3 * (v2 + u))
    disp += (d * t3 * t3 * t3 - t1 * t1 * t1 * (j1 / jmax)) * jmax / 12.0
    au = u if u >= 0.0 else -u
    tb = 2.0 * sqrt(au / jmax) if au * jmax <= a2 else au / amax + amax / jmax
    # The brake is point-symmetric in velocity, so it covers u * tb / 2.
    return disp + 0.5 * u * tb, t1 + t2 + t3 + tb


def _shape_x(
    x: float, v0: float, a0: float, v_rd: float, amax: float, jmax: float
) -> tuple[float, float, float, float, float]:
    """(S, dS/dx, T, dT/dx, u) of _shape at the peak u = v_rd + x |x| / j_max, with the slopes in x.

    The same arithmetic as _shape for S and T (so a root found here is a root there), plus the derivatives
    computed alongside in one pass for Newton steps. x must lie within the search domain (|u| <= v_max).
    """
    ax = x if x >= 0.0 else -x
    u = v_rd + x * ax / jmax
    ux = 2.0 * ax / jmax  # du/dx
    h = 0.5 * a0 * a0
    w = jmax * (u - v0)
    if w >= (h if a0 >= 0.0 else -h):
        d = 1.0
        sq = h + w
    else:
        d = -1.0
        sq = h - w
    a2 = amax * amax
    if sq > a2:
        ap = d * amax
        j1 = jmax if ap >= a0 else -jmax
        v1 = v0 + (a2 - a0 * a0) / (2.0 * j1)
        v2 = u - ap * amax / (2.0 * jmax)
        t2 = (v2 - v1) / ap
        if t2 < 0.0:
            t2 = 0.0
        t1 = (ap - a0) / j1
        t3 = d * ap / jmax
        disp = t2 * (v1 + v2) * 0.5
        dt2 = ux / ap
        ds = 0.5 * (dt2 * (v1 + v2) + t2 * ux) + t3 * ux
        dt = dt2
    else:
        ap = d * sqrt(sq) if sq > 0.0 else 0.0
        j1 = jmax if ap >= a0 else -jmax
        v1 = v2 = v0 + (sq - a0 * a0) / (2.0 * j1)
        t2 = disp = 0.0
        t1 = (ap - a0) / j1
        t3 = d * ap / jmax
        # d ap / dx = x / |ap| (|ap| >= |x|; both zero only at x = 0, where the slope is 1)
        dap = ax / (d * ap) if ap != 0.0 else 1.0
        dv1 = x / j1
        dt1 = dap / j1
        dt3 = d * dap / jmax
        ds = 0.5 * (dt1 * (v0 + v1) + t1 * dv1 + dt3 * (v1 + u) + t3 * (dv1 + ux))
        ds += (d * t3 * t3 * dt3 - t1 * t1 * dt1 * (j1 / jmax)) * jmax * 0.25
        dt = dt1 + dt3
    disp += 0.5 * (t1 * (v0 + v1) + t3 * (v2 + u))
    disp += (d * t3 * t3 * t3 - t1 * t1 * t1 * (j1 / jmax)) * jmax / 12.0
    if u >= 0.0:
        au = u
        su = ux
    else:
        au = -u
        su = -ux
    if au * jmax <= a2:
        tb = 2.0 * sqrt(au / jmax)
        ds += 0.75 * tb * ux
        dt += 2.0 * su / (jmax * tb) if tb > 0.0 else 0.0
    else:
        tb = au / amax + amax / jmax
        ds += (0.5 * tb + 0.5 * au / amax) * ux
        dt += su / amax
    return disp + 0.5 * u * tb, ds, t1 + t2 + t3 + tb, dt, u


def _root(
    fn: _Residual,
    args: tuple[float, ...],
    xa: float,
    fa: float,
    xb: float,
    fb: float,
    xtol: float,
    ftol: float,
) -> float:
    """Root of fn(x, *args) between xa and xb, where fa and fb have opposite signs (Brent's method).

    Inverse quadratic or secant steps where they behave, bisection where they do not, so it is superlinear
    on smooth pieces and never slower than bisection on awkward ones (displacement grows like x^4 in the
    far pieces). Ends when |fn| <= ftol or the bracket is narrower than about xtol; never leaves the bracket.
    """
    xc, fc = xa, fa
    step = prev = xb - xa
    for _ in range(_MAX_ITER):
        if (fb > 0.0) == (fc > 0.0):
            xc, fc = xa, fa
            step = prev = xb - xa
        if abs(fc) < abs(fb):
            xa, fa = xb, fb
            xb, fb = xc, fc
            xc, fc = xa, fa
        tol = 2.0 * _EPS * abs(xb) + 0.5 * xtol
        mid = 0.5 * (xc - xb)
        if abs(mid) <= tol or abs(fb) <= ftol:
            return xb
        if abs(prev) >= tol and abs(fa) > abs(fb):
            s = fb / fa
            if xa == xc:
                p = 2.0 * mid * s
                q = 1.0 - s
            else:
                q = fa / fc
                r = fb / fc
                p = s * (2.0 * mid * q * (q - r) - (xb - xa) * (r - 1.0))
                q = (q - 1.0) * (r - 1.0) * (s - 1.0)
            if p > 0.0:
                q = -q
            else:
                p = -p
            # Accept the interpolated step only if it stays well inside the bracket and keeps shrinking.
            if 2.0 * p < min(3.0 * mid * q - abs(tol * q), abs(prev * q)):
                prev = step
                step = p / q
            else:
                step = prev = mid
        else:
            step = prev = mid
        xa, fa = xb, fb
        if abs(step) > tol:
            xb += step
        else:
            xb += tol if mid > 0.0 else -tol
        fb = fn(xb, *args)
    return xb


def _polish(
    fn: _Residual,
    args: tuple[float, ...],
    x0: float,
    xa: float,
    fa: float,
    xb: float,
    fb: float,
    probe: float,
    ftol: float,
) -> tuple[float | None, float, float, float, float]:
    """Refine a good guess x0 of a root bracketed by (xa, fa), (xb, fb): x0, a probe beside it, their secant.

    Returns (root or None, xa, fa, xb, fb) with the bracket tightened by every evaluated point.
    """
    f0 = fn(x0, *args)
    if abs(f0) <= ftol:
        return x0, xa, fa, xb, fb
    if (f0 > 0.0) == (fa > 0.0):
        xa, fa = x0, f0
    else:
        xb, fb = x0, f0
    # Probe on the side of the root, i.e. toward the other end of the tightened bracket.
    x1 = x0 + probe if (xb if x0 == xa else xa) > x0 else x0 - probe
    if not min(xa, xb) < x1 < max(xa, xb):
        return None, xa, fa, xb, fb
    f1 = fn(x1, *args)
    if abs(f1) <= ftol:
        return x1, xa, fa, xb, fb
    if (f1 > 0.0) == (fa > 0.0):
        xa, fa = x1, f1
    else:
        xb, fb = x1, f1
    if f1 == f0:
        return None, xa, fa, xb, fb
    x2 = x1 - f1 * (x1 - x0) / (f1 - f0)
    if not min(xa, xb) < x2 < max(xa, xb):
        return None, xa, fa, xb, fb
    f2 = fn(x2, *args)
    if abs(f2) <= ftol:
        return x2, xa, fa, xb, fb
    if (f2 > 0.0) == (fa > 0.0):
        xa, fa = x2, f2
    else:
        xb, fb = x2, f2
    return None, xa, fa, xb, fb


def _residual_x(
    x: float, dx: float, v0: float, a0: float, v_rd: float, vmax: float, amax: float, jmax: float
) -> float:
    u = v_rd + x * abs(x) / jmax
    if u > vmax:
        u = vmax
    elif u < -vmax:
        u = -vmax
    return _shape(v0, a0, u, amax, jmax)[0] - dx


def _ease_disp(
    v0: float, v1: float, v2: float, v3: float, t1: float, t2: float, th: float, t3: float, jmax: float
) -> float:
    """The displacement of an eased brake (_ease: a ramp from a0 to a1, one down to a2, a hold at a2, a ramp
    back to zero) from the four phases' durations and the velocities where they end."""
    return (
        t1 * (v0 + v1) * 0.5
        - jmax * t1 * t1 * t1 / 12.0
        + t2 * (v1 + v2) * 0.5
        + jmax * t2 * t2 * t2 / 12.0
        + th * (v2 + v3) * 0.5
        + t3 * v3 * 0.5
        - jmax * t3 * t3 * t3 / 12.0
    )


def _ease(
    v0: float, a0: float, a1: float, amax: float, jmax: float
) -> tuple[float, float, float, float, float, float, float]:
    """The eased brake of a state that moves forward while decelerating (a0 < 0 < v_rd), to rest.

    The acceleration first eases from a0 up to a1 (a0 <= a1 <= 0), then brakes down to a2 (held at -a_max if
    it gets there) and ramps back to zero as the velocity reaches zero: three ramps whose middle one does not
    cross zero acceleration. a1 = a0 is the hardest brake, a1 = 0 the ramp to v_rd followed by a full brake.
    Returns (t1, t2, th, t3, a2, disp, duration).
    """
    t1 = (a1 - a0) / jmax
    v1 = v0 + (a1 * a1 - a0 * a0) / (2.0 * jmax)
    sq = v1 * jmax + 0.5 * a1 * a1
    if sq > amax * amax:
        a2 = -amax
        t2 = (a1 + amax) / jmax if a1 > -amax else 0.0
        v2 = v1 + (a1 * a1 - amax * amax) / (2.0 * jmax)
        v3 = amax * amax / (2.0 * jmax)
        th = (v2 - v3) / amax
        if th < 0.0:
            th = 0.0
    else:
        a2 = -sqrt(sq) if sq > 0.0 else 0.0
        t2 = (a1 - a2) / jmax
        v2 = v3 = v1 + (a1 * a1 - a2 * a2) / (2.0 * jmax)
        th = 0.0
    t3 = -a2 / jmax
    disp = _ease_disp(v0, v1, v2, v3, t1, t2, th, t3, jmax)
    return t1, t2, th, t3, a2, disp, t1 + t2 + th + t3


def _residual_ease(a1: float, dx: float, v0: float, a0: float, amax: float, jmax: float) -> float:
    return _ease(v0, a0, a1, amax, jmax)[5] - dx


def _ease_slope(v0: float, a0: float, a1: float, amax: float, jmax: float) -> tuple[float, float]:
    """(disp, d disp / d a1) of _ease: the same arithmetic for disp, its slope alongside."""
    t1 = (a1 - a0) / jmax
    v1 = v0 + (a1 * a1 - a0 * a0) / (2.0 * jmax)
    dv1 = a1 / jmax
    sq = v1 * jmax + 0.5 * a1 * a1
    if sq > amax * amax:
        a2 = -amax
        t2 = (a1 + amax) / jmax if a1 > -amax else 0.0
        dt2 = 1.0 / jmax if a1 > -amax else 0.0
        v2 = v1 + (a1 * a1 - amax * amax) / (2.0 * jmax)
        dv2 = 2.0 * dv1
        v3 = amax * amax / (2.0 * jmax)
        dv3 = dt3 = 0.0
        th = (v2 - v3) / amax
        dth = dv2 / amax
        if th < 0.0:
            th = dth = 0.0
    else:
        a2 = -sqrt(sq) if sq > 0.0 else 0.0
        da2 = a1 / a2 if a2 != 0.0 else 0.0
        t2 = (a1 - a2) / jmax
        dt2 = (1.0 - da2) / jmax
        v2 = v3 = v1 + (a1 * a1 - a2 * a2) / (2.0 * jmax)
        dv2 = dv3 = dv1 + (a1 - a2 * da2) / jmax
        th = dth = 0.0
        dt3 = -da2 / jmax
    t3 = -a2 / jmax
    disp = _ease_disp(v0, v1, v2, v3, t1, t2, th, t3, jmax)
    slope = (
        ((v0 + v1) / jmax + t1 * dv1) * 0.5
        - 0.25 * t1 * t1
        + (dt2 * (v1 + v2) + t2 * (dv1 + dv2)) * 0.5
        + 0.25 * jmax * t2 * t2 * dt2
        + (dth * (v2 + v3) + th * (dv2 + dv3)) * 0.5
        + (dt3 * v3 + t3 * dv3) * 0.5
        - 0.25 * jmax * t3 * t3 * dt3
    )
    return disp, slope


def _newton_ease(
    args: tuple[float, float, float, float, float], a1: float, fa: float, b1: float, fb: float, ftol: float
) -> float:
    """The eased brake's a1 with |disp - dx| <= ftol, bracketed by (a1, fa), (b1, fb) of opposite signs.

    Newton steps on _ease_slope from the bracket's secant; a step that leaves the bracket (which every
    evaluation narrows) or does not shrink the residual by half is replaced by Brent's method on what is
    left of the bracket, so it never leaves it and ends as _root would.
    """
    dx, v0, a0, amax, jmax = args
    xtol = 1e-15 * amax
    x = a1 - fa * (b1 - a1) / (fb - fa)
    f_prev = _INF
    for _ in range(12):
        disp, slope = _ease_slope(v0, a0, x, amax, jmax)
        f = disp - dx
        if -ftol <= f <= ftol:
            return x
        if (f > 0.0) == (fa > 0.0):
            a1, fa = x, f
        else:
            b1, fb = x, f
        af = f if f >= 0.0 else -f
        xn = x - f / slope if slope != 0.0 else a1
        if not (a1 < xn < b1 or b1 < xn < a1) or af > 0.5 * f_prev:
            break
        if -xtol <= xn - x <= xtol:
            return xn
        x = xn
        f_prev = af
    return _root(_residual_ease, args, a1, fa, b1, fb, xtol, ftol)


def _x_of(u: float, v_rd: float, jmax: float) -> float:
    w = u - v_rd
    return copysign(sqrt(jmax * abs(w)), w)


def _segments(
    v0: float, a0: float, u: float, cruise: float, amax: float, jmax: float, x: float | None = None
) -> Segments:
    """Flat (duration, jerk, ...) tuple of the plan: transfer to (u, 0), cruise, brake to rest.

    Always seven segments, some possibly of zero duration; following a zero-duration segment is a no-op.
    x, when known, is u's search variable (see _transfer).
    """
    t1, j1, t2, ap, t3, j3 = _transfer(v0, a0, u, amax, jmax, x)
    au = abs(u)
    if au * jmax <= amax * amax:
        tb1 = sqrt(au / jmax)
        tb2 = 0.0
    else:
        tb1 = amax / jmax
        tb2 = au / amax - tb1
    jb = -jmax if u > 0.0 else jmax
    return (t1, j1, t2, 0.0, t3, j3, cruise, 0.0, tb1, jb, tb2, 0.0, tb1, -jb)


def _duration(segs: Segments) -> float:
    return sum(segs[0::2])


def _ease_segments(v0: float, a0: float, a1: float, sign: float, amax: float, jmax: float) -> Segments:
    t1, t2, th, t3, _, _, _ = _ease(v0, a0, a1, amax, jmax)
    j = sign * jmax
    return (t1, j, t2, -j, th, 0.0, t3, j)


def _cruise_plan(
    v0: float, a0: float, u: float, cruise: float, amax: float, jmax: float, x: float | None = None
) -> Plan:
    segs = _segments(v0, a0, u, cruise, amax, jmax, x)
    # sum(segs[0::2]) (as _duration), term by term in the same order: the same float.
    return segs, segs[0] + segs[2] + segs[4] + cruise + segs[8] + segs[10] + segs[12], u


def _plan_from_rest(dx: float, vmax: float, amax: float, jmax: float) -> Plan:
    """Closed form from rest: the peak u solves |u| tau(|u|) = |dx| (tau the time from rest to |u|)."""
    if dx == 0.0:
        return _EMPTY_PLAN
    dist = abs(dx)
    s_max = vmax * _brake_time(vmax, amax, jmax)
    if dist >= s_max:
        return _cruise_plan(0.0, 0.0, copysign(vmax, dx), (dist - s_max) / vmax, amax, jmax)
    return _cruise_plan(0.0, 0.0, copysign(min(_rest_peak(dist, amax, jmax), vmax), dx), 0.0, amax, jmax)


def _rest_peak(dist: float, amax: float, jmax: float) -> float:
    """The peak speed u of the rest-to-rest move over dist >= 0 without a velocity limit: u tau(u) = dist."""
    if dist * jmax * jmax <= 2.0 * amax * amax * amax:
        # No acceleration hold: 2 u^1.5 / sqrt(j) = dist.
        return (0.5 * dist * sqrt(jmax)) ** (2.0 / 3.0)
    # Holding a_max: u^2 / a + u a / j = dist.
    ca = amax / jmax
    return 0.5 * amax * (sqrt(ca * ca + 4.0 * dist / amax) - ca)


def _rest_peak_axis(dist: float, k: Axis) -> float:
    """_rest_peak(dist, a_max, j_max), the same float, from the limits' constants k (see axis_constants)."""
    _, amax, jmax, _, ca, a3x2, sqrt_j, ca2, _, _, _, _, _, _, _ = k
    if dist * jmax * jmax <= a3x2:
        return (0.5 * dist * sqrt_j) ** (2.0 / 3.0)
    return 0.5 * amax * (sqrt(ca2 + 4.0 * dist / amax) - ca)


def plan_to_rest(
    dx: float, v0: float, a0: float, vmax: float, amax: float, jmax: float, hint: float | None = None
) -> Plan:
    """Time-optimal plan from velocity v0 and acceleration a0 to rest at displacement dx.

    Returns (segments, duration, peak): segments is a flat tuple (t, jerk, t, jerk, ...) with durations in
    seconds (some may be zero), duration their sum and peak the velocity u at the end of the transfer (0 for
    an eased brake). At rest with dx == 0 the plan is empty. `hint`, a guess of the peak (the previous
    cycle's), only speeds up the search.

    A state inside the limits (|v| <= v_max, |a| <= a_max and v_rd within +-v_max) stays inside them. From
    any other state the plan heads back at once: |v| never beyond max(|v0|, |v_rd|, v_max), |a| never beyond
    max(|a0|, a_max). |jerk| <= j_max always.
    """
    if v0 == 0.0 and a0 == 0.0:
        return _plan_from_rest(dx, vmax, amax, jmax)
    h = 0.5 * a0 * a0
    v_rd = v0 + (h if a0 >= 0.0 else -h) / jmax
    if -vmax < v_rd < vmax and -vmax <= v0 <= vmax and -amax <= a0 <= amax:
        plan = _plan_inside(dx, v0, a0, v_rd, vmax, amax, jmax, hint)
        if plan is not None:
            return plan
    return _plan_search(dx, v0, a0, vmax, amax, jmax, hint)


def _plan_search(
    dx: float, v0: float, a0: float, vmax: float, amax: float, jmax: float, hint: float | None
) -> Plan:
    """The general search of plan_to_rest: every piece of the domain that brackets dx is solved."""
    sp = _shape(v0, a0, vmax, amax, jmax)[0]
    if sp <= dx:
        return _cruise_plan(v0, a0, vmax, (dx - sp) / vmax, amax, jmax)
    sn = _shape(v0, a0, -vmax, amax, jmax)[0]
    if sn >= dx:
        return _cruise_plan(v0, a0, -vmax, (sn - dx) / vmax, amax, jmax)

    # Here S(-v_max) < dx < S(v_max), so at least one piece brackets a root.
    h = 0.5 * a0 * a0
    v_rd = v0 + (h if a0 >= 0.0 else -h) / jmax
    xs, ease_lo, ease_hi = _split_points(v0, a0, v_rd, vmax, amax, jmax)
    inv_j = 1.0 / jmax
    fs = [sn - dx]
    for xk in xs[1:-1]:
        fs.append(_shape(v0, a0, v_rd + xk * abs(xk) * inv_j, amax, jmax)[0] - dx)
    fs.append(sp - dx)
    ftol = 4.0 * _EPS * (abs(sn) + abs(sp) + abs(dx))
    state = (dx, v0, a0, v_rd, vmax, amax, jmax)

    found: list[_Candidate] = []
    for k in range(len(xs) - 1):
        xa, xb, fa, fb = xs[k], xs[k + 1], fs[k], fs[k + 1]
        if (fa > 0.0) == (fb > 0.0) and fa != 0.0 and fb != 0.0:
            continue
        if xa == ease_lo and xb == ease_hi and xa < xb:
            found.append(_solve_eased(state, fa, fb, ease_lo < 0.0, ftol))
        else:
            found.append((_solve_peak(state, xa, fa, xb, fb, hint, ftol), None))
    return _shortest(found, v0, a0, amax, jmax)


def _ramp_down(v0: float, a0: float, jmax: float) -> float:
    """Displacement of ramping the acceleration straight to zero (ending at v_rd), in |a0| / j_max s."""
    t = abs(a0) / jmax
    # v0 t + a0 t^2 / 2 - sign(a0) j_max t^3 / 6, with sign(a0) j_max t = a0.
    return t * (v0 + t * a0 / 3.0)


def _stop(v0: float, a0: float, v_rd: float, amax: float, jmax: float) -> float:
    """S at peak 0: the displacement of the fastest stop, in closed form (as _shape(v0, a0, 0) computes it).

    When v_rd has the sign of a0 (or is 0) the stop ramps the acceleration to zero and brakes from v_rd.
    Otherwise it is the tail of a symmetric transfer to rest from w = v0 - a0 |a0| / (2 j_max) at zero
    acceleration, less the part before (v0, a0).
    """
    if (v_rd >= 0.0) == (a0 >= 0.0) or v_rd == 0.0:
        return _ramp_down(v0, a0, jmax) + 0.5 * v_rd * _brake_time(abs(v_rd), amax, jmax)
    h = 0.5 * a0 * abs(a0) / jmax
    w = v0 - h
    t = abs(a0) / jmax
    before = t * (w + h / 3.0)  # from (w, 0) to (v0, a0): w t + j t^3 / 6, with t = |a0| / j
    return 0.5 * w * _brake_time(abs(w), amax, jmax) - before


def _plan_inside(
    dx: float,
    v0: float,
    a0: float,
    v_rd: float,
    vmax: float,
    amax: float,
    jmax: float,
    hint: float | None,
    pre: tuple[_Lean, float, float] | None = None,
) -> Plan | None:
    """plan_to_rest for a moving state inside the limits: one piece solved; None leaves it to the search.

    `pre`, when given, is (_lean_consts(...), v_rd tau(|v_rd|), S(0)) computed already.

    S(x) rises monotonically on the side of v_rd where the transfer keeps the sign of a0, and on the other
    side (where the acceleration ramps through zero) rises to a local maximum above S0 = S(v_rd) and falls
    back to S0. So a target beyond S0 has exactly one root, on the far side (where a0 decelerates toward
    v_rd, the eased brake takes the peaks between v_rd and 0), and one short of S0 exactly one root, on the
    rising branch of the near side; it is the time-optimal plan (checked against the full search and ruckig).
    """
    stop: float | None = None
    if pre is None:
        shape = _lean_consts(v0, a0, v_rd, amax, jmax)
        rd_stop = v_rd * _brake_time(abs(v_rd), amax, jmax)
    else:
        shape, rd_stop, stop = pre
    # S0: the ramp of the acceleration to zero (shape[5]), then the brake from v_rd.
    s0 = shape[5] + 0.5 * rd_stop
    f0 = s0 - dx
    if f0 == 0.0:
        return _cruise_plan(v0, a0, v_rd, 0.0, amax, jmax, 0.0)
    side = 1.0 if f0 < 0.0 else -1.0  # the sign of x at the root
    x_start, f_start = 0.0, f0
    if a0 * v_rd < 0.0 and (a0 > 0.0) == (side > 0.0):
        # Decelerating toward v_rd with the target ahead of S0: the eased brake covers S0 .. S(0).
        f_zero = (_stop(v0, a0, v_rd, amax, jmax) if stop is None else stop) - dx
        if f_zero * side >= 0.0:
            state = (dx, v0, a0, v_rd, vmax, amax, jmax)
            ftol = 4.0 * _EPS * (abs(s0) + abs(f_zero) + abs(dx))
            return _shortest([_solve_eased(state, f_zero, f0, True, ftol)], v0, a0, amax, jmax)
        x_start, f_start = _x_of(0.0, v_rd, jmax), f_zero
    x_end = _x_of(side * vmax, v_rd, jmax)
    u_start = v_rd + x_start * abs(x_start) / jmax
    held = _held_peak(dx, side, shape)
    if held is not None and side * (held - u_start) > 0.0 and -vmax < held < vmax:
        x = _x_of(held, v_rd, jmax)
    elif hint is not None and side * (hint - u_start) > 0.0 and -vmax < hint < vmax:
        # Along an unchanged target the peak stays put, so the previous one is the root or close to it.
        x = _x_of(hint, v_rd, jmax)
    else:
        # Model: a move from v_rd at zero acceleration to rest through the peak u covers about what a move
        # from rest does, less the part from rest to v_rd: u tau(u) = dx - S0 + v_rd tau(v_rd).
        d = dx - s0 + rd_stop
        u = copysign(_rest_peak(abs(d), amax, jmax), d)
        if side * (u - side * vmax) >= 0.0:
            x = x_end
        elif side * (u - u_start) > 0.0:
            x = _x_of(u, v_rd, jmax)
        else:
            x = 0.5 * (x_start + x_end)
    if side > 0.0:
        lo, flo, hi, fhi = x_start, f_start, x_end, _INF
    else:
        lo, flo, hi, fhi = x_end, -_INF, x_start, f_start
    if not lo < x < hi and x != x_end:
        x = 0.5 * (lo + hi)
    ftol = 4.0 * _EPS * (abs(s0) + abs(dx))
    if (side > 0.0) == (a0 >= 0.0):
        args = (a0 * a0, v_rd, shape[2], shape[4], amax, jmax)
    else:
        args = (0.0, v_rd, v_rd, shape[5], amax, jmax)
    x, f_end = _newton_side(dx, args, lo, flo, hi, fhi, x_end, x, ftol)
    if f_end is not None:
        u = side * vmax
        return _cruise_plan(v0, a0, u, -f_end / u, amax, jmax)
    u = v_rd + x * abs(x) / jmax
    if not -vmax <= u <= vmax:
        return _cruise_plan(v0, a0, side * vmax, 0.0, amax, jmax)
    return _cruise_plan(v0, a0, u, 0.0, amax, jmax, x)


def _held_peak(dx: float, side: float, shape: _Lean) -> float | None:
    """The peak u of the plan that holds a_max in both its transfer and its brake, or None if it has none.

    With both held, S is quadratic in u (linear when the transfer lowers a positive peak), see _lean_s;
    `side` is the sign of x. The root is exact wherever the plan really holds both.
    """
    a0, v_rd, w, _, lead_same, lead_other, amax, jmax = shape
    g = 1.0 if a0 >= 0.0 else -1.0  # mirrored so that a0 >= 0
    dx, v_rd, w = g * dx, g * v_rd, g * w
    hold = amax * amax / jmax
    ca = amax / jmax
    if side * g > 0.0:
        # u >= v_rd: S = L + u^2 / a + u a / j - w^2 / (2 a) + w a / (2 j), held from u - w and u >= a^2 / j
        c = g * lead_same - w * w / (2.0 * amax) + w * ca / 2.0 - dx
        disc = ca * ca - 4.0 * c / amax
        if disc < 0.0:
            return None
        u = 0.5 * amax * (sqrt(disc) - ca)
        ok = u - w >= hold and u >= hold and u >= v_rd
    else:
        # u < v_rd, held from v_rd - u >= a^2 / j: S = L + v^2 / (2 a) + v a / (2 j) + brake terms
        k = g * lead_other + v_rd * v_rd / (2.0 * amax) + v_rd * ca / 2.0 - dx
        u = -k / ca  # a positive peak: S = K' + u a / j
        if u < hold:
            disc = ca * ca + 4.0 * k / amax
            if disc < 0.0:
                return None
            u = 0.5 * amax * (ca - sqrt(disc))  # a negative peak: S = K' - u^2 / a + u a / j
            if u > -hold:
                return None
        ok = v_rd - u >= hold
    return g * u if ok else None


# The constants of the symmetric decomposition of the transfer (see _lean_s): (a0, v_rd, w, t, lead on the
# side of a0, lead on the other side, a_max, j_max), t = |a0| / j_max.
_Lean = tuple[float, float, float, float, float, float, float, float]


def _lean_consts(v0: float, a0: float, v_rd: float, amax: float, jmax: float) -> _Lean:
    h = 0.5 * a0 * abs(a0) / jmax
    t = abs(a0) / jmax
    return (a0, v_rd, v0 - h, t, -t * (v0 - h + h / 3.0), _ramp_down(v0, a0, jmax), amax, jmax)


def _lean_s(
    x: float, a0sq: float, v_rd: float, base: float, lead: float, amax: float, jmax: float
) -> tuple[float, float]:
    """(S, dS/dx) at the peak u = v_rd + x |x| / j_max, from symmetric transfers (see _lean_consts).

    On the side of a0 (x a0 >= 0) the transfer is the tail of a symmetric one from `base` = w = v0 - a0 |a0|
    / (2 j) at zero acceleration to u, less its first |a0| / j s; on the other side it ramps the
    acceleration to zero, then is symmetric from `base` = v_rd to u. `lead` is what the transfer covers
    outside its symmetric part. A symmetric transfer over a velocity change c takes tau(c) (the brake time)
    and covers its start velocity times tau(c) plus c tau(c) / 2; its peak acceleration is
    sqrt(a0sq + x^2) (a0sq = a0^2 on the side of a0, else 0), at most a_max. The same S as _shape to
    rounding, in about half the operations.
    """
    ax = x if x >= 0.0 else -x
    u = v_rd + x * ax / jmax
    dudx = 2.0 * ax / jmax
    a2 = amax * amax
    q2 = a0sq + x * x
    if q2 <= a2:
        q = sqrt(q2)
        tau = 2.0 * q / jmax
        dtau = 2.0 * x / (jmax * q) if q > 0.0 else 0.0
    else:
        tau = q2 / (jmax * amax) + amax / jmax
        dtau = 2.0 * x / (jmax * amax)
    s = lead + 0.5 * (base + u) * tau
    ds = 0.5 * (dudx * tau + (base + u) * dtau)
    # The brake from (u, 0): tb = tau(|u|), covering u tb / 2.
    au = u if u >= 0.0 else -u
    if au * jmax <= a2:
        tb = 2.0 * sqrt(au / jmax)
        ds += 0.75 * tb * dudx
    else:
        tb = au / amax + amax / jmax
        ds += (0.5 * tb + 0.5 * au / amax) * dudx
    return s + 0.5 * u * tb, ds


def _newton_side(
    dx: float,
    shape: tuple[float, float, float, float, float, float],
    lo: float,
    flo: float,
    hi: float,
    fhi: float,
    x_end: float,
    x: float,
    ftol: float,
) -> tuple[float, float | None]:
    """Root of S(x) = dx on (lo, hi) by Newton steps from x, bisection as their guard.

    S < dx left of the root and S > dx right of it; flo, fhi are S - dx at the ends (+-inf where unknown).
    x_end (lo or hi) is the end of the domain (peak at +-v_max), evaluated only when a step heads beyond it:
    if S there falls short of dx (or beyond it, at the low end), the plan cruises and (x_end, S(x_end) - dx)
    is returned, else (root, None). The root is found when |S - dx| <= ftol, or is the end of a Newton step
    below 1e-9 of x (Newton's error squares every step); where rounding leaves no such point, the bracket's
    end nearer to dx. `shape` holds the arguments of _lean_s after x (for peaks on the root's side).
    """
    end_open = True
    at_hi = x_end == hi
    # x known to this fraction of the domain is as close as the plan's rounding allows.
    xtol = 1e-12 * abs(x_end)
    f_prev = _INF
    for _ in range(_MAX_ITER):
        s, ds = _lean_s(x, *shape)
        f = s - dx
        if x == x_end and end_open:
            end_open = False
            if (f <= 0.0) == at_hi:
                return x, f
        if -ftol <= f <= ftol:
            return x, None
        if f < 0.0:
            lo, flo = x, f
        else:
            hi, fhi = x, f
        xn = x - f / ds if ds != 0.0 else lo
        af = f if f >= 0.0 else -f
        # Newton where it helps; where rounding flattens S it stops improving, and bisection takes over.
        if lo < xn < hi and af < f_prev:
            tx = 1e-9 * x if x >= 0.0 else -1e-9 * x
            if -tx <= xn - x <= tx:
                return xn, None
        elif end_open:
            xn = x_end
        else:
            xn = 0.5 * (lo + hi)
        if hi - lo <= xtol:
            return (lo if -flo < fhi else hi), None
        x = xn
        f_prev = af
    return x, None


# A root of the search: (u, None) in the seven-segment family or (a1, sign) in the eased one.
_Candidate = tuple[float, float | None]
# (dx, v0, a0, v_rd, vmax, amax, jmax): the state and limits one search solves for.
_State = tuple[float, float, float, float, float, float, float]


def _split_points(
    v0: float, a0: float, v_rd: float, vmax: float, amax: float, jmax: float
) -> tuple[list[float], float, float]:
    """The search pieces in x, and the eased interval (ease_lo, ease_hi) (0, 0 when there is none).

    Split points in x: +-a_max (where the transfer starts holding its acceleration) and 0 (v_rd). A state
    decelerating toward v_rd (a0 and v_rd of opposite signs) would reach peaks between 0 and v_rd only by
    touching zero acceleration on the way; the eased brake is faster and spans the same end displacements,
    so the x interval between x(0) and 0 is one piece, solved in the eased family instead.
    """
    x_lo = _x_of(-vmax, v_rd, jmax)
    x_hi = _x_of(vmax, v_rd, jmax)
    ease_lo = ease_hi = 0.0
    # An acceleration held at a_max arrives a rounding error beyond it; it must not lose the eased brake.
    if (a0 < 0.0 < v_rd or v_rd < 0.0 < a0) and abs(a0) <= amax * (1.0 + 1e-12):
        x_zero = _x_of(0.0, v_rd, jmax)
        if x_zero < 0.0:
            ease_lo = x_zero
        else:
            ease_hi = x_zero
    xs = [x_lo]
    for xk in (-amax, ease_lo, 0.0, ease_hi, amax):
        if x_lo < xk < x_hi and xk > xs[-1] and not ease_lo < xk < ease_hi:
            xs.append(xk)
    xs.append(x_hi)
    return xs, ease_lo, ease_hi


def _solve_eased(state: _State, fa: float, fb: float, lo_is_zero_peak: bool, ftol: float) -> _Candidate:
    """The eased-brake root, normalised to a forward-moving state.

    a1 = a0 gives S(0), a1 = 0 gives S(v_rd).
    """
    dx, v0, a0, _, _, amax, jmax = state
    sign = 1.0 if a0 < 0.0 else -1.0
    ea0 = sign * a0
    g0, g1 = (fa, fb) if lo_is_zero_peak else (fb, fa)
    g0 *= sign
    g1 *= sign
    if g0 == 0.0:
        return ea0, sign
    if g1 == 0.0:
        return 0.0, sign
    args = (sign * dx, sign * v0, ea0, amax, jmax)
    return _newton_ease(args, ea0, g0, 0.0, g1, ftol), sign


def _solve_peak(
    state: _State, xa: float, fa: float, xb: float, fb: float, hint: float | None, ftol: float
) -> float:
    """The peak velocity u (within +-v_max) whose plan covers dx, searched in x on the piece [xa, xb]."""
    dx, v0, a0, v_rd, vmax, amax, jmax = state
    if fa == 0.0:
        xr = xa
    elif fb == 0.0:
        xr = xb
    else:
        x0 = xa - fa * (xb - xa) / (fb - fa)
        if hint is not None:
            # Along an unchanged plan the peak stays put, so the hint is the root or close to it.
            xh = _x_of(min(vmax, max(-vmax, hint)), v_rd, jmax)
            if xa < xh < xb:
                x0 = xh
        xr = _newton_peak(state, xa, fa, xb, fb, x0, ftol)
    u = v_rd + xr * abs(xr) / jmax
    return min(vmax, max(-vmax, u))


def _newton_peak(state: _State, xa: float, fa: float, xb: float, fb: float, x: float, ftol: float) -> float:
    """Root of S(x) = dx on the bracket (xa, fa), (xb, fb), by Newton steps from x, Brent's as a guard.

    Every evaluated point tightens the bracket; at a step that would leave it Brent's method takes over,
    so it never leaves the piece. Ends when |S - dx| <= ftol or the step is below rounding of x.
    """
    dx, v0, a0, v_rd, _, amax, jmax = state
    if fa > 0.0:
        xa, xb, fa, fb = xb, xa, fb, fa  # xa: S < dx, xb: S > dx
    xtol = 1e-14 * (abs(xa) + abs(xb))
    for _ in range(_MAX_ITER):
        s, ds, _, _, _ = _shape_x(x, v0, a0, v_rd, amax, jmax)
        f = s - dx
        if f <= ftol and f >= -ftol:
            return x
        if f < 0.0:
            xa, fa = x, f
        else:
            xb, fb = x, f
        xn = x - f / ds if ds != 0.0 else xa
        if not (xa < xn < xb or xb < xn < xa):
            # Near the dip's flat bottom Newton overshoots: Brent takes over on the bracket found so far.
            return _root(_residual_x, state, xa, fa, xb, fb, xtol, ftol)
        step = xn - x
        if -xtol <= step <= xtol:
            return xn
        x = xn
    return x


def _shortest(found: list[_Candidate], v0: float, a0: float, amax: float, jmax: float) -> Plan:
    """The plan of the candidate root that lands soonest (several roots: the shortest plan wins)."""
    best = found[0]
    if len(found) > 1:
        best_t = float("inf")
        for cand in found:
            val, sign = cand
            if sign is None:
                t = _shape(v0, a0, val, amax, jmax)[1]
            else:
                t = _ease(sign * v0, sign * a0, val, amax, jmax)[6]
            if t < best_t:
                best_t = t
                best = cand
    val, sign = best
    if sign is None:
        return _cruise_plan(v0, a0, val, 0.0, amax, jmax)
    segs = _ease_segments(sign * v0, sign * a0, val, sign, amax, jmax)
    return segs, _duration(segs), 0.0


def _residual_stretch(
    u: float, duration: float, dx: float, v0: float, a0: float, amax: float, jmax: float
) -> float:
    s, t = _shape(v0, a0, u, amax, jmax)
    return t + (dx - s) / u - duration


def stretch_to(
    duration: float,
    dx: float,
    v0: float,
    a0: float,
    peak: float,
    best: float,
    vmax: float,
    amax: float,
    jmax: float,
    hint: float | None = None,
) -> Plan | None:
    """A plan to rest at dx that takes `duration` seconds, made by lowering |peak| and cruising at it.

    `peak` and `best` are the peak velocity and duration of the time-optimal plan (best < duration). Returns
    (segments, duration, peak) or None when lowering the peak cannot reach that duration: an axis braking
    exactly onto its target has no peak to lower, and a few moving states have no such plan. The stretched
    plan keeps every bound the time-optimal one keeps, since only the peak velocity shrinks; its duration
    matches to 1e-7 relative, far below a cycle. `hint`, a guess of the stretched peak (the previous
    cycle's), only speeds up the search.
    """
    if abs(peak) <= 1e-9 * vmax:
        # Braking onto the target, give or take rounding: no peak worth lowering.
        return None
    tol = 1e-7 * duration
    at_rest = v0 == 0.0 and a0 == 0.0
    # From rest the model below is exact, so no hint is needed there.
    hinted = hint is not None and not at_rest and 0.0 < hint / peak < 1.0
    # Model: T(u) ~ tau(|u|) + e/u + c, exact from rest (tau: time to brake from |u|, e = dx, c = 0). Here
    # e = dx - S(0) (beyond the stopping point) and c is fitted at the hint (the previous cycle's stretched
    # peak) or at the optimum, then refitted once at the first evaluated peak; from those two nearby points
    # secant steps converge in a few evaluations. Every evaluated point also tightens the bracket [lo, hi]
    # (g(lo) > 0 > g(hi)) kept for the fallback.
    e = dx
    if not at_rest:
        h = 0.5 * a0 * a0
        stop = _stop(v0, a0, v0 + (h if a0 >= 0.0 else -h) / jmax, amax, jmax)
        e = dx - stop
        if abs(e) <= 1e-12 * (abs(dx) + abs(stop)) or (e > 0.0) != (peak > 0.0):
            # Braking onto the target (or reversing toward it): there is no cruise to lengthen, though a
            # previous stretched peak may still be polished into a plan.
            return (
                _polish_stretch(duration, dx, v0, a0, peak, best, amax, jmax, hint)
                if hint and hinted
                else None
            )
    hi, g_hi = peak, best - duration
    u: float | None = hint
    if not hinted:
        c = best - _brake_time(abs(peak), amax, jmax) - e / peak
        u = _model_peak(duration - c, e, peak, amax, jmax)
    if not at_rest and u is not None and 0.0 < u / peak < 1.0:
        plan = _stretch_newton(duration, dx, v0, a0, u, peak, amax, jmax, tol)
        if plan is not None:
            return plan
    done, plan, lo, g_lo, hi, g_hi = _secant_stretch(
        duration, dx, v0, a0, u, peak, e, hi, g_hi, amax, jmax, tol
    )
    if done:
        return plan
    if lo is None:
        bracket = _bracket_low(duration, dx, v0, a0, hi, g_hi, amax, jmax)
        if bracket is None:
            return None
        lo, g_lo, hi, g_hi = bracket
    args = (duration, dx, v0, a0, amax, jmax)
    u = _root(_residual_stretch, args, hi, g_hi, lo, g_lo, 0.0, tol)
    return _stretched(u, duration, dx, v0, a0, amax, jmax)


def _secant_stretch(
    duration: float,
    dx: float,
    v0: float,
    a0: float,
    u: float | None,
    peak: float,
    e: float,
    hi: float,
    g_hi: float,
    amax: float,
    jmax: float,
    tol: float,
) -> tuple[bool, Plan | None, float | None, float, float, float]:
    """stretch_to's secant steps from the peak u: (True, the plan or None) when a step met `duration`
    within tol, else (False, None) with the bracket (lo, g(lo), hi, g(hi)) they tightened (lo None: no
    plan too slow was met)."""
    lo: float | None = None
    g_lo = 0.0
    u_prev = g_prev = 0.0
    for k in range(8):
        if u is None or not 0.0 < u / peak < 1.0:
            break
        if lo is not None and not 0.0 < (u - lo) / (hi - lo) < 1.0:
            break
        s, t = _shape(v0, a0, u, amax, jmax)
        cruise = (dx - s) / u
        if cruise < 0.0:
            break
        g = t + cruise - duration
        if abs(g) <= tol:
            return True, _stretched(u, duration, dx, v0, a0, amax, jmax, s), lo, g_lo, hi, g_hi
        if g > 0.0:
            lo, g_lo = u, g
        else:
            hi, g_hi = u, g
        if k == 0:
            c = t + cruise - _brake_time(abs(u), amax, jmax) - e / u
            u_next = _model_peak(duration - c, e, peak, amax, jmax)
        else:
            u_next = u - g * (u - u_prev) / (g - g_prev) if g != g_prev else None
        u_prev, g_prev, u = u, g, u_next
    return False, None, lo, g_lo, hi, g_hi


def _bracket_low(
    duration: float, dx: float, v0: float, a0: float, hi: float, g_hi: float, amax: float, jmax: float
) -> tuple[float, float, float, float] | None:
    """No plan too slow yet: the peak shrunk toward zero until there is one, as (lo, g(lo), hi, g(hi)) with
    hi the last too fast on the way; None when 40 halvings find none."""
    lo = 0.5 * hi
    for _ in range(40):
        s, t = _shape(v0, a0, lo, amax, jmax)
        cruise = (dx - s) / lo
        if cruise >= 0.0:
            g_lo = t + cruise - duration
            if g_lo > 0.0:
                return lo, g_lo, hi, g_hi
            hi, g_hi = lo, g_lo
        lo *= 0.5
    return None


def _half(z: float, amax: float, jmax: float) -> tuple[float, float, float]:
    """(H, dH/dz, tau(|z|)) with H(z) = z tau(|z|) / 2: what a symmetric ramp over the velocity change z
    covers beyond its start velocity (tau: the brake time)."""
    az = z if z >= 0.0 else -z
    if az * jmax <= amax * amax:
        r = sqrt(az / jmax)
        return z * r, 1.5 * r, 2.0 * r
    tau = az / amax + amax / jmax
    return 0.5 * z * tau, az / amax + 0.5 * amax / jmax, tau


def _stretch_newton(
    duration: float,
    dx: float,
    v0: float,
    a0: float,
    u: float,
    peak: float,
    amax: float,
    jmax: float,
    tol: float,
) -> Plan | None:
    """The stretched plan by Newton steps from the peak u (0 < u / peak < 1) on an exact closed form.

    With the transfer written as in _lean_s (its symmetric part from `base` = w or v_rd, and the ramp of t s
    with its lead L), u (T + cruise - duration) = u T - S + dx - duration u is
    G(u) = H(u - base) + H(u) + u (+-t - duration) + dx - L (see _half), smooth in u. A plan is returned only
    at a peak with |G| <= tol |u| and a cruise >= 0; None when a step leaves (0, peak) or they do not settle
    within a few steps: the bracketing secant of stretch_to then decides.
    """
    h = 0.5 * a0 * a0
    v_rd = v0 + (h if a0 >= 0.0 else -h) / jmax
    _, _, w, t, lead_same, lead_other, _, _ = _lean_consts(v0, a0, v_rd, amax, jmax)
    for _ in range(8):
        if not 0.0 < u / peak < 1.0:
            return None
        if (u >= v_rd) == (a0 >= 0.0):
            base, k, lead = w, -t - duration, lead_same
        else:
            base, k, lead = v_rd, t - duration, lead_other
        hc, dhc, tau_c = _half(u - base, amax, jmax)
        hu, dhu, _ = _half(u, amax, jmax)
        g = hc + hu + u * k + dx - lead
        bound = tol * u if u > 0.0 else -tol * u
        if -bound <= g <= bound:
            s = lead + base * tau_c + hc + hu
            return _stretched(u, duration, dx, v0, a0, amax, jmax, s, _x_of(u, v_rd, jmax))
        slope = dhc + dhu + k
        if slope == 0.0:
            return None
        u -= g / slope
    return None


# What stretch_warm and duration_bound need of a state inside the limits (see warm_constants):
# (v_rd, w, t, lead on the side of a0, lead on the other side, S(v_rd), S(0), 1.0 if a0 >= 0 else -1.0,
# v_rd tau(|v_rd|)).
Warm = tuple[float, float, float, float, float, float, float, float, float]


# What an axis's warm planning needs of its limits alone, computed once per axis (see axis_constants):
# (v_max, a_max, j_max, a_max^2, a_max / j_max, 2 a_max^3, sqrt(j_max), (a_max / j_max)^2, -v_max, -a_max,
# -j_max, a_max / (2 j_max), 1e-9 v_max, 0.999 v_max, 0.5 v_max).
Axis = tuple[
    float, float, float, float, float, float, float, float, float, float, float, float, float, float, float
]


def axis_constants(vmax: float, amax: float, jmax: float) -> Axis:
    """The constants of one axis's limits that the *_axis functions take, each the float the functions
    without the suffix compute from the limits on every call (so both give the same floats)."""
    ca = amax / jmax
    a2, a3x2, ca2 = amax * amax, 2.0 * amax * amax * amax, ca * ca
    head = (vmax, amax, jmax, a2, ca, a3x2, sqrt(jmax), ca2)
    return (*head, -vmax, -amax, -jmax, 0.5 * ca, 1e-9 * vmax, 0.999 * vmax, 0.5 * vmax)


def warm_constants(v0: float, a0: float, vmax: float, amax: float, jmax: float) -> Warm | None:
    """warm_constants_axis with the limits' constants computed here."""
    return warm_constants_axis(v0, a0, axis_constants(vmax, amax, jmax))


def warm_constants_axis(v0: float, a0: float, k: Axis) -> Warm | None:
    """The constants of the symmetric decomposition (see _lean_s) with S(v_rd) and the stop S(0), or None
    for a state beyond the limits (|v0| > v_max, |a0| > a_max or |v_rd| > v_max), which they do not serve.

    k is axis_constants of the limits. The same floats as plan_to_rest computes for the state (so
    plan_warm's plan is plan_to_rest's)."""
    # One unpacking of the tuple costs less than indexing it item by item.
    vmax, amax, jmax, a2, ca, _, _, _, nvmax, namax, _, _, _, _, _ = k
    aa = a0 if a0 >= 0.0 else -a0
    h = 0.5 * a0 * aa / jmax
    v_rd = v0 + h
    if not (nvmax <= v_rd <= vmax and nvmax <= v0 <= vmax and namax <= a0 <= amax):
        return None
    t = aa / jmax
    w = v0 - h
    lead_same = -t * (w + h / 3.0)
    lead_other = t * (v0 + t * a0 / 3.0)  # _ramp_down
    av = v_rd if v_rd >= 0.0 else -v_rd
    rd_stop = v_rd * (2.0 * sqrt(av / jmax) if av * jmax <= a2 else av / amax + ca)
    s0 = lead_other + 0.5 * rd_stop
    if (v_rd >= 0.0) == (a0 >= 0.0) or v_rd == 0.0:
        stop = s0
    else:
        aw = w if w >= 0.0 else -w
        stop = 0.5 * w * (2.0 * sqrt(aw / jmax) if aw * jmax <= a2 else aw / amax + ca) + lead_same
    return v_rd, w, t, lead_same, lead_other, s0, stop, (1.0 if a0 >= 0.0 else -1.0), rd_stop


def plan_warm(
    dx: float, v0: float, a0: float, c: Warm, vmax: float, amax: float, jmax: float, hint: float | None
) -> Plan:
    """plan_to_rest(dx, v0, a0, vmax, amax, jmax, hint), the same floats, from its constants c (see
    warm_constants) computed already."""
    v_rd = c[0]
    if (v0 == 0.0 and a0 == 0.0) or not -vmax < v_rd < vmax:
        return plan_to_rest(dx, v0, a0, vmax, amax, jmax, hint)
    shape = (a0, v_rd, c[1], c[2], c[3], c[4], amax, jmax)
    plan = _plan_inside(dx, v0, a0, v_rd, vmax, amax, jmax, hint, (shape, c[8], c[6]))
    return plan if plan is not None else _plan_search(dx, v0, a0, vmax, amax, jmax, hint)


def duration_bound(dx: float, c: Warm, vmax: float, amax: float, jmax: float) -> tuple[float, float]:
    """duration_bound_axis with the limits' constants computed here."""
    return duration_bound_axis(dx, c, axis_constants(vmax, amax, jmax))


def duration_bound_axis(dx: float, c: Warm, k: Axis) -> tuple[float, float]:
    """(T, u): the duration T of one plan to rest at dx that keeps every limit, and its peak u.

    So T >= the time-optimal duration. c is warm_constants of the state. The plan is the transfer to the
    peak the time-optimal search starts from (its model: a move from v_rd at zero acceleration, capped at
    v_max), cruising there. Where that peak lies beyond the time-optimal one (no cruise >= 0), the secant
    in the search variable x from S(v_rd) at x = 0, then the secant in u from the stop, are tried once
    each; where none gives a plan, the stop followed by the rest-to-rest move (u = 0 then). Cheap: no search.
    k is axis_constants of the limits.
    """
    v_rd, w, t, lead_same, lead_other, s0, stop, sa, _ = c
    vmax, amax, jmax, _, _, _, _, _, _, _, _, _, _, _, _ = k
    # The model of _plan_inside: u tau(u) = dx - S(v_rd) + v_rd tau(v_rd); v_max caps it below.
    d = dx - 2.0 * lead_other + s0
    u = copysign(min(_rest_peak_axis(abs(d), k), vmax), d)
    if u != 0.0:
        bound, su = _bound_at(u, dx, c, k)
        if bound < _INF:
            return bound, u
        # Beyond the time-optimal peak: secants from the peaks whose S is known land short of it where S
        # is convex (in x from v_rd, in u from 0).
        if (su - s0) * (dx - s0) > 0.0:
            xm = copysign(sqrt(jmax * abs(u - v_rd)), u - v_rd) * (dx - s0) / (su - s0)
            u2 = v_rd + xm * abs(xm) / jmax
            if u2 != 0.0 and abs(u2) <= vmax:
                bound = _bound_at(u2, dx, c, k)[0]
                if bound < _INF:
                    return bound, u2
        if (su - stop) * (dx - stop) > 0.0:
            u3 = u * (dx - stop) / (su - stop)
            bound = _bound_at(u3, dx, c, k)[0]
            if bound < _INF:
                return bound, u3
    # Stop (the transfer to rest: the plan of peak 0), then move from rest.
    if (v_rd <= 0.0) == (sa > 0.0):
        t_stop = _brake_time(abs(w), amax, jmax) - t
    else:
        t_stop = t + _brake_time(abs(v_rd), amax, jmax)
    rest = _plan_from_rest(dx - stop, vmax, amax, jmax)[1]
    return t_stop + rest, 0.0


def _bound_at(u: float, dx: float, c: Warm, lim: Axis) -> tuple[float, float]:
    """(T + cruise, S) of the plan through the peak u != 0 (see duration_bound); inf for no cruise >= 0."""
    v_rd, w, t, lead_same, lead_other, _, _, sa, _ = c
    _, amax, jmax, a2, ca, _, _, _, _, _, _, _, _, _, _ = lim
    if (u >= v_rd) == (sa > 0.0):
        base, k, lead = w, -t, lead_same
    else:
        base, k, lead = v_rd, t, lead_other
    z = u - base
    az = z if z >= 0.0 else -z
    if az * jmax <= a2:
        r = sqrt(az / jmax)
        hc, tau_c = z * r, 2.0 * r
    else:
        tau_c = az / amax + ca
        hc = 0.5 * z * tau_c
    au = u if u >= 0.0 else -u
    hu = u * sqrt(au / jmax) if au * jmax <= a2 else 0.5 * u * (au / amax + ca)
    s = lead + base * tau_c + hc + hu
    if (dx - s) / u >= 0.0:
        return k + (hc + hu + dx - lead) / u, s
    return _INF, s


def stretch_warm(
    duration: float,
    dx: float,
    v0: float,
    a0: float,
    hint: float,
    c: Warm,
    vmax: float,
    amax: float,
    jmax: float,
) -> Plan | None:
    """stretch_warm_axis with the limits' constants computed here."""
    return stretch_warm_axis(duration, dx, v0, a0, hint, c, axis_constants(vmax, amax, jmax))


def stretch_warm_axis(
    duration: float, dx: float, v0: float, a0: float, hint: float, c: Warm, lim: Axis
) -> Plan | None:
    """stretch_to's plan found from a guess of its peak alone, without the time-optimal plan; or None.

    c is warm_constants of the state; `hint` guesses the stretched peak (the previous cycle's). A plan is
    returned only where it is the one stretch_to finds, to its tolerance: at a peak u of the sign of
    dx - S(0) with 1e-9 v_max < |u| < v_max, |T + cruise - duration| <= 1e-7 duration and a cruise >= 0,
    on the branch of S at or below the time-optimal peak u*. S rises with u except on one interval beside
    v_rd, so S(u) <= dx (cruise >= 0, written for u > 0) puts u at or below u* unless u lies beyond v_rd
    with dx short of S(v_rd) (then u* lies before v_rd): that case, the eased brake's targets (whose
    time-optimal plan has no peak to lower) and a stop within rounding of the target are refused. Such a
    plan also proves that this axis can land in `duration`. None means only "not found here": the caller
    plans the axis with plan_to_rest and stretch_to. Newton steps on G of _stretch_newton (where transfer
    and brake both hold a_max, G is quadratic and the step goes to its root). lim is axis_constants of the
    limits.
    """
    v_rd, w, t, lead_same, lead_other, s0, stop, sa, _ = c
    e = dx - stop
    if (e if e >= 0.0 else -e) <= 1e-12 * ((dx if dx >= 0.0 else -dx) + (stop if stop >= 0.0 else -stop)):
        return None
    g = 1.0 if e > 0.0 else -1.0
    if a0 * v_rd < 0.0 and (stop <= dx <= s0 or s0 <= dx <= stop):
        return None
    vmax, amax, jmax, a2, ca, _, _, _, _, _, _, hca, lo, v999, v_half = lim
    tol = 1e-7 * duration
    # The root lies in (lo, hi) in |u|: G g > 0 (too slow) below it, G g < 0 above it up to the time-optimal
    # peak. Every evaluation narrows that bracket, and a Newton step that leaves it is a bisection. A guess
    # of the wrong sign is mirrored, a peak at v_max (a cruise) is a guess from just below it.
    hi = vmax
    ah = hint if hint >= 0.0 else -hint
    au = (ah if ah < v999 else v999) if ah > lo else v_half
    probed = False
    rising = sa > 0.0
    k_same, k_other = -t - duration, t - duration
    for _ in range(10):
        u = g * au
        if (u >= v_rd) == rising:
            base, k, lead = w, k_same, lead_same
        else:
            base, k, lead = v_rd, k_other, lead_other
        z, az, held, rc, hc, dhc, hu, dhu = _warm_halves(u, au, base, lim)
        r = hc + hu + u * k + dx - lead
        if au >= hi:
            # The cruise at v_max: still too slow there (the time-optimal plan, when it cruises) or no
            # plan to tell: this axis is not shown faster here.
            tau_c = 2.0 * rc if az * jmax <= a2 else az / amax + ca
            if g * r > 0.0 or (dx - (lead + base * tau_c + hc + hu)) / u < 0.0:
                return None
        elif -(bound := tol * au) <= r <= bound:
            tau_c = 2.0 * rc if az * jmax <= a2 else az / amax + ca
            s = lead + base * tau_c + hc + hu
            return _warm_plan(u, z, s, duration, dx, v0, a0, c, lim)
        gr = g * r
        if gr > 0.0:
            lo = au
        else:
            hi = au
        slope = dhc + dhu + k
        step = _warm_step(held and (z >= 0.0) == (g > 0.0), slope, gr, amax)
        if lo < au - step < hi:
            au -= step
        elif hi == vmax and not probed and au - step >= hi:
            probed = True
            au = vmax
        else:
            au = 0.5 * (lo + hi)
    return None


def _warm_halves(
    u: float, au: float, base: float, lim: Axis
) -> tuple[float, float, bool, float, float, float, float, float]:
    """stretch_warm_axis's H(z) = z tau(|z|) / 2 and its slope (see _half), for z = u - base and z = u
    (au = |u|): (z, |z|, held, rc, H(z), H'(z), H(u), H'(u)). held: both hold a_max; rc = sqrt(|z| / j_max)
    where |z| j_max <= a_max^2 (else 0.0, unused), for tau(|z|) = 2 rc, needed only where a plan is
    returned or refused."""
    _, amax, jmax, a2, ca, _, _, _, _, _, _, hca, _, _, _ = lim
    z = u - base
    az = z if z >= 0.0 else -z
    held = az * jmax > a2
    rc = 0.0
    if not held:
        rc = sqrt(az / jmax)
        hc, dhc = z * rc, 1.5 * rc
    else:
        q = az / amax
        hc, dhc = 0.5 * z * (q + ca), q + hca
    if au * jmax <= a2:
        ru = sqrt(au / jmax)
        hu, dhu = u * ru, 1.5 * ru
        held = False
    else:
        q = au / amax
        hu, dhu = 0.5 * u * (q + ca), q + hca
    return z, az, held, rc, hc, dhc, hu, dhu


def _warm_step(quadratic: bool, slope: float, gr: float, amax: float) -> float:
    """stretch_warm_axis's step in |u| from G g = gr with slope `slope`. quadratic: transfer and brake both
    hold a_max, z and u of one sign, where G is exactly quadratic (G'' = 2 g / a_max), so the step goes to
    its root nearest au (the one Newton's steps approach); else a Newton step (0.0 on a flat slope)."""
    if quadratic:
        disc = slope * slope - 4.0 * gr / amax
        den = (slope + sqrt(disc) if slope > 0.0 else slope - sqrt(disc)) if disc >= 0.0 else 0.0
        return 2.0 * gr / den if den != 0.0 else 0.0
    return gr / slope if slope != 0.0 else 0.0


def _warm_plan(
    u: float,
    z: float,
    s: float,
    duration: float,
    dx: float,
    v0: float,
    a0: float,
    c: Warm,
    k: Axis,
) -> Plan | None:
    """stretch_warm's plan at its root u, where S(u) = s; None where it must refuse (see stretch_warm).

    z = u - base of the symmetric decomposition, so the transfer's squared peak acceleration is j_max |z|:
    the segments of _segments (and their total, term by term) to rounding, without the search variable.
    """
    # Sign tests instead of products with +-1, and the jerks picked rather than negated: the same floats.
    _, amax, jmax, a2, ca, _, _, _, _, _, nj, _, _, _, _ = k
    v_rd = c[0]
    if u > 0.0:
        if u > v_rd and dx < c[5]:
            return None
        au, jb, je = u, nj, jmax
    else:
        if u < v_rd and dx > c[5]:
            return None
        au, jb, je = -u, jmax, nj
    cruise = (dx - s) / u
    if cruise < 0.0:
        return None
    if z >= 0.0:
        sq, j3 = jmax * z, nj
    else:
        sq, j3 = -(jmax * z), jmax
    if sq > a2:
        ap = amax if z >= 0.0 else -amax
        j1 = jmax if ap >= a0 else nj
        t2 = (u - ap * amax / (2.0 * jmax) - v0 - (a2 - a0 * a0) / (2.0 * j1)) / ap
        if t2 < 0.0:
            t2 = 0.0
        t3 = ca
    else:
        rq = sqrt(sq)
        ap = rq if z >= 0.0 else -rq
        j1 = jmax if ap >= a0 else nj
        t2 = 0.0
        t3 = rq / jmax
    t1 = (ap - a0) / j1
    if au * jmax <= a2:
        tb1 = sqrt(au / jmax)
        tb2 = 0.0
    else:
        tb1 = ca
        tb2 = au / amax - tb1
    total = t1 + t2 + t3 + cruise + tb1 + tb2 + tb1
    miss = total - duration
    if miss > 1e-6 * duration or -miss > 1e-6 * duration:
        return None
    return (t1, j1, t2, 0.0, t3, j3, cruise, 0.0, tb1, jb, tb2, 0.0, tb1, je), total, u


def _polish_stretch(
    duration: float,
    dx: float,
    v0: float,
    a0: float,
    peak: float,
    best: float,
    amax: float,
    jmax: float,
    hint: float,
) -> Plan | None:
    """The previous stretched peak `hint` (0 < hint / peak < 1) polished by a short secant into a plan.

    T grows without bound as the peak goes to zero, hence the infinite value at that end of the bracket.
    """
    args = (duration, dx, v0, a0, amax, jmax)
    tol = 1e-7 * duration
    inf = float("inf")
    u, ua, ga, ub, gb = _polish(
        _residual_stretch, args, hint, peak, best - duration, 0.0, inf, 1e-7 * hint, tol
    )
    if u is None and gb != inf and ga != inf:
        u = _root(_residual_stretch, args, ua, ga, ub, gb, 0.0, tol)
    return None if u is None else _stretched(u, duration, dx, v0, a0, amax, jmax)


def _brake_time(speed: float, amax: float, jmax: float) -> float:
    """Time of the jerk-limited brake from |v| = speed at zero acceleration to rest."""
    if speed * jmax <= amax * amax:
        return 2.0 * sqrt(speed / jmax)
    return speed / amax + amax / jmax


def _model_peak(r: float, e: float, peak: float, amax: float, jmax: float) -> float | None:
    """The u, of the sign of peak and with |u| < |peak|, solving brake_time(|u|) + e / u = r; None if none."""
    e = abs(e)
    if r <= 0.0 or e == 0.0:
        return None
    ca = amax / jmax
    # Holding a_max while braking: |u|^2 / a_max + (a_max / j_max - r) |u| + e = 0, smaller root.
    b = r - ca
    disc = b * b - 4.0 * e / amax
    if disc >= 0.0 and b > 0.0:
        w = 0.5 * amax * (b - sqrt(disc))
        if w * jmax >= amax * amax:
            return copysign(w, peak)
    # Without the hold: 2 s / sqrt(j) + e / s^2 = r with s = sqrt(|u|); Newton from below, where the
    # left-hand side is convex and decreasing.
    k = 2.0 / sqrt(jmax)
    sv = sqrt(e / r)
    for _ in range(30):
        f = k * sv + e / (sv * sv) - r
        df = k - 2.0 * e / (sv * sv * sv)
        if df >= 0.0:
            return None
        step = f / df
        sv -= step
        if sv <= 0.0:
            return None
        if -1e-7 * sv <= step <= 1e-7 * sv:
            # A model's root, a first guess: closer is pointless.
            break
    return copysign(sv * sv, peak)


def _stretched(
    u: float,
    duration: float,
    dx: float,
    v0: float,
    a0: float,
    amax: float,
    jmax: float,
    s: float | None = None,
    x: float | None = None,
) -> Plan | None:
    """The plan cruising at u, or None if it would cruise backward or miss `duration`; s is S(u) if known.

    x, when known, is u's search variable (see _transfer).
    """
    if s is None:
        s = _shape(v0, a0, u, amax, jmax)[0]
    cruise = (dx - s) / u
    if cruise < 0.0:
        return None
    segs = _segments(v0, a0, u, cruise, amax, jmax, x)
    # sum(segs[0::2]) (as _duration), term by term in the same order: the same float.
    total = segs[0] + segs[2] + segs[4] + cruise + segs[8] + segs[10] + segs[12]
    if abs(total - duration) > 1e-6 * duration:
        return None
    return segs, total, u


def advance(segs: Segments, dt: float, p: float, v: float, a: float) -> tuple[float, float, float]:
    """State (p, v, a) after following the segments for dt seconds, integrating the constant jerks exactly."""
    left = dt
    for k in range(0, len(segs), 2):
        t = segs[k]
        j = segs[k + 1]
        if t > left:
            t = left
        p += t * (v + t * (0.5 * a + t * j / 6.0))
        v += t * (a + 0.5 * t * j)
        a += t * j
        left -= t
        if left <= 0.0:
            break
    return p, v, a


def follow(
    segs: Segments, dt: float, p: float, v: float, a: float
) -> tuple[float, float, float, Segments, float]:
    """Like advance, also returning what is left of the plan: (p, v, a, remaining segments, duration)."""
    left = dt
    n = len(segs)
    k = 0
    while k < n:
        t = segs[k]
        j = segs[k + 1]
        if t > left:
            p += left * (v + left * (0.5 * a + left * j / 6.0))
            v += left * (a + 0.5 * left * j)
            a += left * j
            rest = (t - left, j) + segs[k + 2 :]
            return p, v, a, rest, _duration(rest)
        p += t * (v + t * (0.5 * a + t * j / 6.0))
        v += t * (a + 0.5 * t * j)
        a += t * j
        left -= t
        k += 2
    return p, v, a, (), 0.0


@dataclass(frozen=True)
class OtgPlan:
    """One axis's remaining plan, as it stands before the next step.

    `segments` is a tuple of (duration s, jerk) pairs of piecewise-constant jerk starting from (position,
    velocity, acceleration); `duration` is their total in seconds (0 when at rest on the target);
    `peak_velocity` is the velocity between transfer and brake (0 for a plan that only brakes) and `target`
    where the plan ends, at rest.
    """

    position: float
    velocity: float
    acceleration: float
    target: float
    segments: tuple[tuple[float, float], ...]
    duration: float
    peak_velocity: float

    def sample(self, t: float) -> tuple[float, float, float]:
        """(position, velocity, acceleration) t s into the plan; exactly (target, 0, 0) from its end on."""
        if t >= self.duration:
            return self.target, 0.0, 0.0
        if t <= 0.0:
            return self.position, self.velocity, self.acceleration
        flat = tuple(x for seg in self.segments for x in seg)
        return advance(flat, t, self.position, self.velocity, self.acceleration)
