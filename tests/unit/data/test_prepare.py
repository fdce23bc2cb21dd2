import json

import pandas as pd
import pytest

from tests.helpers.paths import REPO
from tinytf.data.prepare import load_corpus, load_sentiment, run_prepare
from tinytf.errors import DataError, ParamsError
from tinytf.params.config import load_params


def params(**overrides):
    return load_params(REPO / "params.yaml", overrides)


def test_sst2_through_the_mirror(shared_data, monkeypatch):
    monkeypatch.setenv("TINYTF_MIRROR", str(shared_data))
    data = load_sentiment(params(**{"prepare.sentiment.source": "sst2"}).prepare.sentiment, seed=0)
    assert {s: len(f) for s, f in data.splits.items()} == {"train": 6920, "validation": 872, "test": 1821}
    assert data.splits["train"]["label"].value_counts().to_dict() == {1: 3610, 0: 3310}
    assert data.classes == ["negative", "positive"]


def test_rotten_tomatoes_grouped_stratified_and_deterministic():
    p = params().prepare.sentiment
    a = load_sentiment(p, seed=7)
    b = load_sentiment(p, seed=7)
    for split in a.splits:
        pd.testing.assert_frame_equal(a.splits[split], b.splits[split])
    sizes = {s: len(f) for s, f in a.splits.items()}
    total = sum(sizes.values())
    assert sizes["validation"] / total == pytest.approx(0.1, abs=0.01)
    assert a.notes["dropped_plot_rows"] == 1097
    texts = [set(f["text"]) for f in a.splits.values()]
    assert not (texts[0] & texts[1]) and not (texts[0] & texts[2])
    balance = [f["label"].mean() for f in a.splits.values()]
    assert max(balance) - min(balance) < 0.02
    # each text keeps its movie (`group`), no movie in two splits: the multi-bootstrap draws movies
    movies = [set(f["group"]) for f in a.splits.values()]
    assert not (movies[0] & movies[1]) and not (movies[0] & movies[2]) and not (movies[1] & movies[2])
    assert {s: len(m) for s, m in zip(a.splits, movies, strict=True)} == a.notes["movies"]


def test_the_lm_reads_only_synopses_of_train_movies():
    from tinytf.data import sources

    frame = sources.open_bz2_csv(sources.read_rotten_tomatoes_csv())
    data = load_sentiment(params().prepare.sentiment, seed=7)
    plots = frame[frame["category"] == "plot"].assign(text=lambda f: f["text"].astype(str).str.strip())
    movie_of = dict(zip(plots["text"], plots["movie_name"].astype(str), strict=False))
    train_movies = set(
        frame.loc[
            frame["text"].astype(str).str.strip().isin(set(data.splits["train"]["text"])), "movie_name"
        ].astype(str)
    )
    read = set(data.unlabelled)
    assert read and all(movie_of[text] in train_movies for text in read)
    held_out = data.notes["plot_rows_of_held_out_movies"]
    assert held_out > 0 and len(data.unlabelled) + held_out <= data.notes["dropped_plot_rows"]


def test_ptb_rows_and_word_counts_match_sources_md():
    data = load_corpus(params().prepare.corpus, seed=0)
    assert {s: len(f) for s, f in data.splits.items()} == {"train": 42068, "validation": 3370, "test": 3761}
    words = {s: int(f["text"].str.split().str.len().sum() + len(f)) for s, f in data.splits.items()}
    assert words == {"train": 929589, "validation": 73760, "test": 82430}


def byo(tmp_path, train_rows, test_rows=None):
    train = tmp_path / "train.csv"
    pd.DataFrame(train_rows, columns=["body", "stars"]).to_csv(train, index=False)
    files = {"train": str(train)}
    if test_rows is not None:
        test = tmp_path / "test.csv"
        pd.DataFrame(test_rows, columns=["body", "stars"]).to_csv(test, index=False)
        files["test"] = str(test)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(f"line number {i}" for i in range(200)))
    return params(
        **{
            "prepare.corpus.source": "files",
            "prepare.corpus.files": {"train": str(corpus)},
            "prepare.sentiment.source": "files",
            "prepare.sentiment.files": files,
            "prepare.sentiment.text_column": "body",
            "prepare.sentiment.label_column": "stars",
        }
    )


def test_bring_your_own_three_classes_carves_missing_splits(tmp_path):
    rows = [(f"review {i}", ["bad", "ok", "great"][i % 3]) for i in range(300)]
    p = byo(tmp_path, rows)
    datasets, stats = run_prepare(p.prepare, p.base.seed, tmp_path / "out", tmp_path / "reports")
    labels = json.loads((tmp_path / "out" / "sentiment" / "labels.json").read_text())
    assert labels == {"classes": ["bad", "great", "ok"]}
    sizes = {s: v["rows"] for s, v in stats["sentiment"]["splits"].items()}
    assert sizes == {"train": 240, "validation": 30, "test": 30}
    assert stats["sentiment"]["notes"]["carved_from_train"] == ["validation", "test"]
    test = pd.read_parquet(tmp_path / "out" / "sentiment" / "test.parquet")
    assert list(test.columns) == ["text", "label"] and sorted(test["label"].unique()) == [0, 1, 2]
    assert "## sentiment: `files`" in (tmp_path / "reports" / "data.md").read_text()


def test_unknown_label_fails_before_anything_is_written(tmp_path):
    p = byo(tmp_path, [(f"r{i}", "pos" if i % 2 else "neg") for i in range(50)], [("odd one", "meh")])
    with pytest.raises(DataError, match=r"test.csv: line 2: label 'meh' is not a known class"):
        run_prepare(p.prepare, p.base.seed, tmp_path / "out", tmp_path / "reports")
    assert not (tmp_path / "out").exists() and not (tmp_path / "reports").exists()


def test_empty_split_is_an_error(tmp_path):
    p = byo(tmp_path, [(f"r{i}", "pos" if i % 2 else "neg") for i in range(20)], [])
    with pytest.raises(DataError, match=r"sentiment split 'test' is empty \(source files, .*test.csv\)"):
        run_prepare(p.prepare, p.base.seed, tmp_path / "out", tmp_path / "reports")


def test_in_domain_text_joins_lm_train_without_any_held_out_sentiment_text(tmp_path):
    rows = [(f"review number {i}", "pos" if i % 2 else "neg") for i in range(100)]
    test_rows = [("A  Held-out REVIEW", "pos"), ("another held out one", "neg")]
    p = byo(tmp_path, rows, test_rows)
    news = [f"news line {i}" for i in range(60)]
    (tmp_path / "corpus.txt").write_text("\n".join(["a held-out review"] + news))
    extra = tmp_path / "unlabelled.jsonl"
    extra.write_text('{"text": "an unlabelled review"}\n{"text": "Another held out one"}\n{"text": "  "}\n')
    p.prepare.corpus.in_domain.files = [str(extra)]
    p.prepare.corpus.in_domain.repeat = 2
    datasets, stats = run_prepare(p.prepare, p.base.seed, tmp_path / "out", tmp_path / "reports")
    lm = {
        s: pd.read_parquet(tmp_path / "out" / "corpus" / f"{s}.parquet")["text"]
        for s in ("train", "validation")
    }
    train_texts = list(lm["train"])
    held_out = {" ".join(t.lower().split()) for t, _ in test_rows}
    assert not held_out & {" ".join(t.lower().split()) for t in train_texts}
    sentiment_train = pd.read_parquet(tmp_path / "out" / "sentiment" / "train.parquet")["text"]
    assert all(train_texts.count(t) == 2 for t in sentiment_train)  # repeat: 2, labels not stored
    assert train_texts.count("an unlabelled review") == 2
    note = stats["corpus"]["notes"]["in_domain"]
    dropped_from_corpus = sum(
        note["dropped_overlaps"][f"corpus {s}"] for s in ("train", "validation", "test")
    )
    assert dropped_from_corpus == 1 and note["dropped_overlaps"][str(extra)] == 1
    assert note["dropped_empty"] == {str(extra): 1}  # read, not kept, and counted
    assert note["parts"]["sentiment train texts"]["rows"] == len(sentiment_train)
    card = (tmp_path / "reports" / "data.md").read_text()
    assert "Overlap check against the" in card and "texts dropped: corpus train:" in card


def run(p, tmp_path):
    return run_prepare(p.prepare, p.base.seed, tmp_path / "out", tmp_path / "reports")


def test_a_missing_label_on_the_carving_path_is_an_error_naming_the_line(tmp_path):
    # the README's carving example (train only) once ended in a TypeError traceback
    rows = [(f"review {i}", "pos" if i % 2 else "neg") for i in range(40)]
    rows[7] = ("no label on this one", None)
    p = byo(tmp_path, rows)
    with pytest.raises(DataError, match=r"train.csv: line 9: the label \('stars'\) is empty"):
        run(p, tmp_path)
    assert not (tmp_path / "out").exists() and not (tmp_path / "reports").exists()


def test_a_txt_train_file_needs_its_classes_listed(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("\n".join([f"{i % 2} review {i}" for i in range(40)] + ["great movie without a label"]))
    p = byo(tmp_path, [("x", "pos")])
    p.prepare.sentiment.files.train = str(train)
    with pytest.raises(
        DataError, match=r"train.txt: a .txt line's first word is its label.*prepare.sentiment.labels"
    ):
        run(p, tmp_path)
    p.prepare.sentiment.labels = ["0", "1"]
    with pytest.raises(DataError, match=r"train.txt.*line 41: label 'great' is not a known class"):
        run(p, tmp_path)


def test_every_row_read_is_kept_or_dropped_for_a_counted_reason(tmp_path):
    rows = [(f"review {i}", "pos" if i % 2 else "neg") for i in range(100)]
    rows += [("", "pos"), ("   ", "neg"), ("Review 3", "neg"), ("review  5", "neg"), ("in test too", "pos")]
    p = byo(tmp_path, rows, [("In Test Too", "pos"), ("other", "neg")])
    datasets, stats = run(p, tmp_path)
    ledger = stats["sentiment"]["notes"]["rows"][str(tmp_path / "train.csv")]
    assert ledger["read"] == 105
    assert ledger["dropped"] == {
        "empty text": 2,
        "repeated text": 2,  # case and spacing do not make a text new (the tokenizer lowercases)
        "text also in validation or test": 1,
        "beyond max_rows": 0,
    }
    assert (
        ledger["repeats with another label"] == 2
    )  # both repeats say neg; "review 3" and "review 5" are pos
    assert sum(ledger["kept"].values()) == 100 and set(ledger["kept"]) == {"train", "validation"}
    sentiment = datasets[1]
    assert not (set(sentiment.splits["train"]["text"].str.lower()) & {"in test too"})
    card = (tmp_path / "reports" / "data.md").read_text()
    assert "| dropped: empty text " in card and "read = kept + dropped" in card


def test_a_split_left_empty_by_drops_says_why(tmp_path):
    p = byo(tmp_path, [(f"r{i}", "pos" if i % 2 else "neg") for i in range(20)], [("", "pos")])
    with pytest.raises(
        DataError, match=r"split 'test' is empty .*test.csv\): 1 rows read, dropped: 1 empty text"
    ):
        run(p, tmp_path)


def test_a_failed_prepare_leaves_the_previous_outputs_whole(tmp_path):
    p = byo(tmp_path, [(f"review {i}", "pos" if i % 2 else "neg") for i in range(60)])
    run(p, tmp_path)
    before = {f: f.read_bytes() for f in sorted((tmp_path / "out").rglob("*")) if f.is_file()}
    card = (tmp_path / "reports" / "data.md").read_text()
    (tmp_path / "train.csv").write_text('body,stars\nfine,pos\n"open quote,neg\n')
    with pytest.raises(DataError, match="never closed"):
        run(p, tmp_path)
    after = {f: f.read_bytes() for f in sorted((tmp_path / "out").rglob("*")) if f.is_file()}
    assert after == before and (tmp_path / "reports" / "data.md").read_text() == card


def test_a_failing_before_swap_check_puts_nothing_in_place(tmp_path):
    """stages/prepare.py passes its params check (params.yaml edited while it ran) as before_swap."""
    p = byo(tmp_path, [(f"review {i}", "pos" if i % 2 else "neg") for i in range(60)])
    run(p, tmp_path)
    before = {f: f.read_bytes() for f in sorted((tmp_path / "out").rglob("*")) if f.is_file()}
    card = (tmp_path / "reports" / "data.md").read_text()
    p = byo(tmp_path, [(f"another review {i}", "pos" if i % 2 else "neg") for i in range(80)])

    def changed():
        raise ParamsError("params.yaml changed while prepare ran; run again")

    with pytest.raises(ParamsError, match="changed while prepare ran"):
        run_prepare(p.prepare, p.base.seed, tmp_path / "out", tmp_path / "reports", before_swap=changed)
    after = {f: f.read_bytes() for f in sorted((tmp_path / "out").rglob("*")) if f.is_file()}
    assert after == before and (tmp_path / "reports" / "data.md").read_text() == card
    assert [f.name for f in tmp_path.iterdir() if "staging" in f.name] == []
