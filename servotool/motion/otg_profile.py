"""Seven-segment jerk-limited profiles for one axis: planning to rest, synchronised stretching, exact integration.

Everything here works on plain floats (one axis, consistent units: position, position/s, /s^2, /s^3) because a
handful of scalar operations per call is far cheaper in Python than any array machinery.

A plan from (v0, a0) to rest at displacement dx has the shape

    transfer (v0, a0) -> (u, 0)    up to three segments: jerk toward a peak acceleration, hold it, jerk to zero
    cruise at u                    only when |u| = v_max, or when the plan is stretched for synchronisation
    brake (u, 0) -> (0, 0)         the mirror transfer to rest

and u, the peak velocity, is the only free parameter. S(u), the displacement of transfer plus brake without
cruise, increases with u except for one dip next to v_rd = v0 + a0|a0|/(2 j_max) (where the transfer is just
the ramp of the acceleration to zero). The search variable is x = sign(u - v_rd) sqrt(j_max |u - v_rd|), the
peak acceleration of a transfer that passes through zero acceleration: S has an infinite slope in u at v_rd
but is smooth in x, so a secant-based root finder converges there in a few steps. The domain is split at
x = 0 and x = +-a_max (where the transfer starts to hold its acceleration); every piece whose ends bracket dx
is solved and the shortest plan wins. A piece can also hold two roots that do not bracket (the two sides of
the dip); those plans are never shorter than the root beyond v_rd or the cruise at v_max, so they need no
search.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import copysign, sqrt

__all__ = [
    "OtgPlan",
    "advance",
    "follow",
    "plan_to_rest",
    "stretch_to",
]

_EPS = 2.220446049250313e-16
# Brent iterations are bounded by this; in practice 3 to 12 suffice.
_MAX_ITER = 100

Segments = tuple  # a flat tuple (t0, j0, t1, j1, ...) of segment durations (s) and jerks


def _transfer(v0, a0, u, amax, jmax):
    """Durations and jerks (t1, j1, t2, ap, t3, j3) of the time-optimal move from (v0, a0) to (u, 0).

    Segment 1 ramps the acceleration from a0 to the peak ap with jerk j1, segment 2 holds ap for t2, segment 3
    ramps it to zero with jerk j3. |ap| <= a_max; an a0 beyond a_max is ramped back first.
    """
    h = 0.5 * a0 * a0
    v_rd = v0 + (h if a0 >= 0.0 else -h) / jmax
    d = 1.0 if u >= v_rd else -1.0
    sq = h + d * jmax * (u - v0)
    ap = sqrt(sq) if sq > 0.0 else 0.0
    t2 = 0.0
    if ap > amax:
        ap = d * amax
        j1 = jmax if ap >= a0 else -jmax
        v1 = v0 + (ap * ap - a0 * a0) / (2.0 * j1)
        v2 = u - ap * amax / (2.0 * jmax)
        t2 = (v2 - v1) / ap
        if t2 < 0.0:
            t2 = 0.0
    else:
        ap *= d
        j1 = jmax if ap >= a0 else -jmax
    t1 = (ap - a0) / j1
    t3 = abs(ap) / jmax
    return t1, j1, t2, ap, t3, -d * jmax


def _shape(v0, a0, u, amax, jmax):
    """(S, T): displacement and duration of the transfer to (u, 0) followed at once by the brake to rest.

    This is _transfer plus the closed-form brake, inlined because it is the function every search evaluates.
    """
    h = 0.5 * a0 * a0
    v_rd = v0 + (h if a0 >= 0.0 else -h) / jmax
    d = 1.0 if u >= v_rd else -1.0
    sq = h + d * jmax * (u - v0)
    ap = sqrt(sq) if sq > 0.0 else 0.0
    if ap > amax:
        ap = d * amax
        j1 = jmax if ap >= a0 else -jmax
        v1 = v0 + (ap * ap - a0 * a0) / (2.0 * j1)
        v2 = u - ap * amax / (2.0 * jmax)
        t2 = (v2 - v1) / ap
        if t2 < 0.0:
            t2 = 0.0
        disp = t2 * (v1 + v2) * 0.5
    else:
        ap *= d
        j1 = jmax if ap >= a0 else -jmax
        v1 = v0 + (ap * ap - a0 * a0) / (2.0 * j1)
        v2 = v1
        t2 = 0.0
        disp = 0.0
    t1 = (ap - a0) / j1
    t3 = abs(ap) / jmax
    # Constant-jerk segment: displacement = t (v_start + v_end) / 2 - jerk t^3 / 12.
    disp += t1 * (v0 + v1) * 0.5 - j1 * t1 * t1 * t1 / 12.0
    disp += t3 * (v2 + u) * 0.5 + d * jmax * t3 * t3 * t3 / 12.0
    au = abs(u)
    if au * jmax <= amax * amax:
        tb = 2.0 * sqrt(au / jmax)
    else:
        tb = au / amax + amax / jmax
    # The brake is point-symmetric in velocity, so it covers u * tb / 2.
    return disp + 0.5 * u * tb, t1 + t2 + t3 + tb


def _brent(fn, args, xa, fa, xb, fb, xtol, ftol):
    """Root of fn(x, *args) between xa and xb, where fa and fb have opposite signs (Brent's method).

    Ends when the bracket is narrower than about xtol or |fn| <= ftol; never leaves the bracket.
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
            # Secant or inverse quadratic interpolation, accepted only if it stays well inside the bracket.
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


def _residual_x(x, dx, v0, a0, v_rd, vmax, amax, jmax):
    u = v_rd + x * abs(x) / jmax
    if u > vmax:
        u = vmax
    elif u < -vmax:
        u = -vmax
    return _shape(v0, a0, u, amax, jmax)[0] - dx


def _ease(v0, a0, a1, amax, jmax):
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
        t2 = (a1 + amax) / jmax
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
    disp = (
        t1 * (v0 + v1) * 0.5
        - jmax * t1 * t1 * t1 / 12.0
        + t2 * (v1 + v2) * 0.5
        + jmax * t2 * t2 * t2 / 12.0
        + th * (v2 + v3) * 0.5
        + t3 * v3 * 0.5
        - jmax * t3 * t3 * t3 / 12.0
    )
    return t1, t2, th, t3, a2, disp, t1 + t2 + th + t3


def _residual_ease(a1, dx, v0, a0, amax, jmax):
    return _ease(v0, a0, a1, amax, jmax)[5] - dx


def _x_of(u, v_rd, jmax):
    w = u - v_rd
    return copysign(sqrt(jmax * abs(w)), w)


def _segments(v0, a0, u, cruise, amax, jmax):
    """Flat (duration, jerk) tuple of the plan: transfer to (u, 0), cruise, brake to rest; empty parts dropped."""
    t1, j1, t2, ap, t3, j3 = _transfer(v0, a0, u, amax, jmax)
    au = abs(u)
    if au * jmax <= amax * amax:
        tb1 = sqrt(au / jmax)
        tb2 = 0.0
    else:
        tb1 = amax / jmax
        tb2 = au / amax - tb1
    jb = -jmax if u > 0.0 else jmax
    out = []
    for t, j in ((t1, j1), (t2, 0.0), (t3, j3), (cruise, 0.0), (tb1, jb), (tb2, 0.0), (tb1, -jb)):
        if t > 0.0:
            out.append(t)
            out.append(j)
    return tuple(out)


def _duration(segs):
    total = 0.0
    for k in range(0, len(segs), 2):
        total += segs[k]
    return total


def _ease_segments(v0, a0, a1, sign, amax, jmax):
    t1, t2, th, t3, _, _, _ = _ease(v0, a0, a1, amax, jmax)
    j = sign * jmax
    out = []
    for t, jk in ((t1, j), (t2, -j), (th, 0.0), (t3, j)):
        if t > 0.0:
            out.append(t)
            out.append(jk)
    return tuple(out)


def plan_to_rest(dx, v0, a0, vmax, amax, jmax):
    """Time-optimal plan from velocity v0 and acceleration a0 to rest at displacement dx.

    Returns (segments, duration, peak): segments is a flat tuple (t, jerk, t, jerk, ...) with durations in
    seconds, duration their sum and peak the velocity u at the end of the transfer (0 for an eased brake).
    At rest with dx == 0 the plan is empty. A state inside the limits (|v| <= v_max, |a| <= a_max, and the
    velocity reached by ramping the acceleration to zero, v_rd, within +-v_max) stays inside them; from any
    other state the plan heads back inside at once (|v| never beyond max(|v0|, |v_rd|), |a| never beyond |a0|).
    |jerk| <= j_max always.
    """
    if dx == 0.0 and v0 == 0.0 and a0 == 0.0:
        return (), 0.0, 0.0
    sp, tp = _shape(v0, a0, vmax, amax, jmax)
    if sp <= dx:
        segs = _segments(v0, a0, vmax, (dx - sp) / vmax, amax, jmax)
        return segs, _duration(segs), vmax
    sn, tn = _shape(v0, a0, -vmax, amax, jmax)
    if sn >= dx:
        segs = _segments(v0, a0, -vmax, (sn - dx) / vmax, amax, jmax)
        return segs, _duration(segs), -vmax

    # Here S(-v_max) < dx < S(v_max): at least one piece brackets a root.
    h = 0.5 * a0 * a0
    v_rd = v0 + (h if a0 >= 0.0 else -h) / jmax
    inv_j = 1.0 / jmax
    x_lo = _x_of(-vmax, v_rd, jmax)
    x_hi = _x_of(vmax, v_rd, jmax)
    # A state that decelerates toward v_rd (a0 and v_rd of opposite signs) would reach peaks between 0 and
    # v_rd only by touching zero acceleration on the way down; the eased brake does it faster, so that part
    # of the domain (x between x_zero and 0) is replaced by the eased family.
    eased = (a0 < 0.0 < v_rd or v_rd < 0.0 < a0) and abs(a0) <= amax
    x_zero = _x_of(0.0, v_rd, jmax) if eased else 0.0
    xs = [x_lo]
    fs = [sn - dx]
    for xk in sorted((-amax, x_zero, 0.0, amax)):
        if x_lo < xk < x_hi and xk != xs[-1]:
            xs.append(xk)
            fs.append(_shape(v0, a0, v_rd + xk * abs(xk) * inv_j, amax, jmax)[0] - dx)
    xs.append(x_hi)
    fs.append(sp - dx)
    scale = abs(sn) + abs(sp) + abs(dx)
    ftol = 4.0 * _EPS * scale
    ease_lo = min(x_zero, 0.0)
    ease_hi = max(x_zero, 0.0)

    best_u = 0.0
    best_t = float("inf")
    ease_a1 = None
    for k in range(len(xs) - 1):
        xa = xs[k]
        xb = xs[k + 1]
        fa = fs[k]
        fb = fs[k + 1]
        if eased and ease_lo <= xa and xb <= ease_hi:
            if (fa > 0.0) == (fb > 0.0) and fa != 0.0 and fb != 0.0:
                continue
            # The eased family spans the same end displacements: S(0) at a1 = a0, S(v_rd) at a1 = 0.
            sign = 1.0 if a0 < 0.0 else -1.0
            ev0 = sign * v0
            ea0 = sign * a0
            edx = sign * dx
            ga = _ease(ev0, ea0, ea0, amax, jmax)[5] - edx
            gb = _ease(ev0, ea0, 0.0, amax, jmax)[5] - edx
            if ga == 0.0:
                a1 = ea0
            elif gb == 0.0:
                a1 = 0.0
            elif (ga > 0.0) != (gb > 0.0):
                a1 = _brent(_residual_ease, (edx, ev0, ea0, amax, jmax), ea0, ga, 0.0, gb, 1e-15 * amax, ftol)
            else:
                continue
            t = _ease(ev0, ea0, a1, amax, jmax)[6]
            if t < best_t:
                best_t = t
                ease_a1 = (a1, sign, ev0, ea0)
            continue
        if fa == 0.0:
            xr = xa
        elif fb == 0.0:
            xr = xb
        elif (fa > 0.0) != (fb > 0.0):
            xtol = 1e-14 * (abs(xa) + abs(xb))
            xr = _brent(_residual_x, (dx, v0, a0, v_rd, vmax, amax, jmax), xa, fa, xb, fb, xtol, ftol)
        else:
            continue
        u = v_rd + xr * abs(xr) * inv_j
        u = min(vmax, max(-vmax, u))
        t = _shape(v0, a0, u, amax, jmax)[1]
        if t < best_t:
            best_t = t
            best_u = u
            ease_a1 = None
    if ease_a1 is not None:
        a1, sign, ev0, ea0 = ease_a1
        segs = _ease_segments(ev0, ea0, a1, sign, amax, jmax)
        return segs, _duration(segs), 0.0
    segs = _segments(v0, a0, best_u, 0.0, amax, jmax)
    return segs, _duration(segs), best_u


def _residual_stretch(u, duration, dx, v0, a0, amax, jmax):
    s, t = _shape(v0, a0, u, amax, jmax)
    return t + (dx - s) / u - duration


def stretch_to(duration, dx, v0, a0, peak, vmax, amax, jmax):
    """A plan to rest at dx that takes `duration` seconds, made by lowering |peak| and cruising at it.

    `peak` is the peak velocity of the time-optimal plan, which must be shorter than `duration`. Returns
    (segments, duration, peak) or None when lowering the peak cannot reach that duration: an axis braking
    exactly onto its target (peak 0) has nothing to lower, and a few moving states have no such plan. The
    stretched plan keeps every bound the time-optimal one keeps, since only the peak velocity shrinks.
    """
    if peak == 0.0:
        return None
    args = (duration, dx, v0, a0, amax, jmax)
    # From rest the cruise dominates a long plan, so u ~ dx / duration is a close lower guess; shrink the
    # guess until the plan is too slow, keeping the last too-fast one as the other end of the bracket.
    hi = peak
    g_hi = None
    lo = dx / duration
    if not 0.0 < lo / peak < 1.0:
        lo = 0.5 * peak
    for _ in range(60):
        s, t = _shape(v0, a0, lo, amax, jmax)
        cruise = (dx - s) / lo
        if cruise >= 0.0:
            g_lo = t + cruise - duration
            if g_lo > 0.0:
                break
            hi, g_hi = lo, g_lo
        lo *= 0.25
    else:
        return None
    if g_hi is None:
        g_hi = _residual_stretch(hi, *args)
        if g_hi > 0.0:
            return None
    u = _brent(_residual_stretch, args, hi, g_hi, lo, g_lo, 0.0, 1e-13 * duration)
    s = _shape(v0, a0, u, amax, jmax)[0]
    cruise = (dx - s) / u
    if cruise < 0.0:
        return None
    segs = _segments(v0, a0, u, cruise, amax, jmax)
    total = _duration(segs)
    if abs(total - duration) > 1e-9 * duration:
        return None
    return segs, total, u


def advance(segs, dt, p, v, a):
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


def follow(segs, dt, p, v, a):
    """Like advance, and also return what is left of the plan: (p, v, a, remaining segments, their duration)."""
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
    velocity, acceleration); `duration` is their total (0 when at rest on the target); `peak_velocity` is the
    velocity held between transfer and brake and `target` where the plan ends at rest.
    """

    position: float
    velocity: float
    acceleration: float
    target: float
    segments: tuple[tuple[float, float], ...]
    duration: float
    peak_velocity: float

    def sample(self, t: float) -> tuple[float, float, float]:
        """(position, velocity, acceleration) t seconds into the plan; the exact target at and after its end."""
        if t >= self.duration:
            return self.target, 0.0, 0.0
        if t <= 0.0:
            return self.position, self.velocity, self.acceleration
        flat = tuple(x for seg in self.segments for x in seg)
        return advance(flat, t, self.position, self.velocity, self.acceleration)
