"""tinytf's dropout: nn.Dropout's semantics with cheaper random numbers."""

from __future__ import annotations

import pytest
import torch

from tinytf.model.dropout import Dropout


def test_keeps_each_element_with_probability_1_minus_p_and_scales_to_keep_the_mean():
    torch.manual_seed(0)
    out = Dropout(0.1).train()(torch.ones(2_000_000))
    kept = out != 0
    assert abs(kept.float().mean().item() - 0.9) < 0.001  # binomial sd ~0.0002
    assert torch.allclose(out[kept], torch.full_like(out[kept], 65536 / (65536 - 6554)))
    assert abs(out.mean().item() - 1.0) < 0.002


def test_masks_are_independent_of_position():
    torch.manual_seed(1)
    kept = (Dropout(0.5).train()(torch.ones(1000, 1000)) != 0).float()
    assert kept.mean(0).std() < 0.03 and kept.mean(1).std() < 0.03  # no striped rows or columns


def test_same_seed_same_mask_and_eval_is_the_identity():
    x = torch.randn(64, 33)
    d = Dropout(0.2).train()
    torch.manual_seed(3)
    a = d(x)
    torch.manual_seed(3)
    assert torch.equal(a, d(x))
    assert torch.equal(d.eval()(x), x)
    assert torch.equal(Dropout(0.0).train()(x), x)


def test_gradient_flows_through_kept_elements_only():
    x = torch.randn(1000, requires_grad=True)
    torch.manual_seed(4)
    y = Dropout(0.3).train()(x)
    y.sum().backward()
    assert torch.equal(x.grad == 0, y == 0)


def test_rejects_a_probability_outside_0_1():
    with pytest.raises(ValueError, match="dropout probability"):
        Dropout(1.0)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64])
@pytest.mark.parametrize("p", [0.1, 0.25, 0.5, 0.9])
def test_mask_values_are_the_float32_scale_cast_to_the_dtype(p, dtype):
    # the committed results were trained with masks made as float32 then cast: any other
    # rounding of the scale would move them
    from tinytf.model.dropout import dropout_mask

    torch.manual_seed(5)
    mask = dropout_mask(torch.Size([64, 33]), p, torch.device("cpu"), dtype)
    kept = 1 - round(p * 65536) / 65536
    expected = torch.where(mask != 0, 1.0 / kept, 0.0).to(dtype)
    assert mask.dtype == dtype and torch.equal(mask, expected)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_mask_is_the_one_the_committed_results_were_trained_with(dtype):
    # the mask is cast through uint8 for speed; the same seed must keep the same elements
    from tinytf.model.dropout import dropout_mask, mask_constants

    threshold, scale = mask_constants(0.1)
    torch.manual_seed(6)
    mask = dropout_mask(torch.Size([32, 4, 37, 37]), 0.1, torch.device("cpu"), dtype)
    torch.manual_seed(6)
    bits = torch.randint(-(1 << 63), (1 << 63) - 1, ((mask.numel() + 3) // 4,), dtype=torch.int64)
    uniform = bits.view(torch.int16)[: mask.numel()].view(mask.shape)
    assert torch.equal(mask, (uniform >= threshold).to(dtype) * scale)


def test_torch_compile_traces_the_dropout_whole():
    # a compiled training step with dropout fell back to eager when the tracer met `struct`
    # (tinytf.train.runtime.maybe_compile's warning); one graph, no break, and in training the
    # traced module still drops
    import torch._dynamo

    d = Dropout(0.25).train()
    explained = torch._dynamo.explain(d)(torch.ones(64, 33))
    assert explained.graph_count == 1 and explained.graph_break_count == 0
    compiled = torch.compile(d, backend="eager")
    out = compiled(torch.ones(4000))
    assert 0.7 < (out == 0).float().mean().item() * 4 < 1.3  # about a quarter dropped
    d.p = 0.5  # the mask's constants follow p, as nn.Dropout's p can be set
    assert d._constants == (0, 2.0)
