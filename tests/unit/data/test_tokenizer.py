import random
import time

import numpy as np
import pandas as pd
import pytest

from tinytf.data.tokenizer import (
    CLS,
    EOS,
    MAX_TRAINING_WORD,
    PAD,
    SPECIAL_TOKENS,
    UNK,
    encode,
    encode_stream,
    run_tokenize,
    train_tokenizer,
    training_texts,
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


def test_texts_without_an_over_long_word_reach_training_unchanged():
    texts = [*TEXTS, "x" * MAX_TRAINING_WORD + " end", "\u4e00" * MAX_TRAINING_WORD]
    trained = list(training_texts(texts))
    assert trained == texts and all(a is b for a, b in zip(trained, texts, strict=True))


def test_an_over_long_word_reaches_training_in_pieces_of_the_bound():
    word = "ab" * MAX_TRAINING_WORD  # 2 x the bound, then a third piece of 1
    assert list(training_texts([f"before  {word}c after"])) == [
        "before  ",
        word[:MAX_TRAINING_WORD],
        word[MAX_TRAINING_WORD:],
        "c",
        " after",
    ]


def test_a_megabyte_text_without_spaces_trains_in_seconds():
    # issue 72: a 10 MB text without spaces stalled `tokenize` for more than 400 s; whole, BPE took
    # 4.5 s on 100 KB and 31 s on 300 KB of one word (the commit that bounded it)
    rng = random.Random(0)
    word = "".join(rng.choice("abcdefghij") for _ in range(1_000_000))
    started = time.perf_counter()
    tok = train_tokenizer([*TEXTS, word], TokenizeParams(vocab_size=400, min_frequency=2))
    assert time.perf_counter() - started < 30
    assert tok.decode(tok.encode(word[:5000], add_special_tokens=False).ids).strip() == word[:5000]


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
