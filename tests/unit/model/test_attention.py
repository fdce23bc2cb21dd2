"""Attention tests: the written-out math against SDPA and nn.MultiheadAttention, the additive
and boolean masks, which kernel runs where, causality, padding."""

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.helpers.model_fixtures import L, V, build, ids_and_mask
from tinytf.model.attention import (
    SelfAttention,
    attention_bias,
    build_attention_mask,
    sdpa_is_faster,
)
from tinytf.model.transformer import lm_loss

# ------------------------------------------------------------------------------------- attention


def attention_pair(d=16, h=4):
    torch.manual_seed(0)
    manual = SelfAttention(d, h, attn_impl="manual").eval()
    fast = SelfAttention(d, h, attn_impl="sdpa").eval()
    fast.load_state_dict(manual.state_dict())
    mha = nn.MultiheadAttention(d, h, batch_first=True).eval()
    with torch.no_grad():  # same layout: in_proj rows are [q; k; v]
        mha.in_proj_weight.copy_(manual.qkv.weight)
        mha.in_proj_bias.copy_(manual.qkv.bias)
        mha.out_proj.weight.copy_(manual.proj.weight)
        mha.out_proj.bias.copy_(manual.proj.bias)
    return manual, fast, mha


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("padded", [False, True])
def test_manual_attention_equals_sdpa_and_multihead_attention(causal, padded):
    manual, fast, mha = attention_pair()
    x = torch.randn(3, L, 16)
    _, am = ids_and_mask()
    am = am if padded else None
    mask = build_attention_mask(am, L, causal)
    y, w = manual(x, mask, causal, need_weights=True)
    y_fast, w_fast = fast(x, mask, causal)
    assert w_fast is None and w.shape == (3, 4, L, L)
    torch.testing.assert_close(y_fast, y, atol=1e-5, rtol=1e-5)
    # nn.MultiheadAttention: True = blocked (the opposite convention)
    causal_block = torch.ones(L, L, dtype=torch.bool).triu(1) if causal else None
    kpm = (am == 0) if padded else None
    y_ref, w_ref = mha(x, x, x, attn_mask=causal_block, key_padding_mask=kpm, average_attn_weights=False)
    real = am.bool() if padded else torch.ones(3, L, dtype=torch.bool)  # padded queries: see below
    torch.testing.assert_close(y[real], y_ref[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(
        w[real.unsqueeze(1).expand(-1, 4, -1)], w_ref[real.unsqueeze(1).expand(-1, 4, -1)]
    )


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_additive_mask_gives_the_boolean_masks_outputs_and_gradients_bit_for_bit(dtype):
    # the written-out path adds `attention_bias` instead of masked_fill for speed; the committed
    # results were trained with masked_fill, so both must give the very same numbers
    manual, _, _ = attention_pair()
    _, am = ids_and_mask()
    allowed = build_attention_mask(am, L, causal=True)
    outputs = []
    for mask in (allowed, attention_bias(allowed)):
        x = torch.randn(3, L, 16, generator=torch.Generator().manual_seed(0)).to(dtype).requires_grad_()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=dtype == torch.bfloat16):
            y, _ = manual(x, mask, causal=True)
        y.float().square().sum().backward()
        outputs.append((y.detach(), x.grad, [p.grad.clone() for p in manual.parameters()]))
        manual.zero_grad()
    (y0, gx0, gp0), (y1, gx1, gp1) = outputs
    assert torch.equal(y0, y1) and torch.equal(gx0, gx1)
    assert all(torch.equal(a, b) for a, b in zip(gp0, gp1, strict=True))


@pytest.mark.parametrize(("grad", "bias"), [(True, True), (False, False)])
def test_the_body_adds_the_mask_where_the_written_out_path_runs(monkeypatch, grad, bias):
    # a training step (autograd on the CPU) takes the written-out path: an fp32 additive mask,
    # built once for all layers; SDPA (inference) keeps the boolean one
    seen = []
    real = SelfAttention.forward
    monkeypatch.setattr(
        SelfAttention,
        "forward",
        lambda self, x, mask=None, *a, **kw: seen.append(mask) or real(self, x, mask, *a, **kw),
    )
    model = build(attn_impl="sdpa")
    ids, am = ids_and_mask()
    with torch.set_grad_enabled(grad):
        model.forward_cls(ids, am)
    assert len(seen) == 2 and seen[0] is seen[1]
    assert seen[0].dtype == (torch.float32 if bias else torch.bool)


def test_attention_weights_are_causal_distributions():
    model = build(attn_impl="sdpa")
    ids, am = ids_and_mask()
    weights = model.attention_weights(ids, am)  # sdpa model still returns them via the manual path
    assert len(weights) == 2 and weights[0].shape == (3, 4, L, L)
    for w in weights:
        torch.testing.assert_close(w.sum(-1), torch.ones(3, 4, L))
        assert (w.triu(1) == 0).all()
        assert (w[1, :, : L - 4, L - 4 :] == 0).all()  # real queries never look at pad keys


@pytest.mark.parametrize(
    ("training", "dropout", "grad", "sdpa_runs"),
    [
        (False, 0.0, False, True),  # inference: SDPA's kernel
        (False, 0.1, False, True),  # dropout is off in eval mode
        (True, 0.0, False, True),  # train mode, but autograd records nothing (as under no_grad)
        (True, 0.0, True, False),  # autograd on the CPU: SDPA's CPU backward is the slower one
        (False, 0.0, True, False),  # the same in eval mode: the backward decides, not the mode
        (True, 0.1, True, False),  # training dropout: ours, with its cheaper random numbers
    ],
)
def test_sdpa_runs_only_where_it_is_the_faster_kernel(monkeypatch, training, dropout, grad, sdpa_runs):
    calls = []
    real = F.scaled_dot_product_attention
    monkeypatch.setattr(F, "scaled_dot_product_attention", lambda *a, **kw: calls.append(1) or real(*a, **kw))
    attention = SelfAttention(16, 4, dropout=dropout, attn_impl="sdpa").train(training)
    x = torch.randn(2, L, 16, requires_grad=grad)
    y, _ = attention(x, causal=True)
    assert bool(calls) == sdpa_runs
    if grad:
        y.sum().backward()
        assert x.grad is not None


def _rule_before_cuda_took_sdpa(device_type, compiling, training_dropout, records_grad):
    # the decision every device made before CUDA took SDPA always, which the CPU still makes in
    # bf16; under compile in fp32 without dropout the CPU takes SDPA (its flash kernels win there)
    if compiling or training_dropout:
        return False
    return not (records_grad and device_type == "cpu")


@pytest.mark.parametrize("compiling", [False, True])
@pytest.mark.parametrize("training_dropout", [False, True])
@pytest.mark.parametrize("records_grad", [False, True])
@pytest.mark.parametrize("low_precision", [False, True])
def test_cuda_takes_sdpa_always_and_the_cpu_also_under_compile_in_fp32(
    compiling, training_dropout, records_grad, low_precision
):
    case = {"compiling": compiling, "training_dropout": training_dropout, "records_grad": records_grad}
    assert sdpa_is_faster("cuda", **case, low_precision=low_precision)  # flash never writes the L x L scores
    for device_type in ("cpu", "mps"):
        expected = _rule_before_cuda_took_sdpa(device_type, **case)
        if compiling and not training_dropout and not low_precision:
            expected = True
        assert sdpa_is_faster(device_type, **case, low_precision=low_precision) == expected


def test_the_sdpa_path_drops_out_in_training_only(monkeypatch):
    # where SDPA runs with dropout (CUDA), the kernel is given the layer's rate in training, 0 in eval
    seen = []
    real = F.scaled_dot_product_attention
    monkeypatch.setattr(
        F, "scaled_dot_product_attention", lambda *a, **kw: seen.append(kw["dropout_p"]) or real(*a, **kw)
    )
    monkeypatch.setattr(SelfAttention, "_sdpa_is_faster", lambda self, x: True)
    attention = SelfAttention(16, 4, dropout=0.1, attn_impl="sdpa")
    x = torch.randn(2, L, 16)
    attention.train()(x, causal=True)
    attention.eval()(x, causal=True)
    assert seen == [0.1, 0.0]


@pytest.mark.parametrize("head_merge", ["concat", "shuffle", "shift", "reweight"])
@pytest.mark.parametrize("causal", [False, True])
def test_model_manual_equals_sdpa(head_merge, causal):
    a = build(head_merge=head_merge, causal=causal, attn_impl="manual")
    b = build(seed=5, head_merge=head_merge, causal=causal, attn_impl="sdpa")
    b.load_state_dict(a.state_dict())
    ids, am = ids_and_mask()
    for mask in (None, am):
        torch.testing.assert_close(b.forward_lm(ids, mask), a.forward_lm(ids, mask), atol=1e-5, rtol=1e-5)


# ----------------------------------------------------------------------------------------- masks


@pytest.mark.parametrize(
    ("arch", "variant"),
    [("tinytf", v) for v in ("concat", "shuffle", "shift", "reweight", "pre_ln")]
    + [("torch_encoder", "concat")],
)
def test_causal_mask_blocks_the_future(arch, variant):
    kw = {"norm_first": True} if variant == "pre_ln" else {"head_merge": variant}
    model = build(arch=arch, **kw)
    ids, _ = ids_and_mask()
    out = model.forward_lm(ids)
    for t in (0, 5, L - 2):
        changed = ids.clone()
        changed[:, t + 1 :] = torch.randint(1, V, changed[:, t + 1 :].shape)
        out2 = model.forward_lm(changed)
        torch.testing.assert_close(out2[:, : t + 1], out[:, : t + 1], atol=1e-5, rtol=1e-5)
        assert not torch.allclose(out2[:, t + 1 :], out[:, t + 1 :])


@pytest.mark.parametrize("arch", ["tinytf", "torch_encoder"])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("left", [False, True])
def test_padding_never_changes_real_outputs_and_no_nan(arch, causal, left):
    model = build(arch=arch, causal=causal, attn_impl="manual", pooling="mean")
    ids, am = ids_and_mask(left=left)
    noise = torch.randint(1, V, ids.shape)
    ids2 = torch.where(am.bool(), ids, noise)  # same real tokens, different pad tokens
    out, out2 = model.forward_lm(ids, am), model.forward_lm(ids2, am)
    assert torch.isfinite(out).all() and torch.isfinite(out2).all()
    real = am.bool()
    torch.testing.assert_close(out2[real], out[real], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.forward_cls(ids2, am), model.forward_cls(ids, am), atol=1e-5, rtol=1e-5)


def test_fully_masked_rows_are_finite_in_both_paths_and_in_the_gradient():
    for impl in ("manual", "sdpa"):
        model = build(attn_impl=impl, causal=True)
        model.train()
        ids, am = ids_and_mask(left=True)
        am[2] = 0  # an all-padding sequence: every query row has only padded keys
        logits = model.forward_lm(ids, am)
        assert torch.isfinite(logits).all()
        targets = torch.where(am.bool(), ids, torch.full_like(ids, -100))
        loss = lm_loss(logits, targets) + model.forward_cls(ids, am).sum()
        loss.backward()
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_bidirectional_mode_sees_the_future():
    model = build(causal=False)
    ids, _ = ids_and_mask()
    changed = ids.clone()
    changed[:, -1] = (changed[:, -1] % (V - 1)) + 1
    assert not torch.allclose(model.forward_lm(changed)[:, 0], model.forward_lm(ids)[:, 0])
