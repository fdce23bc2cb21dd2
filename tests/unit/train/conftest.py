"""Fixtures of the training tests."""

from __future__ import annotations

import pytest

from tests.helpers.lm_fixtures import make_sentiment_dir


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    """A tiny sentiment dataset with its tokenizer and a pretrained checkpoint."""
    return make_sentiment_dir(tmp_path_factory.mktemp("cls"))
