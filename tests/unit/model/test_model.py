"""Model tests: configuration, head merges, positional encodings, heads, the lab reference."""

import json
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from tests.helpers.model_fixtures import L, V, build, ids_and_mask, small
from tinytf.model.attention import (
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


# ----------------------------------------------------------------- the course lab's torch_encoder model


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
    """The course lab's base model, verbatim in structure (sequence-first, float square mask)."""

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


def test_torch_encoder_loads_a_course_lab_checkpoint_and_runs_both_heads():
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
