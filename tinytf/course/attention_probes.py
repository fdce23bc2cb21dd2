"""Attention as selection and averaging (course report 004 §1), built in closed form and checked numerically.

One query q against n keys K (n, d) and values V (n, d) gives weights w = softmax(scale * q K^T) and
output w V. The seed does not scale the scores, so `scale` defaults to 1 (1/sqrt(d) for the scaled
dot product only needs a sqrt(d)-times longer query).

Not the course report's `torch.linalg.lstsq` for q K^T = a target score vector such as (100, 0, 0, 0):
with n > d those n equations in d unknowns are generally infeasible, and least squares silently
returns something else. Softmax only sees score *differences*, so we ask for just what we need:

    winners (the set S to select or average) get one common score c, via u.(k_s - k_s0) = 0,
    every other key scores at least m below it,                    via u.(k_s0 - k_l) >= 1,

and set q = m * u / scale. These are n - 1 linear conditions on u. When they are linearly
independent (n - 1 <= d, the course report's 4 keys in R^3) the pseudo-inverse solves them with equality;
otherwise a small LP finds a u if one exists. None exists when a key to be selected lies inside
the convex hull of the others: no query can select it, and the probe says so instead of passing.

Guarantee: the losers' total weight is L <= (n - |S|) e^{-m}; each weight is off by at most L and
the output by at most 2 L max|V|. Choosing m = log(n / tol) therefore meets `tol` by construction;
the numbers in the table are measured, not these bounds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from scipy.optimize import linprog
from torch import Tensor


@dataclass
class Probe:
    """One construction and its check. `query` is (d,) or (n, d); `key` is the replaced key, if any."""

    name: str
    method: str
    query: Tensor | None
    key: Tensor | None
    weights: Tensor | None  # achieved softmax weights, (n,) or (n, n)
    target: Tensor  # target weights, same shape
    weight_err: float  # max |weights - target|
    output_err: float  # max |weights V - target V|
    passed: bool


def make_kv(seed: int = 0, n: int = 4, d: int = 3) -> tuple[Tensor, Tensor]:
    """A fixed random key and value set (float64, so the checks measure the math, not rounding)."""
    if n < 3 or d < 2:
        raise ValueError(f"probes need n >= 3 keys in d >= 2 dimensions, got n={n}, d={d}")
    g = torch.Generator().manual_seed(seed)
    K = torch.randn(n, d, generator=g, dtype=torch.float64)
    V = torch.randn(n, d, generator=g, dtype=torch.float64)
    return K, V


def attend(q: Tensor, K: Tensor, V: Tensor, scale: float = 1.0) -> tuple[Tensor, Tensor]:
    """softmax(scale * q K^T) V for one query (d,) or a stack of queries (m, d). Returns (weights, output)."""
    w = torch.softmax(scale * (q @ K.T), dim=-1)
    return w, w @ V


def margin_for(n: int, tol: float) -> float:
    """Score gap m with (n - 1) e^{-m} < tol: enough for any selection or averaging over n keys."""
    return math.log(n / tol)


def _direction(K: Tensor, winners: list[int]) -> tuple[Tensor | None, str]:
    """u with equal scores on `winners` and every other key at least 1 lower (see module docstring)."""
    s0, others = winners[0], [j for j in range(len(K)) if j not in winners]
    eq = torch.stack([K[s] - K[s0] for s in winners[1:]]) if len(winners) > 1 else K[:0]
    gt = torch.stack([K[s0] - K[j] for j in others])
    A = torch.cat([eq, gt])
    b = torch.cat([torch.zeros(len(eq), dtype=K.dtype), torch.ones(len(gt), dtype=K.dtype)])
    if torch.linalg.matrix_rank(A) == len(A):
        # full row rank: the minimum-norm solution satisfies every condition with equality
        return torch.linalg.pinv(A) @ b, "pinv"
    # Too many conditions for d unknowns: maximise the worst gap t over a box, then rescale to t = 1.
    d = K.shape[1]
    c = np.r_[np.zeros(d), -1.0]  # minimise -t
    A_ub = np.c_[-gt.numpy(), np.ones(len(gt))]  # t - gt @ u <= 0
    A_eq, b_eq = (np.c_[eq.numpy(), np.zeros(len(eq))], np.zeros(len(eq))) if len(eq) else (None, None)
    bounds = [(-1, 1)] * d + [(None, 1)]
    res = linprog(c, A_ub=A_ub, b_ub=np.zeros(len(gt)), A_eq=A_eq, b_eq=b_eq, bounds=bounds, method="highs")
    if res.status != 0 or res.x[-1] <= 1e-9:
        return None, "infeasible: no query separates these keys (one lies inside the others' hull)"
    return torch.as_tensor(res.x[:d] / res.x[-1], dtype=K.dtype), "LP"


def _check(name, method, q, key, K, V, target, tol, scale) -> Probe:
    if q is None:
        return Probe(name, method, None, key, None, target, math.inf, math.inf, False)
    w, out = attend(q, K, V, scale)
    w_err = (w - target).abs().max().item()
    out_err = (out - target @ V).abs().max().item()
    # tol bounds each weight; the output can then be off by at most 2 * tol * max|V| (module docstring)
    passed = w_err <= tol and out_err <= 2 * tol * V.abs().max().item()
    return Probe(name, method, q, key, w, target, w_err, out_err, passed)


def _uniform(n: int, idx: list[int], dtype=torch.float64) -> Tensor:
    t = torch.zeros(n, dtype=dtype)
    t[idx] = 1.0 / len(idx)
    return t


def average_query(K, V, idx: list[int], tol: float = 1e-3, scale: float = 1.0, name: str = "") -> Probe:
    """A query whose weights are uniform on `idx` and ~0 elsewhere (one index = selection)."""
    n, m = len(K), margin_for(len(K), tol)
    target = _uniform(n, idx)
    if len(idx) == n:
        # every score equal: q = 0 gives exactly 1/n each (the course report's answer), no tolerance needed
        q, how = torch.zeros(K.shape[1], dtype=K.dtype), "q = 0 (closed form)"
    else:
        u, how = _direction(K, idx)
        q = None if u is None else m * u / scale
        how = how if u is None else f"{how}: gap {m:.2f}"
    return _check(name or f"average {idx}", how, q, None, K, V, target, tol, scale)


def select_query(K, V, i: int = 0, tol: float = 1e-3, scale: float = 1.0) -> Probe:
    """A query that returns v_i: all weight on key i."""
    return average_query(K, V, [i], tol, scale, name=f"select v{i}")


def identity_queries(K, V, tol: float = 1e-3, scale: float = 1.0) -> Probe:
    """Q (n, d) whose row i selects v_i, so softmax(Q K^T) ~ I and softmax(Q K^T) V ~ V."""
    rows = [select_query(K, V, i, tol, scale) for i in range(len(K))]
    target = torch.eye(len(K), dtype=K.dtype)
    bad = [i for i, r in enumerate(rows) if r.query is None]
    if bad:
        return _check("identity Q", f"infeasible for rows {bad}", None, None, K, V, target, tol, scale)
    methods = sorted({r.method for r in rows})
    Q = torch.stack([r.query for r in rows])
    return _check("identity Q", "row i selects v_i; " + ", ".join(methods), Q, None, K, V, target, tol, scale)


def replace_key_to_average(K, V, q: Tensor, tol: float = 1e-3, scale: float = 1.0) -> Probe:
    """New k2 so the query that averaged {0, 1} now averages {0, 1, 2}.

    The seed copies k0 into k2. We take the smallest change to k2 that gives it k0's score:
    k2' = k2 + (q.k0 - q.k2) q / |q|^2, which leaves the rest of k2 alone. Exact in closed form.
    """
    k2 = K[2] + (q @ K[0] - q @ K[2]) * q / (q @ q)
    K2 = K.clone()
    K2[2] = k2
    target = _uniform(len(K), [0, 1, 2])
    return _check("new k2: average v0..v2", "k2 += (q·k0 - q·k2) q/‖q‖²", q, k2, K2, V, target, tol, scale)


def unit_key_to_select(K, V, q: Tensor, tol: float = 1e-3, scale: float = 1.0) -> Probe:
    """A unit-length k2 that selects v2, with the query from the averaging probe made longer if needed.

    Among unit keys, k2 = q/|q| gives the largest possible score, |q| (Cauchy-Schwarz). Its lead over
    the other keys is g = |q| - max_j q.k_j, and softmax needs a lead of m: when g > 0 lengthening q
    by alpha = m / (scale g) selects v2 -- the direction stays, only the length grows. This is the
    course report's point: a unit key cannot out-score long keys, so the query must be long and aligned. If
    g <= 0 (the other keys project further along q than 1), we turn q away from all other keys:
    u with u.k_j <= -1/|w| < 0 for every j != 2 (a `_direction` problem), k2 = u, q = alpha u.
    """
    n, m = len(K), margin_for(len(K), tol)
    others = [j for j in range(n) if j != 2]
    target = _uniform(n, [2])
    u = q / q.norm()
    lead = q.norm() - (K[others] @ q).max()
    if lead > 0:
        alpha = max(1.0, m / (scale * lead.item()))  # never shorten a query that already selects
        how, q_new = f"k2 = q/‖q‖; q lengthened ×{alpha:.2f}", q * alpha
    else:
        # A winner at the origin must beat every other key: w.(0 - k_j) >= 1, i.e. w.k_j <= -1.
        origin = torch.zeros(1, K.shape[1], dtype=K.dtype)
        w, _ = _direction(torch.cat([origin, K[others]]), [0])
        if w is None:  # the other keys surround the origin: no direction points away from all of them
            how = "not constructed: q/‖q‖ cannot lead and the other keys surround the origin"
            return _check("unit k2: select v2", how, None, None, K, V, target, tol, scale)
        u = w / w.norm()  # u.k_j <= -1/|w| < 0 < 1 = u.u: the unit key now leads
        lead = 1 - (K[others] @ u).max()
        q_new = u * m / (scale * lead)
        how = f"q/‖q‖ cannot lead; k2 = u pointing away from all keys, q = {m / (scale * lead.item()):.2f} u"
    K2 = K.clone()
    K2[2] = u
    return _check("unit k2: select v2", how, q_new, u, K2, V, target, tol, scale)


def _fmt(w: Tensor | None) -> str:
    if w is None:
        return "-"
    if w.dim() == 2:  # identity: the diagonal is what matters
        return "diag " + " ".join(f"{x:.3f}" for x in w.diagonal().tolist())
    return " ".join(f"{x:.3f}" for x in w.tolist())


def run_probes(seed: int = 0, n: int = 4, d: int = 3, scale: float = 1.0, tol: float = 1e-3) -> pd.DataFrame:
    """All six exercises of course report 004 §1 on one seeded key/value set; one row per exercise:
    the construction used, ‖q‖ (the longest row for the identity Q), the weights and target (the
    diagonal for the identity), the max abs errors of the weights and the output, and whether both
    are within tol (the output within 2 tol max|V|)."""
    K, V = make_kv(seed, n, d)
    avg01 = average_query(K, V, [0, 1], tol, scale, name="average v0, v1")
    probes = [
        select_query(K, V, 0, tol, scale),
        identity_queries(K, V, tol, scale),
        average_query(K, V, list(range(n)), tol, scale, name="average all"),
        avg01,
    ]
    if avg01.query is not None:  # 5 and 6 reuse the query of 4, as in the seed
        probes += [
            replace_key_to_average(K, V, avg01.query, tol, scale),
            unit_key_to_select(K, V, avg01.query, tol, scale),
        ]
    rows = [
        {
            "exercise": p.name,
            "method": p.method,
            "query_norm": float("nan") if p.query is None else p.query.norm(dim=-1).max().item(),
            "weights": _fmt(p.weights),
            "target": _fmt(p.target),
            "weight_err": p.weight_err,
            "output_err": p.output_err,
            "pass": p.passed,
        }
        for p in probes
    ]
    return pd.DataFrame(rows)


def probes_markdown(df: pd.DataFrame) -> str:
    """The probe table as markdown (errors in scientific notation: they span many decades)."""
    return df.replace(r"\|", r"\\|", regex=True).to_markdown(index=False, floatfmt=".3g")
