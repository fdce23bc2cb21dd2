import numpy as np
import pandas as pd
import pytest

from tinytf.data.tokenizer import (
    CLS,
    EOS,
    PAD,
    SPECIAL_TOKENS,
    UNK,
    encode,
    encode_stream,
    run_tokenize,
    train_tokenizer,
)
from tinytf.errors import DataError
from tinytf.params.config import TokenizeParams

TEXTS = [
    "the movie was a delight from start to finish",
    "a dull , lifeless film with no reason to exist",
    "Mr. Smith's performance is astonishing !",
    "the plot is thin but the acting is strong",
] * 20


@pytest.mark.parametrize("kind", ["bpe", "wordpiece"])
def test_special_tokens_have_fixed_ids(kind):
    tok = train_tokenizer(TEXTS, TokenizeParams(kind=kind, vocab_size=300, min_frequency=1))
    assert [tok.token_to_id(t) for t in SPECIAL_TOKENS] == [0, 1, 2, 3, 4]
    assert (PAD, UNK, CLS, EOS) == ("[PAD]", "[UNK]", "[CLS]", "[EOS]")


def test_bpe_round_trip_is_lossless_up_to_lowercasing():
    tok = train_tokenizer(TEXTS, TokenizeParams(kind="bpe", vocab_size=300, min_frequency=1, lowercase=True))
    for text in TEXTS[:4] + ["unseen wörds & émojis 🙂"]:
        ids = tok.encode(text, add_special_tokens=False).ids
        assert UNK not in tok.decode(ids)
        assert tok.decode(ids).strip() == text.lower()


def test_bpe_keeps_case_when_asked():
    tok = train_tokenizer(TEXTS, TokenizeParams(kind="bpe", vocab_size=300, min_frequency=1, lowercase=False))
    assert tok.decode(tok.encode("Mr. Smith").ids).strip() == "Mr. Smith"


def test_wordpiece_marks_unseen_characters_unknown():
    tok = train_tokenizer(TEXTS, TokenizeParams(kind="wordpiece", vocab_size=300, min_frequency=1))
    assert tok.token_to_id(UNK) in tok.encode("the 🙂", add_special_tokens=False).ids


def test_training_is_deterministic():
    p = TokenizeParams(vocab_size=300, min_frequency=1)
    assert train_tokenizer(TEXTS, p).to_str() == train_tokenizer(TEXTS, p).to_str()


def test_stream_equals_per_line_encoding_plus_eos():
    tok = train_tokenizer(TEXTS, TokenizeParams(vocab_size=300, min_frequency=1))
    lines = TEXTS[:7]
    expected = [i for ids in encode(tok, lines) for i in ids + [tok.token_to_id(EOS)]]
    stream = encode_stream(tok, lines, chunk_lines=3)
    assert stream.dtype == np.uint16
    assert stream.tolist() == expected


def test_run_tokenize_writes_arrays_and_counts_truncation(tmp_path):
    for name in ("corpus", "sentiment"):
        for split in ("train", "validation", "test"):
            frame = pd.DataFrame({"text": TEXTS[:8]})
            if name == "sentiment":
                frame["label"] = [0, 1] * 4
            (tmp_path / "prepared" / name).mkdir(parents=True, exist_ok=True)
            frame.to_parquet(tmp_path / "prepared" / name / f"{split}.parquet")
    p = TokenizeParams(vocab_size=300, min_frequency=1, max_length=8)
    metrics, timings = run_tokenize(p, tmp_path / "prepared", tmp_path / "data", tmp_path / "tok.json")
    corpus = np.load(tmp_path / "data" / "tokens" / "corpus" / "train.npy", mmap_mode="r")
    assert corpus.dtype == np.uint16 and corpus.size == metrics["corpus"]["train"]["tokens"]
    assert (corpus == 4).sum() == 8  # one EOS per line
    stored = pd.read_parquet(tmp_path / "data" / "tokens" / "sentiment" / "test.parquet")
    lengths = stored["input_ids"].map(len)
    assert metrics["sentiment"]["test"]["truncated_at_max_length"] == int((lengths > 8).sum()) > 0
    assert timings["encode_mb_per_s"] > 0


def test_missing_prepared_split_names_the_file(tmp_path):
    with pytest.raises(DataError, match="corpus/train.parquet: file not found; run `dvc repro prepare`"):
        run_tokenize(TokenizeParams(), tmp_path, tmp_path, tmp_path / "t.json")
