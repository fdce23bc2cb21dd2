"""Dropout whose random numbers are cheap on a CPU.

`nn.Dropout` on a CPU draws one Mersenne Twister number per element through `bernoulli_`, a large
share of a step (benchmarks/); drawing 64-bit integers read as four 16-bit uniforms costs a sixth
of that. p is rounded to a multiple of 1/65536 and the scale uses that rounded p, so the expectation
is exact. Draws come from torch's global generator, so seeding and resuming work as with `nn.Dropout`.
"""

from __future__ import annotations

import math
import struct

import torch
from torch import Tensor, nn

_HALF = 1 << 15  # int16 uniforms lie in [-2^15, 2^15)


def mask_constants(p: float) -> tuple[int, float]:
    """(threshold, scale) of the mask for probability p: keep where an int16 uniform is >=
    threshold, scale kept elements by 1 / (1 - p'), p' = p rounded to a multiple of 2^-16."""
    threshold = round(p * 2 * _HALF) - _HALF
    kept = (_HALF - threshold) / (2 * _HALF)  # 1 - p'
    # rounded to float32: the scale the masks have always had
    return threshold, struct.unpack("f", struct.pack("f", 1.0 / kept))[0]


def dropout_mask(shape: torch.Size, p: float, device: torch.device, dtype: torch.dtype) -> Tensor:
    """Keep-mask scaled by 1 / (1 - p')."""
    return _mask(shape, *mask_constants(p), device, dtype)


def _mask(
    shape: torch.Size, threshold: int, scale: float, device: torch.device, dtype: torch.dtype
) -> Tensor:
    numel = math.prod(shape)
    bits = torch.randint(-(1 << 63), (1 << 63) - 1, ((numel + 3) // 4,), dtype=torch.int64, device=device)
    uniform = bits.view(torch.int16)[:numel].view(shape)
    # 0/1 bytes of uint8, not bool: torch's CPU kernels that write or read bool are not vectorised
    kept = torch.ge(uniform, threshold, out=torch.empty(shape, dtype=torch.uint8, device=device))
    return kept.to(dtype).mul_(scale)


class Dropout(nn.Module):
    """nn.Dropout's interface and semantics, with `dropout_mask`'s random numbers."""

    def __init__(self, p: float = 0.1):
        super().__init__()
        if not 0.0 <= p < 1.0:
            raise ValueError(f"dropout probability must be in [0, 1), got {p}")
        self.p = p

    @property
    def p(self) -> float:
        return self._p

    @p.setter
    def p(self, value: float) -> None:
        # worked out here, not in forward: torch.compile's tracer cannot trace `struct`, and a
        # compiled step with dropout fell back to eager
        self._p, self._constants = value, mask_constants(value)

    def forward(self, x: Tensor) -> Tensor:
        if not self.training or self.p == 0.0:
            return x
        return x * _mask(x.shape, *self._constants, x.device, x.dtype)

    def extra_repr(self) -> str:
        return f"p={self.p}"
