"""The cost of attention (course report 003), measured: time and memory against sequence length and width.

For a source of length M and a target of length N, with hidden size D:

    encoder self-attention   queries and keys from the source    scores M x M   O(M^2 D)
    decoder self-attention   the same on the target, causal      scores N x N   O(N^2 D)
    encoder-decoder (cross)  target queries x source keys        scores N x M   O(N M D)

Only the attention core is timed (scores, mask, softmax, head merge): the Q/K/V/output projections
cost O(L D^2) whatever the pattern, and would hide the L^2 term we are here to see.

Memory: on CUDA, the allocator's peak during one call less the inputs. CPU torch has no peak
counter, so there the number is analytic: the bytes of the tensors `attention` creates (not BLAS
scratch; a sum, not a peak, though both agree on the L^2 part, as scores and weights are both alive
at the softmax). The causal mask halves nothing: the N x N scores are computed in full."""

from __future__ import annotations

import math
import statistics
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch
from torch import Tensor

from tinytf.data.markdown import environment

KINDS = ("encoder_self", "decoder_self", "cross")
LABELS = {
    "encoder_self": "encoder self (M×M)",
    "decoder_self": "decoder self, causal (N×N)",
    "cross": "cross (N×M)",
}


def attention(q: Tensor, k: Tensor, v: Tensor, heads: int, causal: bool = False) -> tuple[Tensor, int]:
    """softmax(Q K^T / sqrt(D/H)) V for q (B, Lq, D) and k, v (B, Lk, D). Returns (out, bytes created)."""
    B, Lq, D = q.shape
    Lk, hd = k.shape[1], D // heads
    created = []  # every tensor this function allocates, for the analytic memory count
    # (B, L, D) -> (B, H, L, hd): a view; each head attends within its own hd-dimensional slice
    q, k, v = (t.view(B, t.shape[1], heads, hd).transpose(1, 2) for t in (q, k, v))
    # scale by the head size, not D: that is the size of each dot product
    scores = (q @ k.transpose(-2, -1)).mul_(1.0 / math.sqrt(hd))  # (B, H, Lq, Lk): the L^2 tensor
    created.append(scores)
    if causal:
        # True = key after query = blocked
        future = torch.ones(Lq, Lk, dtype=torch.bool, device=q.device).triu_(1)
        created.append(future)
        scores.masked_fill_(future, float("-inf"))  # in place: no second L^2 tensor
    weights = scores.softmax(dim=-1)  # a new (B, H, Lq, Lk) tensor
    out = weights @ v  # (B, H, Lq, hd)
    merged = out.transpose(1, 2).reshape(B, Lq, D)  # transpose makes it non-contiguous: reshape copies
    created += [weights, out, merged]
    return merged, sum(t.numel() * t.element_size() for t in created)


def _shapes(kind: str, lengths, fixed_length: int) -> list[tuple[int, int]]:
    """(Lq, Lk) points to measure. Self-attention: Lq = Lk = L. Cross: vary M with N fixed, then N with M fixed."""
    if kind in ("encoder_self", "decoder_self"):
        return [(L, L) for L in lengths]
    if kind == "cross":
        pts = [(fixed_length, L) for L in lengths] + [(L, fixed_length) for L in lengths]
        return list(dict.fromkeys(pts))  # (fixed, fixed) appears in both sweeps; measure it once
    raise ValueError(f"unknown attention kind {kind!r}; expected one of {KINDS}")


def _call(x, heads: int, kind: str) -> tuple[float, int]:
    """One timed attention call on inputs x = (q, k, v): (seconds, bytes by the analytic count)."""
    sync = torch.cuda.synchronize if x[0].is_cuda else (lambda: None)
    sync()
    t0 = time.perf_counter()
    _, nbytes = attention(*x, heads, causal=kind == "decoder_self")
    sync()
    return time.perf_counter() - t0, nbytes


def _cuda_peak(x, heads: int, kind: str) -> int:
    """Allocator peak of one call minus what was allocated before it (the inputs)."""
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    attention(*x, heads, causal=kind == "decoder_self")
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - base


# One function: the sweep over kinds x shapes and the timing protocol (warm-up, repeats, median)
# belong together; a reader checks the measurement method in one place.
def measure(
    kinds=KINDS,
    lengths=(768, 1024, 1280, 1536),
    hidden_sizes=(64, 256, 1024),
    batch: int = 2,
    heads: int = 8,
    repeats: int = 3,
    device: str = "cpu",
    fixed_length: int = 768,
    seed: int = 0,
    threads: int | None = 1,
) -> pd.DataFrame:
    """Time (median of `repeats`) and memory of each attention kind over lengths x hidden_sizes.
    Cross attention varies M with N = fixed_length, then N with M = fixed_length.

    After one warm-up call each, the repeats run in rounds over the whole sweep: a burst of load
    from another process then costs one sample of many configurations (which the median drops)
    instead of every sample of one.

    The defaults keep every L^2 tensor above 32 MiB (B*H*Lq*Lk*4 bytes >= 2*8*768*768*4): glibc
    serves larger blocks with a fresh mmap each call, smaller ones from reused memory several times
    faster, so a sweep straddling the threshold would fit that regime change, not L^2.

    threads: CPU threads for torch during the sweep (restored afterwards; None leaves it). One by
    default: a multi-threaded op waits for its slowest thread, which another process may deschedule."""
    for D in hidden_sizes:
        if D % heads:
            raise ValueError(f"hidden size {D} is not divisible by heads={heads}")
    g = torch.Generator().manual_seed(seed)
    cuda = torch.device(device).type == "cuda"
    # one (kind, length_q, length_k, hidden) tuple per row of the result, each with its own inputs
    configs = [
        (kind, *shape, D)
        for kind in kinds
        for D in hidden_sizes
        for shape in _shapes(kind, lengths, fixed_length)
    ]
    inputs = {
        c: tuple(torch.randn(batch, L, c[3], generator=g).to(device) for L in (c[1], c[2], c[2]))  # q, k, v
        for c in configs
    }
    saved = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        with torch.inference_mode():  # no autograd graph: we time the forward math only
            nbytes = {c: _call(x, heads, c[0])[1] for c, x in inputs.items()}  # warm-up round
            if cuda:
                nbytes = {c: _cuda_peak(x, heads, c[0]) for c, x in inputs.items()}
            times = {c: [] for c in configs}
            for _ in range(repeats):
                for c, x in inputs.items():
                    times[c].append(_call(x, heads, c[0])[0])
    finally:
        torch.set_num_threads(saved)
    df = pd.DataFrame(configs, columns=["kind", "length_q", "length_k", "hidden"])
    df["seconds"] = [statistics.median(times[c]) for c in configs]
    df["bytes"] = [nbytes[c] for c in configs]
    return df.assign(batch=batch, heads=heads, memory="cuda_peak" if cuda else "analytic")


def fit_power(x, y) -> tuple[float, float]:
    """Least-squares slope of log y on log x, and its r^2: y ~ c x^slope."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    slope, icpt = np.polyfit(lx, ly, 1)
    resid = ly - (slope * lx + icpt)
    ss = ((ly - ly.mean()) ** 2).sum()
    return float(slope), float(1 - (resid**2).sum() / ss) if ss > 0 else 1.0


def _fit_row(kind, variable, hidden, lq, lk, sub, x) -> dict:
    te, tr = fit_power(sub[x], sub["seconds"])
    me, mr = fit_power(sub[x], sub["bytes"])
    where = dict(kind=kind, variable=variable, hidden=hidden, length_q=lq, length_k=lk, points=len(sub))
    return where | dict(time_exponent=te, time_r2=tr, memory_exponent=me, memory_r2=mr)


def fit_exponents(df: pd.DataFrame, min_points: int = 3) -> pd.DataFrame:
    """Exponents of time and memory vs each varied quantity, the others fixed, through at least
    `min_points` distinct values. variable "length": self-attention, Lq = Lk = L (expect 2), per
    hidden size; "length_k" / "length_q": cross attention, one length varied, the other fixed
    (expect 1); "hidden": D varied at fixed (Lq, Lk)."""
    out = []
    nan = float("nan")
    for (kind, D), g in df.groupby(["kind", "hidden"], sort=False):
        if (g.length_q == g.length_k).all():
            if g.length_q.nunique() >= min_points:
                out.append(_fit_row(kind, "length", D, nan, nan, g, "length_q"))
            continue
        for var, other in (("length_k", "length_q"), ("length_q", "length_k")):
            for fixed, sub in g.groupby(other):
                if sub[var].nunique() >= min_points:
                    lq, lk = (fixed, nan) if other == "length_q" else (nan, fixed)
                    out.append(_fit_row(kind, var, D, lq, lk, sub, var))
    for (kind, lq, lk), g in df.groupby(["kind", "length_q", "length_k"], sort=False):
        if g.hidden.nunique() >= min_points:
            out.append(_fit_row(kind, "hidden", nan, lq, lk, g, "hidden"))
    return pd.DataFrame(out)


def _sweep(df: pd.DataFrame, f) -> tuple[pd.DataFrame, str, str]:
    """The measured rows behind one fit row, the column varied along them, and a legend label."""
    if f.variable == "hidden":
        sub = df[(df.kind == f.kind) & (df.length_q == f.length_q) & (df.length_k == f.length_k)]
        return sub, "hidden", f"at {int(f.length_q)}×{int(f.length_k)}"
    sub = df[(df.kind == f.kind) & (df.hidden == f.hidden)]
    if f.variable == "length":
        return sub[sub.length_q == sub.length_k], "length_q", "vs L"
    if f.variable == "length_k":
        return sub[sub.length_q == f.length_q], "length_k", f"vs M (N={int(f.length_q)})"
    return sub[sub.length_k == f.length_k], "length_q", f"vs N (M={int(f.length_k)})"


def plot_loglog(df: pd.DataFrame, fits: pd.DataFrame, path) -> Path:
    """2x2 log-log figure: time and memory vs length (at the largest D) and vs D (largest lengths)."""
    import matplotlib

    matplotlib.use("Agg")  # files only: never needs a display
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter, LogFormatter, NullFormatter

    fig, axes = plt.subplots(2, 2, figsize=(13, 9))
    colors = dict(zip(KINDS, ("tab:blue", "tab:orange", "tab:green"), strict=True))
    D = df.hidden.max()
    by_length = fits[(fits.variable != "hidden") & (fits.hidden == D)]
    # for D, one line per kind: the hidden-size fit at that kind's largest score matrix
    by_hidden = fits[fits.variable == "hidden"].assign(area=lambda t: t.length_q * t.length_k)
    by_hidden = by_hidden.sort_values("area").groupby("kind", sort=False).tail(1)
    measures = (("seconds", "time", "ms", 1e3), ("bytes", "memory", "MiB", 2**-20))
    panels = (
        (by_length, "sequence length (tokens)", f"vs length (D={D})"),
        (by_hidden, "hidden size D", "vs hidden size"),
    )
    for col, (ycol, what, unit, scale) in enumerate(measures):
        for row, (sel, xlabel, title) in enumerate(panels):
            ax = axes[row, col]
            for _, f in sel.iterrows():
                sub, x, label = _sweep(df, f)
                slope = f[f"{what}_exponent"]
                ax.plot(
                    sub[x],
                    sub[ycol] * scale,
                    "--" if f.variable == "length_q" else "-",
                    marker="o",
                    color=colors.get(f.kind),
                    label=f"{LABELS.get(f.kind, f.kind)} {label}: slope {slope:.2f}",
                )
            ax.set(
                xlabel=xlabel,
                ylabel=f"{what} per call ({unit})",
                xscale="log",
                yscale="log",
                title=f"attention {what} {title}",
            )
            # plain numbers, not 4×10²: label the measured x values and every y decade step
            ax.set_xticks(sorted({x for line in ax.get_lines() for x in line.get_xdata()}))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(NullFormatter())
            for which in ("major", "minor"):
                getattr(ax.yaxis, f"set_{which}_formatter")(LogFormatter(labelOnlyBase=False))
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=8)
    b, h, mem = df.batch.iloc[0], df.heads.iloc[0], df.memory.iloc[0]
    fig.suptitle(f"Cost of attention: batch {b}, {h} heads, median time over repeats, memory {mem}")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def complexity_markdown(df: pd.DataFrame, fits: pd.DataFrame) -> str:
    """The fitted exponents as markdown, next to what the operation counts predict."""
    expect_time = {"length": "2", "length_k": "1", "length_q": "1", "hidden": "≤1"}
    expect_mem = {"length": "2", "length_k": "1", "length_q": "1", "hidden": "~0"}
    t = fits.assign(
        expected_time=fits.variable.map(expect_time), expected_memory=fits.variable.map(expect_mem)
    )
    for c in ("hidden", "length_q", "length_k"):  # blank where the quantity is the one varied
        t[c] = t[c].map(lambda v: "" if pd.isna(v) else str(int(v)))
    cols = (
        "kind variable hidden length_q length_k points time_exponent expected_time time_r2 "
        "memory_exponent expected_memory memory_r2"
    ).split()
    table = t[cols].to_markdown(index=False, floatfmt=".3g")
    values = {
        "batch": df.batch.iloc[0],
        "heads": df.heads.iloc[0],
        "memory": df.memory.iloc[0],
        "table": table,
    }
    return environment("tinytf.course").get_template("complexity.md.j2").render(values)
