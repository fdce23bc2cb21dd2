"""Model tests: attention math, masks, head merges, positional encodings, heads, the lab reference."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tinytf.model.attention import (
    SelfAttention,
    attention_bias,
    build_attention_mask,
    head_norm_weights,
    merge_heads,
)
from tinytf.model.transformer import (
    ModelConfig,
    TinyTransformer,
    head_orders,
    lm_loss,
    perplexity,
    pool,
    sinusoidal_table,
)

V, L = 37, 12


def small(**kw) -> ModelConfig:
    base = dict(
        vocab_size=V,
        block_size=32,
        n_layer=2,
        n_head=4,
        d_model=16,
        d_ff=24,
        dropout=0.0,
        norm_first=False,
        activation="relu",
    )  # the seed lab's post-LN choices
    return ModelConfig(**{**base, **kw})


def build(seed: int = 0, **kw) -> TinyTransformer:
    torch.manual_seed(seed)
    return TinyTransformer(small(**kw)).eval()


def ids_and_mask(B: int = 3, left: bool = False, seed: int = 1):
    """Random ids with a ragged attention mask: lengths L, L-4 and 3 (padding right or left)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(1, V, (B, L), generator=g)
    mask = torch.ones(B, L, dtype=torch.long)
    for b, n in enumerate([L, L - 4, 3][:B]):
        if left:
            mask[b, : L - n] = 0
        else:
            mask[b, n:] = 0
    return ids, mask


# ---------------------------------------------------------------------------------------- config


def test_config_json_roundtrip_and_validation():
    cfg = small(head_merge="shuffle", pos_encoding="learned", causal=False, tie_weights=True)
    assert ModelConfig.from_dict(json.loads(json.dumps(cfg.to_dict()))) == cfg
    with pytest.raises(ValueError, match="unknown keys"):
        ModelConfig.from_dict({**cfg.to_dict(), "n_heads": 2})
    with pytest.raises(ValueError, match="head_merge"):
        small(head_merge="mix")
    with pytest.raises(ValueError, match="divisible"):
        small(d_model=18)
    with pytest.raises(ValueError, match="torch_encoder"):
        small(arch="torch_encoder", head_merge="shift")


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


# ----------------------------------------------------------------------------------- head merges


def proj_with_input_blocks(proj_weight: torch.Tensor, source: list[int], hd: int) -> torch.Tensor:
    """A weight whose input column block h is proj_weight's block source[h]."""
    return torch.cat([proj_weight[:, s * hd : (s + 1) * hd] for s in source], dim=1)


@pytest.mark.parametrize("variant", ["shift", "shuffle"])
def test_fixed_permutation_merge_equals_concat_with_permuted_output_columns(variant):
    H, hd = 4, 4
    model = build(head_merge=variant, n_head=H, seed=3)
    ref = build(head_merge="concat", n_head=H)
    sd = model.state_dict()
    for i, block in enumerate(model.base.blocks):
        order = block.attn.head_order.tolist()
        if variant == "shift":
            assert order == [1, 2, 3, 0]  # [O_2 O_3 O_4 O_1]
        # slot j holds head order[j], so head h is multiplied by block inverse[h] of W_o
        inverse = [order.index(h) for h in range(H)]
        key = f"base.blocks.{i}.attn.proj.weight"
        sd[key] = proj_with_input_blocks(sd[key], inverse, hd)
    ref.load_state_dict({k: v for k, v in sd.items() if not k.endswith("head_order")})
    ids, am = ids_and_mask()
    torch.testing.assert_close(ref.forward_lm(ids, am), model.forward_lm(ids, am), atol=1e-5, rtol=1e-5)


def test_shuffle_is_a_fixed_seeded_permutation_per_layer():
    cfg = small(head_merge="shuffle", n_head=8, d_model=32, n_layer=4, seed=11)
    orders = [b.attn.head_order for b in TinyTransformer(cfg).base.blocks]
    g = torch.Generator().manual_seed(11)
    for order in orders:
        assert sorted(order.tolist()) == list(range(8))
        assert torch.equal(order, torch.randperm(8, generator=g))  # reproducible from the seed alone
    assert len({tuple(o.tolist()) for o in orders}) > 1  # drawn per layer
    torch.manual_seed(123)  # independent of the global RNG
    again = [b.attn.head_order for b in TinyTransformer(cfg).base.blocks]
    assert all(torch.equal(a, b) for a, b in zip(orders, again, strict=True))
    other = head_orders(small(head_merge="shuffle", n_head=8, d_model=32, n_layer=4, seed=12))
    assert any(not torch.equal(a, b) for a, b in zip(orders, other, strict=True))
    model = TinyTransformer(cfg)
    assert "base.blocks.0.attn.head_order" in model.state_dict()  # travels with the checkpoint
    model.forward_lm(torch.randint(1, V, (2, 5)))
    assert torch.equal(model.base.blocks[0].attn.head_order, orders[0])  # not redrawn by a forward


def test_reweight_weights_are_per_token_norm_shares():
    y = torch.randn(2, 4, 6, 5)
    w = head_norm_weights(y)
    assert w.shape == (2, 4, 6) and (w > 0).all()
    torch.testing.assert_close(w.sum(1), torch.ones(2, 6))
    torch.testing.assert_close(w, y.norm(dim=-1) / y.norm(dim=-1).sum(1, keepdim=True))
    merged = merge_heads(y, "reweight").view(2, 6, 4, 5).transpose(1, 2)
    torch.testing.assert_close(merged, y * 4 * w.unsqueeze(-1))  # scaled by H: same scale as concat
    equal_norms = F.normalize(y, dim=-1)
    torch.testing.assert_close(merge_heads(equal_norms, "reweight"), merge_heads(equal_norms, "concat"))
    # per token: one position's weights do not depend on any other position
    y2 = y.clone()
    y2[:, :, 3:] = torch.randn(2, 4, 3, 5)
    torch.testing.assert_close(head_norm_weights(y2)[:, :, :3], w[:, :, :3])


# ---------------------------------------------------------------------------- positional encoding


def test_sinusoidal_matches_closed_formula_and_has_no_parameters():
    d, n = 10, 50
    pe = sinusoidal_table(n, d)
    for k in (0, 1, 7, 49):
        for i in range(d):
            m = i // 2  # a sin/cos pair shares the frequency 1 / 10000^(2m/d)
            angle = k / 10000 ** (2 * m / d)
            assert pe[k, i].item() == pytest.approx(
                math.sin(angle) if i % 2 == 0 else math.cos(angle), abs=1e-5
            )
    model = build(pos_encoding="sinusoidal")
    assert not any("pos_emb" in name for name, _ in model.named_parameters())
    assert not any("pos_emb" in key for key in model.state_dict())  # rebuilt from the config
    torch.testing.assert_close(model.base.pos_emb.pe, sinusoidal_table(32, 16))


def test_embedding_is_scaled_by_sqrt_d_before_adding_positions():
    model = build(pos_encoding="sinusoidal")
    base = model.base
    ids = torch.randint(1, V, (1, 5))
    seen = {}
    base.drop.register_forward_hook(lambda m, i, o: seen.setdefault("x", i[0]))
    base(ids)
    torch.testing.assert_close(seen["x"], base.tok_emb(ids) * 4.0 + sinusoidal_table(5, 16))


def test_learned_positions_are_a_trained_parameter():
    model = build(pos_encoding="learned").train()
    names = dict(model.named_parameters())
    assert names["base.pos_emb.weight"].shape == (32, 16)
    model.forward_lm(torch.randint(1, V, (2, 6))).sum().backward()
    grad = names["base.pos_emb.weight"].grad
    assert grad[:6].abs().sum() > 0 and (grad[6:] == 0).all()  # only the positions used


@pytest.mark.parametrize("pos_encoding", ["none", "sinusoidal", "learned"])
def test_only_no_positions_is_permutation_equivariant_without_causal_mask(pos_encoding):
    model = build(pos_encoding=pos_encoding, causal=False)
    ids = torch.randint(1, V, (2, L))
    perm = torch.randperm(L)
    out, out_perm = model.forward_lm(ids), model.forward_lm(ids[:, perm])
    equivariant = torch.allclose(out_perm, out[:, perm], atol=1e-5)
    assert equivariant == (pos_encoding == "none")


def test_longer_than_block_size_is_an_error():
    with pytest.raises(ValueError, match="block_size"):
        build().forward_lm(torch.zeros(1, 33, dtype=torch.long))


# ----------------------------------------------------------------------------------------- heads


def test_pooling_picks_last_first_and_mean_of_real_tokens():
    h = torch.arange(2 * 5, dtype=torch.float).view(2, 5, 1)
    right = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
    left = torch.tensor([[0, 0, 1, 1, 1], [1, 1, 1, 1, 1]])
    assert pool(h, right, "last").flatten().tolist() == [2, 9]
    assert pool(h, left, "last").flatten().tolist() == [4, 9]
    assert pool(h, right, "first").flatten().tolist() == [0, 5]
    assert pool(h, left, "first").flatten().tolist() == [2, 5]
    assert pool(h, right, "mean").flatten().tolist() == [1, 7]
    assert pool(h, None, "last").flatten().tolist() == [4, 9]


@pytest.mark.parametrize("arch", ["tinytf", "torch_encoder"])
def test_classifier_initialised_from_pretrained_lm_keeps_the_base(arch):
    lm = build(arch=arch, seed=1)
    clf = build(arch=arch, seed=2, n_classes=3, pooling="last")
    clf.load_base_state_dict(lm.base_state_dict())
    for (k, a), (_, b) in zip(lm.base.state_dict().items(), clf.base.state_dict().items(), strict=True):
        assert torch.equal(a, b), k
    assert not torch.equal(lm.cls_head.weight[:2], clf.cls_head.weight[:2])  # heads are not copied
    ids, am = ids_and_mask()
    torch.testing.assert_close(clf.base(ids, am), lm.base(ids, am))
    assert clf.forward_cls(ids, am).shape == (3, 3) and lm.forward_lm(ids, am).shape == (3, L, V)
    # a full model state dict ("base." keys) is accepted too
    clf2 = build(arch=arch, seed=3, n_classes=3)
    clf2.load_base_state_dict(lm.state_dict())
    torch.testing.assert_close(clf2.base(ids, am), lm.base(ids, am))


@pytest.mark.parametrize("arch", ["tinytf", "torch_encoder"])
def test_tied_lm_head_shares_storage_with_the_embedding(arch):
    model = build(arch=arch, tie_weights=True)
    emb = model.base.token_embedding.weight
    assert model.lm_head.weight is emb and model.lm_head.weight.data_ptr() == emb.data_ptr()
    donor = build(arch=arch, seed=9, tie_weights=True)
    model.load_base_state_dict(donor.base_state_dict())
    assert model.lm_head.weight.data_ptr() == model.base.token_embedding.weight.data_ptr()
    torch.testing.assert_close(model.lm_head.weight, donor.base.token_embedding.weight)
    untied = build(arch=arch)
    assert untied.lm_head.weight.data_ptr() != untied.base.token_embedding.weight.data_ptr()


def test_forward_dispatches_to_either_head():
    model = build()
    ids, am = ids_and_mask()
    torch.testing.assert_close(model(ids, am), model.forward_lm(ids, am))
    torch.testing.assert_close(model(ids, am, head="cls"), model.forward_cls(ids, am))
    assert torch.equal(model.make_attention_mask(torch.tensor([[5, 3, 0, 0]])), torch.tensor([[1, 1, 0, 0]]))


def test_lm_loss_upcasts_and_ignores():
    logits = torch.randn(2, 5, V).bfloat16()
    targets = torch.randint(0, V, (2, 5))
    targets[0, -2:] = -100
    loss = lm_loss(logits, targets)
    assert loss.dtype == torch.float32
    keep = targets != -100
    torch.testing.assert_close(loss, F.cross_entropy(logits.float()[keep], targets[keep]))
    assert perplexity(0.0) == 1.0 and perplexity(math.log(50.0)) == pytest.approx(50.0)
    assert perplexity(1e4) == float("inf")


# ----------------------------------------------------------------- the seed lab's torch_encoder model


def encoder_to_tinytf(sd: dict) -> dict:
    """Rename nn.TransformerEncoder weights to tinytf's (same layout, fused [q;k;v] included)."""
    renames = {
        "base.encoder.": "base.tok_emb.",
        "transformer_encoder.layers.": "blocks.",
        "self_attn.in_proj_": "attn.qkv.",
        "self_attn.out_proj.": "attn.proj.",
        "linear1.": "ff.fc1.",
        "linear2.": "ff.fc2.",
        "norm1.": "ln1.",
        "norm2.": "ln2.",
    }
    out = {}
    for key, value in sd.items():
        for old, new in renames.items():
            key = key.replace(old, new)
        out[key] = value
    return out


@pytest.mark.parametrize("causal", [True, False])
def test_written_out_model_reproduces_torch_encoder(causal):
    ref = build(arch="torch_encoder", causal=causal)
    mine = build(arch="tinytf", causal=causal, attn_impl="manual")
    mine.load_state_dict(encoder_to_tinytf(ref.state_dict()))
    ids, am = ids_and_mask()
    torch.testing.assert_close(mine.forward_lm(ids), ref.forward_lm(ids), atol=1e-5, rtol=1e-4)
    real = am.bool()
    torch.testing.assert_close(
        mine.forward_lm(ids, am)[real], ref.forward_lm(ids, am)[real], atol=1e-5, rtol=1e-4
    )
    torch.testing.assert_close(mine.forward_cls(ids, am), ref.forward_cls(ids, am), atol=1e-5, rtol=1e-4)


class LabTransformerModel(nn.Module):
    """The seed lab's base model, verbatim in structure (sequence-first, float square mask)."""

    def __init__(self, ntoken, nhead, nhid, nlayers, dropout=0.5):
        super().__init__()
        self.encoder = nn.Embedding(ntoken, nhid)
        self.pos_encoder = nn.Module()
        self.pos_encoder.register_buffer("pe", sinusoidal_table(5000, nhid).unsqueeze(1))
        layer = nn.TransformerEncoderLayer(nhid, nhead, nhid, dropout)
        self.transformer_encoder = nn.TransformerEncoder(layer, nlayers, enable_nested_tensor=False)
        self.nhid = nhid

    def forward(self, src, src_mask):
        src = self.encoder(src) * math.sqrt(self.nhid)
        src = src + self.pos_encoder.pe[: src.size(0)]
        return self.transformer_encoder(src, src_mask)


def test_torch_encoder_loads_a_seed_lab_checkpoint_and_runs_both_heads():
    torch.manual_seed(0)
    lab = LabTransformerModel(V, 2, 16, 2).eval()
    model = build(arch="torch_encoder", n_head=2, d_ff=16)  # the lab: dim_feedforward = nhid
    model.load_base_state_dict({f"base.{k}": v for k, v in lab.state_dict().items()})  # pe is skipped
    ids = torch.randint(1, V, (3, L))
    sq = torch.triu(torch.full((L, L), float("-inf")), 1)  # generate_square_subsequent_mask
    lab_out = lab(ids.t(), sq).transpose(0, 1)
    torch.testing.assert_close(model.base(ids), lab_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.forward_lm(ids), model.lm_head(lab_out), atol=1e-5, rtol=1e-5)
    assert model.forward_cls(ids).shape == (3, 2)
    torch.testing.assert_close(model.forward_cls(ids), model.cls_head(lab_out[:, -1]), atol=1e-5, rtol=1e-5)
    with pytest.raises(ValueError, match="attention weights"):
        model.attention_weights(ids)
