import pytest
import yaml

from tests.helpers.paths import REPO
from tinytf.errors import ParamsError
from tinytf.params.config import load_params


def write(tmp_path, data) -> str:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def repo_params() -> dict:
    return yaml.safe_load((REPO / "params.yaml").read_text())


def test_repo_params_are_valid():
    params = load_params(REPO / "params.yaml")
    assert params.prepare.corpus.source == "ptb"
    assert params.tokenize.vocab_size > 0


def test_unknown_key_suggests_the_close_one(tmp_path):
    data = repo_params()
    data["tokenize"]["vocab_sise"] = 10
    path = write(tmp_path, data)
    with pytest.raises(
        ParamsError, match=r"unknown key 'tokenize.vocab_sise' \(did you mean 'tokenize.vocab_size'\?\)"
    ) as err:
        load_params(path)
    assert path in str(err.value)


@pytest.mark.parametrize(
    "section, key, value, message",
    [
        ("tokenize", "vocab_size", "big", "tokenize.vocab_size: expected an integer"),
        ("tokenize", "vocab_size", 3, "tokenize.vocab_size: must be >= 64, got 3"),
        ("tokenize", "lowercase", "yes", "tokenize.lowercase: expected true or false"),
        ("tokenize", "kind", "bpee", "did you mean 'bpe'"),
        ("base", "seed", -1, "base.seed: must be >= 0"),
        ("base", "seed", True, "base.seed: expected an integer"),
        ("tokenize", "vocab_size", 200, "byte-level BPE needs more than 261"),
        ("model", "n_head", 3, "model.n_head: 3 heads do not divide model.d_model=128"),
        ("model", "dropout", 1.0, "model.dropout: must be < 1"),
        ("pretrain", "lr", -0.1, "pretrain.lr: must be > 0"),
        ("pretrain", "batch_size", 0, "pretrain.batch_size: must be >= 1"),
        ("variants", "lr", 0, "variants.lr: must be > 0"),
        ("grid", "optimizers", ["Adamw"], "'Adamw' is not a torch.optim optimizer .did you mean 'AdamW'"),
        ("grid", "lrs", [], "grid.lrs: empty"),
        ("finetune", "starts", ["pretrained"], "finetune.starts: needs 'scratch'"),
    ],
)
def test_bad_values_name_the_key(tmp_path, section, key, value, message):
    data = repo_params()
    data[section][key] = value
    with pytest.raises(ParamsError, match=message):
        load_params(write(tmp_path, data))


def test_nested_unknown_source(tmp_path):
    data = repo_params()
    data["prepare"]["sentiment"]["source"] = "imdbb"
    with pytest.raises(ParamsError, match=r"prepare.sentiment.source: 'imdbb' is not one of"):
        load_params(write(tmp_path, data))


def test_split_fractions_must_leave_room_for_train(tmp_path):
    data = repo_params()
    data["prepare"]["sentiment"]["split"] = {"validation": 0.5, "test": 0.5}
    with pytest.raises(ParamsError, match="prepare.sentiment.split: validation \\+ test must be below 1"):
        load_params(write(tmp_path, data))


def test_missing_section(tmp_path):
    data = repo_params()
    del data["tokenize"]
    with pytest.raises(ParamsError, match="missing section 'tokenize'"):
        load_params(write(tmp_path, data))


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ParamsError, match="file not found"):
        load_params(tmp_path / "nope.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("base: [unclosed\n")
    with pytest.raises(ParamsError, match="not valid YAML"):
        load_params(bad)


def test_overrides_are_validated_too():
    params = load_params(REPO / "params.yaml", {"tokenize.vocab_size": 500})
    assert params.tokenize.vocab_size == 500
    with pytest.raises(ParamsError, match="tokenize.max_length: must be >= 2"):
        load_params(REPO / "params.yaml", {"tokenize.max_length": 0})


def test_float_written_without_dot_is_accepted(tmp_path):
    data = repo_params()
    data["prepare"]["sentiment"]["split"] = {"validation": "1e-1", "test": 0.1}
    assert load_params(write(tmp_path, data)).prepare.sentiment.split.validation == pytest.approx(0.1)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            {"prepare.sentiment.files": {"train": "data/raw/a.csv"}},
            r"prepare.sentiment.files is only read with source: files, but prepare.sentiment.source is "
            r"'rt_critic_snippets'; set prepare.sentiment.source: files",
        ),
        (
            {"prepare.sentiment.label_column": "stars"},
            r"prepare.sentiment.label_column is only read with source: files",
        ),
        (
            {"prepare.corpus.text_column": "body"},
            r"prepare.corpus.text_column is only read with source: files",
        ),
        (
            {"prepare.corpus.files": {"train": "data/raw/a.txt"}},
            r"prepare.corpus.files is only read with source: files",
        ),
        (
            {"prepare.sentiment.source": "sst2", "prepare.sentiment.split.test": 0.2},
            r"'sst2' has its own validation",
        ),
        (
            {
                "prepare.sentiment.source": "files",
                "prepare.sentiment.files": {"train": "a.csv", "test": "a.csv"},
            },
            r"prepare.sentiment.files: train and test are the same file \(a.csv\)",
        ),
        (
            {
                "prepare.sentiment.source": "files",
                "prepare.sentiment.files": {"train": "a.csv", "validation": "b.csv", "test": "c.csv"},
                "prepare.sentiment.split.test": 0.2,
            },
            r"prepare.sentiment.split: all three files are given, so no split is carved",
        ),
        (
            {
                "prepare.sentiment.source": "files",
                "prepare.sentiment.files": {"train": "a.csv"},
                "prepare.sentiment.label_column": "text",
            },
            r"text_column and label_column are both 'text'",
        ),
        (
            {
                "prepare.sentiment.source": "files",
                "prepare.sentiment.files": {"train": "a.csv"},
                "prepare.sentiment.labels": ["neg", "pos", "neg"],
            },
            r"prepare.sentiment.labels: \['neg'\] listed twice",
        ),
    ],
)
def test_params_that_contradict_each_other_are_refused_naming_the_key(overrides, message):
    with pytest.raises(ParamsError, match=message):
        load_params(REPO / "params.yaml", overrides)


def test_corpus_text_column_may_be_set_for_in_domain_files_beside_ptb():
    params = load_params(
        REPO / "params.yaml",
        {"prepare.corpus.text_column": "review", "prepare.corpus.in_domain.files": ["data/raw/u.csv"]},
    )
    assert params.prepare.corpus.text_column == "review"


def test_the_files_keys_are_listed_as_null_so_dvc_s_sets_them_and_null_is_the_default(tmp_path):
    raw = repo_params()
    # `dvc exp run -S` sets only keys the file has (no Hydra `+`): they are listed, null, beside ptb
    listed = {
        "corpus": ("files", "text_column", "encoding"),
        "sentiment": ("files", "text_column", "label_column", "labels", "encoding"),
    }
    for section, keys in listed.items():
        assert set(keys) <= set(raw["prepare"][section]), section
        for key in keys:  # the file as it was before they were listed: the same params
            raw["prepare"][section].pop(key)
    assert load_params(write(tmp_path, raw)) == load_params(REPO / "params.yaml")
    own = {"prepare.sentiment.source": "files", "prepare.sentiment.files.train": "data/raw/r.csv"}
    sentiment = load_params(
        REPO / "params.yaml", {**own, "prepare.sentiment.text_column": "review"}
    ).prepare.sentiment
    assert (sentiment.text_column, sentiment.label_column, sentiment.labels) == ("review", "label", [])
    with pytest.raises(ParamsError, match="set prepare.sentiment.label_column back to null"):
        load_params(REPO / "params.yaml", {"prepare.sentiment.label_column": "stars"})


def test_the_optimizer_names_read_from_torchs_source_are_the_classes_it_defines():
    """The params check lists torch.optim's optimizers without importing torch; for the installed
    torch that list is the one the imported module gives."""
    from tinytf.params.names import optimizer_classes, optimizer_names

    assert sorted(optimizer_names()) == sorted(optimizer_classes()) and "AdamW" in optimizer_names()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("finalists", [1, 3], r"grid.finalists: must be the ranks 1..K in order"),
        ("finalists", [2, 1], r"grid.finalists: must be the ranks 1..K in order"),
        ("finalists", [], r"grid.finalists: empty"),
        ("finalists", list(range(1, 14)), r"grid.finalists: 13 finalists but 12 cells"),
        ("finalist_seeds", [2, 2], r"grid.finalist_seeds"),
        ("finalist_seeds", [1, 2], r"grid.finalist_seeds: 1 is round one's seed"),
        ("finalist_seeds", [], r"grid.finalist_seeds: empty"),
    ],
)
def test_bad_finalists_name_the_key(tmp_path, key, value, message):
    data = repo_params()
    data["grid"][key] = value
    with pytest.raises(ParamsError, match=message):
        load_params(write(tmp_path, data))
