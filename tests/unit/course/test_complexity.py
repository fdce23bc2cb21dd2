"""Cost-of-attention measurements (course report 003). No timing exponent is asserted: timing is noisy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from tinytf.course.complexity import (
    attention,
    complexity_markdown,
    fit_exponents,
    fit_power,
    measure,
    plot_loglog,
)

SMALL = dict(lengths=(32, 64, 128), hidden_sizes=(16, 32, 64), batch=1, heads=2, repeats=1, fixed_length=64)


@pytest.fixture(scope="module")
def small():
    df = measure(**SMALL)
    return df, fit_exponents(df)


@pytest.mark.parametrize("causal", [False, True])
def test_attention_matches_sdpa(causal):
    g = torch.Generator().manual_seed(0)
    B, L, D, H = 2, 7, 12, 3
    q, k, v = (torch.randn(B, L, D, generator=g) for _ in range(3))
    out, _ = attention(q, k, v, H, causal)
    split = [t.view(B, L, H, D // H).transpose(1, 2) for t in (q, k, v)]
    ref = F.scaled_dot_product_attention(*split, is_causal=causal).transpose(1, 2).reshape(B, L, D)
    torch.testing.assert_close(out, ref)


def test_analytic_bytes_are_the_tensors_created():
    B, H, D, Lq, Lk = 2, 4, 16, 5, 9
    q, k = torch.zeros(B, Lq, D), torch.zeros(B, Lk, D)
    _, plain = attention(q, k, k, H)
    # scores + softmax weights (B, H, Lq, Lk) float32, per-head output + merged output (B, Lq, D)
    assert plain == 2 * B * H * Lq * Lk * 4 + 2 * B * Lq * D * 4
    _, causal = attention(q, k, k, H, causal=True)
    assert causal == plain + Lq * Lk  # the boolean mask, one byte per (query, key)


def test_small_sweep_rows(small):
    df, _ = small
    assert list(df.columns[:6]) == ["kind", "length_q", "length_k", "hidden", "seconds", "bytes"]
    # self kinds: 3 lengths x 3 sizes; cross: (64, M) for 3 M plus (N, 64) for N != 64 -> 5 per size
    assert df.groupby("kind").size().to_dict() == {"encoder_self": 9, "decoder_self": 9, "cross": 15}
    self_rows = df[df.kind != "cross"]
    assert (self_rows.length_q == self_rows.length_k).all()
    cross = df[df.kind == "cross"]
    assert ((cross.length_q == 64) | (cross.length_k == 64)).all()
    assert (df.seconds > 0).all() and (df.bytes > 0).all() and (df.memory == "analytic").all()


def test_memory_exponent_in_length_is_two_for_self_attention():
    # many heads, small D: the L^2 score tensors dominate the L*D outputs by a factor H*L/D >= 32
    df = measure(
        kinds=("encoder_self", "decoder_self"),
        lengths=(64, 128, 256, 512),
        hidden_sizes=(16,),
        batch=1,
        heads=8,
        repeats=1,
    )
    fits = fit_exponents(df)
    assert len(fits) == 2 and set(fits.variable) == {"length"}
    assert np.allclose(fits.memory_exponent, 2.0, atol=0.1), fits
    assert (fits.memory_r2 > 0.999).all()


def test_fits_of_small_sweep(small):
    _, fits = small
    assert set(fits.variable) == {"length", "length_k", "length_q", "hidden"}
    length = fits[fits.variable == "length"]
    assert len(length) == 6 and length.memory_exponent.between(1.5, 2.0 + 1e-9).all()
    # every created tensor grows with N, so bytes ~ N exactly; the (N, D) outputs do not grow with M
    by_n, by_m = fits[fits.variable == "length_q"], fits[fits.variable == "length_k"]
    assert len(by_n) == len(by_m) == 3
    assert np.allclose(by_n.memory_exponent, 1.0) and by_m.memory_exponent.between(0.5, 1.0 + 1e-9).all()


def test_power_law_is_recovered():
    x = np.array([16, 32, 64, 128, 256])
    slope, r2 = fit_power(x, 3.0 * x**1.7)
    assert slope == pytest.approx(1.7) and r2 == pytest.approx(1.0)
    # and through fit_exponents: t ~ Lq Lk D, bytes ~ Lq Lk
    rows = [
        (kind, L, L, D)
        for kind in ("encoder_self", "decoder_self")
        for L in (128, 256, 512)
        for D in (32, 64, 128)
    ]
    rows += [("cross", 256, M, D) for M in (128, 256, 512) for D in (32, 64, 128)]
    rows += [("cross", N, 256, D) for N in (128, 512) for D in (32, 64, 128)]
    df = pd.DataFrame(rows, columns=["kind", "length_q", "length_k", "hidden"])
    df["seconds"] = 1e-9 * df.length_q * df.length_k * df.hidden
    df["bytes"] = 8 * df.length_q * df.length_k
    fits = fit_exponents(df).set_index(["kind", "variable"]).sort_index()
    assert np.allclose(
        fits.loc[(["encoder_self", "decoder_self"], "length"), ["time_exponent", "memory_exponent"]], 2
    )
    assert np.allclose(fits.loc[("cross", ["length_k", "length_q"]), ["time_exponent", "memory_exponent"]], 1)
    hidden = fits.xs("hidden", level="variable")
    assert np.allclose(hidden.time_exponent, 1) and np.allclose(hidden.memory_exponent, 0)


def test_plot_and_markdown(small, tmp_path):
    df, fits = small
    path = plot_loglog(df, fits, tmp_path / "sub" / "attention_cost.png")
    assert path.exists() and path.stat().st_size > 10_000
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    md = complexity_markdown(df, fits)
    assert "| kind" in md and "time_exponent" in md and "analytic" in md


def test_measure_restores_threads_and_rejects_bad_sizes():
    before = torch.get_num_threads()
    measure(kinds=("cross",), lengths=(8, 16), hidden_sizes=(8,), batch=1, heads=2, repeats=1, threads=1)
    assert torch.get_num_threads() == before
    with pytest.raises(ValueError, match="divisible"):
        measure(hidden_sizes=(10,), heads=4)
    with pytest.raises(ValueError, match="unknown attention kind"):
        measure(kinds=("sideways",), lengths=(8,), hidden_sizes=(8,), heads=2)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_peak_memory():
    df = measure(
        kinds=("encoder_self",), lengths=(256, 512, 1024), hidden_sizes=(64,), heads=8, device="cuda"
    )
    assert (df.memory == "cuda_peak").all()
    fits = fit_exponents(df)
    assert fits.memory_exponent.iloc[0] == pytest.approx(2.0, abs=0.15)
