"""build_start: the one way fine-tuning, the grid and evaluate get a model with the data it reads."""

import pytest
import torch

from tinytf.data.sentiment import SentimentData
from tinytf.errors import DataError
from tinytf.model.checkpoint import save_model
from tinytf.train.starts import build_classifier, build_start, classifier_config


def test_each_start_is_the_model_its_builders_make_with_our_data_and_length(workdir):
    data = SentimentData.load(workdir)
    pretrained = workdir / "models" / "pretrained.pt"
    for start in ("pretrained", "scratch", "frozen"):
        built = build_start(start, data, workdir, pretrained, 32, seed=5, dropout=0.2, attention="causal")
        alone = build_classifier(start, classifier_config(pretrained, 2, 0.2, "causal"), pretrained, 5)
        assert built.data is data and built.max_length == 32
        assert built.model.config == alone.config
        for (name, ours), theirs in zip(
            built.model.state_dict().items(), alone.state_dict().values(), strict=True
        ):
            assert torch.equal(ours, theirs), (start, name)


def test_a_trained_start_is_the_saved_classifier_loaded_whole(workdir, tmp_path):
    data = SentimentData.load(workdir)
    pretrained = workdir / "models" / "pretrained.pt"
    model = build_classifier("scratch", classifier_config(pretrained, 2), pretrained, 3)
    save_model(tmp_path / "cell.pt", model, stage="grid")
    served = build_start("trained", data, workdir, tmp_path / "cell.pt", 32)
    assert served.max_length == 32 and served.data is data
    assert torch.equal(served.model.cls_head.weight, model.cls_head.weight)


def test_an_unknown_start_is_named(workdir):
    data = SentimentData.load(workdir)
    with pytest.raises(DataError, match="unknown start 'probe'"):
        build_start("probe", data, workdir, workdir / "models" / "pretrained.pt", 32)
