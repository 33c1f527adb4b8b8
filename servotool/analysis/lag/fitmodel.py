"""The dynamic model's residuals and their exact derivatives, for the dynamic fit.

The model is the one `simulate` computes (the commanded stream joined linearly between its send times,
through the exact discrete first-order filter on a uniform FIT_GRID_S grid, read by linear interpolation,
its slope by interpolated central differences), with one change that makes it cheap: the grid is laid on
the command, not on the measured frames, so the filter depends on tau alone and the dead time L only moves
where the frames read the filtered command. The two differ by where the grid points fall between
setpoints, a second-order effect of a few microseconds of lag at most. The friction and bias terms are
linear and solved for each (L, tau) (variable projection); the Jacobian is differentiated through that
solve as well, so the optimizer needs no finite differences.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.linalg import blas  # scipy.signal (lfilter) costs a second to import, blas a tenth of that

from servotool.analysis.recording import RecordingError

FIT_GRID_S = 0.001  # simulation step of the dynamic model
# grid cells of one fit, all stretches together: some 2.8 hours of frames at FIT_GRID_S. A recording whose
# times span more (stamped in nanoseconds, a clock that jumped by days) would ask for terabytes
MAX_FIT_CELLS = 10_000_000
FRICTION_V_EPS = 1.0  # deg/s: speed over which the friction term reaches its full value (tanh)
TINY_TAU_S = 1e-9  # below this the filter is the identity
LEAD_CELLS = 2  # grid cells before the first command or frame of a stretch (the model is at rest there)
SINGULAR_RATIO = 1e-12  # a 2x2 normal matrix with det below this times its squared trace is singular


@dataclass
class _Stretch:
    """One stretch of frames simulated on its own: the filtered command on a uniform grid from t0, at rest
    before it; its frames are t_meas[i0:i1]."""

    t0: float
    i0: int
    i1: int
    u: np.ndarray  # the command on the grid
    pos0: np.ndarray  # the frames' places on the grid (in cells) at no dead time
    low: float  # the smallest and largest of pos0
    high: float


def _padded(w: np.ndarray) -> np.ndarray:
    """w with one sample extrapolated linearly at each end (the central difference there then equals
    np.gradient's one-sided one)."""
    return np.concatenate(([2.0 * w[0] - w[1]], w, [2.0 * w[-1] - w[-2]]))


def _cells(wp: np.ndarray, t0: float, h: float, t: np.ndarray) -> tuple[np.ndarray, ...]:
    """(place in cell, previous, this, next, one after) samples around each t of the padded grid wp."""
    n = len(wp) - 2
    pos = (t - t0) / h
    np.maximum(pos, 0.0, out=pos)  # the clip, without np.clip's dispatch (the fit reads the grid ~10 times)
    np.minimum(pos, n - 1.0, out=pos)
    j = np.minimum(pos.astype(np.intp), n - 2)
    return pos - j, wp[j], wp[j + 1], wp[j + 2], wp[j + 3]


def _read_padded(wp: np.ndarray, t0: float, h: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    f, wm, w0, w1, w2 = _cells(wp, t0, h, t)
    s0, s1 = (w1 - wm) / (2.0 * h), (w2 - w0) / (2.0 * h)
    return w0 + f * (w1 - w0), s0 + f * (s1 - s0)


def read_grid(w: np.ndarray, t0: float, h: float, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """w (sampled every h from t0, at rest at its first value before) linearly interpolated at t, and its
    central-difference slope likewise: the values of np.interp over w and np.gradient(w, h), found by
    arithmetic on the uniform grid and with the slope taken only in the cells used."""
    return _read_padded(_padded(w), t0, h, t)


def _read_window(
    wp: np.ndarray, f: np.ndarray, j: np.ndarray, h: float, rates: bool
) -> tuple[np.ndarray, ...]:
    """_read_padded's two values at cells j (place f in the cell) of the padded grid wp; with rates also
    their derivatives by t (the slopes of the interpolants)."""
    # the shifted views' take: no index arrays j + 1, j + 2, j + 3 built, one gather of each cell
    w0 = wp[1:].take(j)
    d0 = wp[2:].take(j)
    dw = d0 - w0
    d0 -= wp.take(j)  # twice h times the central slope at this cell ...
    dd = wp[3:].take(j)
    dd -= w0
    dd -= d0  # ... and its step to the next cell's
    y = f * dw
    y += w0
    dy = f * dd
    dy += d0
    dy *= 0.5 / h
    if not rates:
        return y, dy
    dw *= 1.0 / h
    dd *= 0.5 / h**2
    return y, dy, dw, dd


def _filter_coefficients(h: float, tau: float) -> tuple[float, float, float]:
    """(a, b0, b1) of the exact response to an input linear between samples: y[n] = a y[n-1] + b0 u[n] +
    b1 u[n-1]."""
    a = math.exp(-h / tau)
    g = (1.0 - a) * tau / h
    return a, 1.0 - g, g - a


def filtered(u: np.ndarray, h: float, tau: float, jac: bool) -> tuple[np.ndarray, np.ndarray | None]:
    """The first-order filter's exact response to u (linear between samples h apart, at rest at u[0]) and,
    with jac, its derivative by tau (that of the discrete recursion; at tau = 0 its limit)."""
    if tau <= TINY_TAU_S:
        if not jac:
            return u, None
        return u, np.concatenate(([0.0], (u[:-1] - u[1:]) / h))
    a, b0, b1 = _filter_coefficients(h, tau)
    drive = np.empty_like(u, dtype=float)
    drive[0] = b0 * u[0] + (b1 + a) * u[0]  # at rest at u[0]: y[-1] = u[-1] = u[0]
    np.multiply(u[1:], b0, out=drive[1:])
    drive[1:] += b1 * u[:-1]
    y = _recursion(drive, a)
    if not jac:
        return y, None
    da = a * h / tau**2
    dg = (1.0 - a) / h - a / tau
    drive = np.empty_like(y)
    drive[0] = 0.0  # y[0] = u[0] whatever tau
    drive[1:] = da * y[:-1] - dg * u[1:] + (dg - da) * u[:-1]
    return y, _recursion(drive, a)


def _recursion(drive: np.ndarray, a: float) -> np.ndarray:
    """y[n] = a y[n-1] + drive[n] with y[-1] = 0, in compiled code: the forward substitution of the unit
    lower-bidiagonal system whose subdiagonal is -a (BLAS tbsv). Overwrites drive and returns it."""
    # row 0, the unit diagonal, is never read; laid out in Fortran order as BLAS reads it (a C-ordered
    # band is copied into that order by the wrapper on every call: half the recursion's time)
    band = np.full((drive.size, 2), -a).T
    out: np.ndarray = blas.dtbsv(1, band, drive, lower=1, diag=1, overwrite_x=1)
    return out


@dataclass
class _Response:
    """The model at the frames: position, slope, and their derivatives by L and tau (None: not asked)."""

    y: np.ndarray
    dy: np.ndarray
    y_l: np.ndarray | None = None
    dy_l: np.ndarray | None = None
    y_t: np.ndarray | None = None
    dy_t: np.ndarray | None = None


def _grids(
    t_cmd: np.ndarray, t_meas: np.ndarray, spans: Sequence[tuple[float, int, int]], h: float
) -> list[tuple[float, int, int, int]]:
    """(grid start, cells, first frame, end frame) of each stretch with frames. Raises RecordingError when
    the grids would hold more than MAX_FIT_CELLS cells in all (or a time is not finite)."""
    out = []
    for t_from, i0, i1 in spans:
        if i1 > i0:
            # from the setpoint before t_from: the command moves towards the one at t_from already
            k = int(np.searchsorted(t_cmd, t_from, side="left")) - 1
            t_rest = float(t_cmd[k]) if k >= 0 else t_from
            frames = t_meas[i0:i1]  # in time order as a rule, but not relied on
            t0 = min(t_rest, float(frames.min())) - LEAD_CELLS * h
            cells = (float(frames.max()) - t0) / h
            if not cells <= MAX_FIT_CELLS:
                raise RecordingError(
                    f"the frames span {cells * h:.6g} s, longer than the fit samples "
                    f"({MAX_FIT_CELLS * h:.6g} s): are the times in seconds?"
                )
            out.append((t0, int(math.floor(cells)) + LEAD_CELLS + 2, i0, i1))
    if sum(n for _, n, _, _ in out) > MAX_FIT_CELLS + len(out) * (LEAD_CELLS + 2):
        raise RecordingError(f"the fit's stretches span more than {MAX_FIT_CELLS * h:.6g} s in all")
    return out


class FitModel:
    """The measured frames of one fit and the command they follow; residuals and Jacobians on demand.

    The command is sampled once on a uniform grid per stretch and filtered there (the filter depends on tau
    alone, and is kept for the last tau asked); the dead time only moves where the frames read that grid.
    windows: (start time, first frame, end frame) of each stretch simulated on its own (the command still at
    its start); None simulates all frames in one stretch from the first command."""

    def __init__(
        self,
        t_cmd: np.ndarray,
        q_cmd: np.ndarray,
        t_meas: np.ndarray,
        q_meas: np.ndarray,
        windows: Sequence[tuple[float, int, int]] | None = None,
        h: float = FIT_GRID_S,
    ) -> None:
        self.t_meas, self.q_meas, self.h = t_meas, q_meas, h
        whole = [(float(t_cmd[0]), 0, len(t_meas))] if len(t_meas) else []
        spans: Sequence[tuple[float, int, int]] = whole if windows is None else windows
        self.stretches = []
        for t0, n, i0, i1 in _grids(t_cmd, t_meas, spans, h):
            u = np.interp(t0 + h * np.arange(n), t_cmd, q_cmd)
            pos0 = (t_meas[i0:i1] - t0) / h
            low, high = float(pos0.min()), float(pos0.max())
            self.stretches.append(_Stretch(t0, i0, i1, u, pos0, low, high))
        self._cache: tuple[float, bool, list[tuple[np.ndarray, np.ndarray | None]]] | None = None
        # the linear terms solved at each (L, tau) evaluated: the fit's end needs them again
        self._linear: dict[tuple[float, float], tuple[float, float, float, float, float]] = {}

    @property
    def n(self) -> int:
        return len(self.t_meas)

    def _filtered(self, tau: float, jac: bool) -> list[tuple[np.ndarray, np.ndarray | None]]:
        """Per stretch, the filtered command (padded) and with jac its derivative by tau (padded); the last
        tau's are kept, as a fit asks for the same tau with several lags."""
        if self._cache is None or self._cache[0] != tau or (jac and not self._cache[1]):
            grids = []
            for st in self.stretches:
                w, w_t = filtered(st.u, self.h, tau, jac)
                grids.append((_padded(w), None if w_t is None else _padded(w_t)))
            self._cache = (tau, jac, grids)
        return self._cache[2]

    def response(self, lag: float, tau: float, jac: bool = False, by_tau: bool = True) -> _Response:
        """The model at every frame; with jac its derivatives by L too, and by tau unless by_tau is False."""
        grids = self._filtered(tau, jac and by_tau)
        if len(self.stretches) == 1 and self.stretches[0].i0 == 0 and self.stretches[0].i1 == self.n:
            # one stretch over every frame (a short recording): the arrays as read, no copies into place
            return self._read(self.stretches[0], grids[0], lag, jac)
        n = self.n
        out = _Response(np.empty(n), np.empty(n))
        if jac:
            out.y_l, out.dy_l = np.empty(n), np.empty(n)
            if by_tau:
                out.y_t, out.dy_t = np.empty(n), np.empty(n)
        for st, grid in zip(self.stretches, grids, strict=True):
            sl = slice(st.i0, st.i1)
            part = self._read(st, grid, lag, jac)
            for name in ("y", "dy", "y_l", "dy_l", "y_t", "dy_t"):
                values = getattr(part, name)
                if values is not None:
                    getattr(out, name)[sl] = values
        return out

    def _read(
        self, st: _Stretch, grid: tuple[np.ndarray, np.ndarray | None], lag: float, jac: bool
    ) -> _Response:
        """One stretch's frames, the dead time lag taken off, read from its padded grid (as _read_padded)."""
        wp, wp_t = grid
        cells = len(wp) - 2  # cells of the grid (the padded one has one more at each end)
        shift = lag / self.h
        pos = st.pos0 - shift
        if st.low - shift < 0.0 or st.high - shift > cells - 1.0:
            np.maximum(pos, 0.0, out=pos)  # the clip, without np.clip's dispatch
            np.minimum(pos, cells - 1.0, out=pos)
        j = pos.astype(np.intp)
        if st.high - shift >= cells - 2.0:
            np.minimum(j, cells - 2, out=j)
        f = pos - j
        if not jac:
            return _Response(*_read_window(wp, f, j, self.h, False))
        y, dy, ddt, dsdt = _read_window(wp, f, j, self.h, True)
        np.negative(ddt, out=ddt)
        np.negative(dsdt, out=dsdt)
        out = _Response(y, dy, ddt, dsdt)
        if wp_t is not None:
            out.y_t, out.dy_t = _read_window(wp_t, f, j, self.h, False)
        return out

    def residual_only(self, x: np.ndarray) -> np.ndarray:
        """The residual at x = (L, tau) alone (see residual)."""
        resp = self.response(float(x[0]), float(x[1]))
        f = _friction_column(resp.dy)
        e = self.q_meas - resp.y
        c0, c1, _ = self._solve_linear(float(x[0]), float(x[1]), f, e)
        e -= c0 * f
        e -= c1
        return e

    def _solve_linear(
        self, lag: float, tau: float, f: np.ndarray, e: np.ndarray
    ) -> tuple[float, float, tuple[float, float, float]]:
        """The friction and bias terms (least squares on the columns f and a constant against e), and the
        inverse of their normal matrix as (g00, g01, g11); kept for linear_at."""
        i00, i01, i11 = _inverse_gram_floats(float(f @ f), float(f.sum()), float(len(f)))
        fe, se = float(f @ e), float(e.sum())
        c0, c1 = i00 * fe + i01 * se, i01 * fe + i11 * se
        self._linear[(lag, tau)] = (c0, c1, i00, i01, i11)
        return c0, c1, (i00, i01, i11)

    def linear_at(self, lag: float, tau: float) -> tuple[np.ndarray, np.ndarray]:
        """((friction, bias), the inverse of their normal matrix) at (L, tau): as residual solved them there,
        or solved now."""
        if (lag, tau) not in self._linear:
            self.residual_only(np.array([lag, tau]))
        c0, c1, i00, i01, i11 = self._linear[(lag, tau)]
        return np.array([c0, c1]), np.array([[i00, i01], [i01, i11]])

    def residual(self, x: np.ndarray, fit_tau: bool) -> tuple[np.ndarray, np.ndarray]:
        """(residual, Jacobian) at x = (L,) or (L, tau): measured minus the model with its linear terms
        solved by least squares; the Jacobian includes how those terms move with L and tau.

        The two linear columns are the friction column f and a constant: their normal matrix and products
        are written out from f (the fit evaluates this some ten times a file)."""
        lag, tau = float(x[0]), float(x[1]) if fit_tau else 0.0
        resp = self.response(lag, tau, jac=True, by_tau=fit_tau)
        f = _friction_column(resp.dy)
        e = self.q_meas - resp.y
        c0, c1, (i00, i01, i11) = self._solve_linear(lag, tau, f, e)
        r = e
        r -= c0 * f
        r -= c1
        # d(friction column)/d(slope): the tanh's derivative
        dcol = f * f
        dcol -= 1.0
        if FRICTION_V_EPS != 1.0:
            dcol *= 1.0 / FRICTION_V_EPS
        derivs = [(resp.y_l, resp.dy_l)] + ([(resp.y_t, resp.dy_t)] if fit_tau else [])
        cols = np.empty((len(derivs), self.n))  # the Jacobian by columns: rows here, transposed below
        for p, (y_p, dy_p) in enumerate(derivs):
            da0 = dcol * dy_p
            v = da0 * c0
            v += y_p
            fv, vs = float(f @ v) - float(da0 @ r), float(v.sum())
            col = cols[p]
            np.multiply(f, i00 * fv + i01 * vs, out=col)
            col += i01 * fv + i11 * vs
            col -= v
        jac = cols.T
        return r, jac


def _friction_column(dy: np.ndarray) -> np.ndarray:
    """-tanh(slope / FRICTION_V_EPS), written over dy (the slope read for this evaluation alone)."""
    f = np.tanh(dy if FRICTION_V_EPS == 1.0 else dy / FRICTION_V_EPS, out=dy)
    np.negative(f, out=f)
    return f


def _regular_det(g00: float, g01: float, g11: float) -> float | None:
    """The determinant of the symmetric 2x2 matrix [[g00, g01], [g01, g11]]; None when it is singular (to
    SINGULAR_RATIO of its scale)."""
    det = g00 * g11 - g01 * g01
    return det if abs(det) > SINGULAR_RATIO * (g00 + g11) ** 2 else None


def _inverse_gram_floats(g00: float, g01: float, g11: float) -> tuple[float, float, float]:
    """inverse_gram as its (00, 01, 11) entries, in Python floats (the same divisions as numpy's)."""
    det = _regular_det(g00, g01, g11)
    if det is not None:
        return g11 / det, -g01 / det, g00 / det
    inv = inverse_gram(g00, g01, g11)
    return float(inv[0, 0]), float(inv[0, 1]), float(inv[1, 1])


def inverse_gram(g00: float, g01: float, g11: float) -> np.ndarray:
    """The inverse of the symmetric 2x2 matrix [[g00, g01], [g01, g11]], closed form; the pseudo-inverse
    when it is singular."""
    det = _regular_det(g00, g01, g11)
    if det is not None:
        return np.array([[g11, -g01], [-g01, g00]]) / det
    return np.asarray(np.linalg.pinv(np.array([[g00, g01], [g01, g11]])))
