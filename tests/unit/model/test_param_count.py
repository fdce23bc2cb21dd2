"""Parameter counts: module counts, the closed form, and the course reports' numbers."""

import pytest

from tinytf.model.param_count import (
    COURSE_CLAIMS,
    analytic_counts,
    classifier_parameters,
    component_of,
    count_parameters,
    course_lab_config,
    format_counts,
    format_course_claims,
)
from tinytf.model.transformer import ModelConfig, TinyTransformer

CONFIGS = [
    dict(),
    dict(arch="torch_encoder"),
    dict(arch="torch_encoder", tie_weights=True, bias=False, n_head=4),
    dict(pos_encoding="learned", norm_first=True),
    dict(tie_weights=True, bias=False, norm_first=True, n_classes=5),
    dict(head_merge="shuffle", pos_encoding="none", activation="gelu"),
    dict(head_merge="shift", tie_weights=True, pos_encoding="learned"),
    dict(head_merge="reweight", n_head=8, d_ff=40),
]


def cfg(**kw) -> ModelConfig:
    return ModelConfig(
        **{
            **dict(
                vocab_size=31,
                block_size=20,
                n_layer=3,
                n_head=2,
                d_model=16,
                d_ff=24,
                norm_first=False,
                activation="relu",
                dropout=0.2,
            ),
            **kw,
        }
    )


@pytest.mark.parametrize(
    "kw", CONFIGS, ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()) or "default"
)
def test_counted_equals_numel_sum_and_analytic(kw):
    c = cfg(**kw)
    model = TinyTransformer(c)
    counted = count_parameters(model)
    assert counted["total"] == sum(p.numel() for p in model.parameters())
    assert counted["base"] == sum(p.numel() for p in model.base.parameters())
    assert counted == analytic_counts(c)


@pytest.mark.parametrize(
    ("vocab", "base", "lm_head"), [(100, 988_000, 20_100), (50_001, 10_968_200, 10_050_201)]
)
def test_course_lab_numbers_exactly(vocab, base, lm_head):
    c = course_lab_config(vocab)
    for counts in (analytic_counts(c), count_parameters(TinyTransformer(c))):
        assert counts["base"] == base
        assert counts["cls_head"] == 402
        assert counts["lm_head"] == lm_head
        assert counts["positional"] == 0  # the sinusoidal table is a buffer


def test_written_out_lab_model_has_the_lab_count():
    lab = course_lab_config(100)
    mine = ModelConfig(**{**lab.to_dict(), "arch": "tinytf"})  # post-LN, no final norm: same architecture
    assert count_parameters(TinyTransformer(mine)) == analytic_counts(lab)


def test_attention_count_does_not_depend_on_heads():
    counts = [
        analytic_counts(ModelConfig(**{**course_lab_config(100).to_dict(), "n_head": h}))
        for h in (1, 2, 4, 8)
    ]
    assert len({c["attention"] for c in counts}) == 1


def test_tied_head_counts_only_its_bias():
    counts = count_parameters(TinyTransformer(cfg(tie_weights=True)))
    assert counts["lm_head"] == 31 and counts["embedding"] == 31 * 16


def test_course_claims_are_recomputed():
    by = {(c.report, c.quantity): c for c in COURSE_CLAIMS}
    emb = by[("000", "embedding (eq. 3)")]
    assert (emb.claimed, emb.as_written, emb.true, emb.difference) == (200_000, 20_000, 20_000, 180_000)
    heads = by[("000", "attention heads per layer")]
    assert heads.true == course_lab_config(100).n_head == 2 and heads.difference == 6
    layers = by[("002", "all encoder layers")]
    assert (layers.claimed, layers.as_written, layers.true) == (10_968_200, 968_000, 968_000)
    assert layers.difference == analytic_counts(course_lab_config(50_001))["embedding"] == 10_000_200
    wrong = {(c.report, c.quantity) for c in COURSE_CLAIMS if c.difference}
    assert wrong == {
        ("000", "attention heads per layer"),
        ("000", "embedding (eq. 3)"),
        ("002", "all encoder layers"),
    }
    assert all(c.as_written == c.true for c in COURSE_CLAIMS if "heads per layer" not in c.quantity)


def test_formatters_print_every_row():
    text = format_counts(course_lab_config(50_001))
    assert "10,968,200" in text and "10,050,201" in text and "MISMATCH" not in text
    table = format_course_claims()
    assert len(table.splitlines()) == len(COURSE_CLAIMS) + 1 and "+180,000" in table


def test_unknown_parameter_names_are_not_silently_skipped():
    assert component_of("base.blocks.0.attn.qkv.weight") == "attention"
    assert component_of("base.transformer_encoder.layers.1.linear2.bias") == "feed_forward"
    with pytest.raises(KeyError):
        component_of("base.adapter.weight")


def test_the_classifier_counts_its_body_and_class_head_not_the_unused_lm_head():
    """The model card, the report and the finetune stage count the same parameters."""
    model = TinyTransformer(cfg())
    counts = analytic_counts(cfg())
    assert classifier_parameters(model) == counts["base"] + counts["cls_head"]
    assert sum(p.numel() for p in model.parameters()) - classifier_parameters(model) == counts["lm_head"]
