"""tinytf: a reproducible experiment pipeline for small transformers."""

__version__ = "0.1.0"
