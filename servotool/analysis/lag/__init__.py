"""Commanded-to-measured lag from a ramp run: per-pass figures, the delta = v*L fit, and a dynamic model.

Definitions (all on the host clock the run stamped every send and every receive with):

* c(t): the commanded joint as a function of time, the setpoints on the wire joined linearly between their
  actual send times. m_i: the measured joint in state frame i, received at t_i.
* True delta at a state frame: d_i = (c(t_i) - m_i) * sign(v), i.e. how far behind the command the arm was at
  the instant the sample arrived. During a cruise at speed v an arm that executes the command L seconds late
  shows d_i = v * L exactly, so L = mean(d) / v.
* Guard-view delta at a send tick k: (s_k - m_latest) * sign(v), the setpoint just sent against the newest
  frame received before it. This is what a divergence guard sees; it exceeds the true delta by v times the
  age of that frame (half a state period on average), so it is reported separately as the guard-view lag.
* Midpoint lag: the time between the command and the measured joint crossing the middle of the pass.
  It uses no speed at all, so it cross-checks delta / v independently.
* Dynamic model over the recording, ramp corners included: measured(t) = F_tau[c(. - L)](t) + k * sign(v) + b
  (see dynamics).
* Link latency: where the recording allows it, L is the controller's own lag; the plain send-to-receive
  figure is kept as host_fit; the guard view always uses raw host times (see link).

The package is split by job: results (the result types), origin (the fit through the origin and its
checks, guard advice), dynamics (the dynamic model), link (link latency), passes (per-pass building
blocks) and driver (analyze_lag, combine_lag).
"""

from servotool.analysis.lag.driver import analyze_lag, combine_lag
from servotool.analysis.lag.dynamics import (
    FIT_GRID_S,
    FRICTION_V_EPS,
    TAU_FLOOR_S,
    first_order_response,
    fit_dynamics,
    simulate,
)
from servotool.analysis.lag.link import (
    DRIFT_MIN_SPAN_S,
    MIN_KEPT_FRACTION,
    UNCERTAIN_RTT_S,
    link_latency,
)
from servotool.analysis.lag.origin import fit_through_origin, guard_advice, midpoint_check, model_check
from servotool.analysis.lag.passes import CRUISE, MIN_FRAMES, SETTLE, rest_noise
from servotool.analysis.lag.results import (
    CombinedLag,
    Dynamics,
    GuardAdvice,
    LagResult,
    LinkLatency,
    MidpointCheck,
    ModelCheck,
    Noise,
    OriginFit,
    PassLag,
)

__all__ = [
    "CRUISE",
    "DRIFT_MIN_SPAN_S",
    "FIT_GRID_S",
    "FRICTION_V_EPS",
    "MIN_FRAMES",
    "MIN_KEPT_FRACTION",
    "SETTLE",
    "TAU_FLOOR_S",
    "UNCERTAIN_RTT_S",
    "CombinedLag",
    "Dynamics",
    "GuardAdvice",
    "LagResult",
    "LinkLatency",
    "MidpointCheck",
    "ModelCheck",
    "Noise",
    "OriginFit",
    "PassLag",
    "analyze_lag",
    "combine_lag",
    "first_order_response",
    "fit_dynamics",
    "fit_through_origin",
    "guard_advice",
    "link_latency",
    "midpoint_check",
    "model_check",
    "rest_noise",
    "simulate",
]
