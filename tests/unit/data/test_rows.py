import pandas as pd
import pytest

from tinytf.data.rows import RowLedger, text_key, word_counts
from tinytf.data.tokenizer import build_tokenizer
from tinytf.params.config import TokenizeParams

SAMPLES = [
    "A Fine  Film",
    "tab\tand\nnewline",
    "ctrl\x07char",
    "Café ÀÉ",
    "ﬁne Ｆｕｌｌ width",
    "ΟΔΟΣ ΟΔΟΣ",
    "İstanbul",
    "中文字符 mixed",
    "  padded  ",
    "",
]


@pytest.mark.parametrize("kind", ["bpe", "wordpiece"])
@pytest.mark.parametrize("lowercase", [True, False])
def test_text_key_is_the_tokenizer_normalizer_with_whitespace_collapsed(kind, lowercase):
    normalizer = build_tokenizer(TokenizeParams(kind=kind, lowercase=lowercase))[0].normalizer
    expected = [" ".join(normalizer.normalize_str(s).split()) for s in SAMPLES]
    texts = pd.Series(SAMPLES * 2)  # repeats take the per-distinct-text path
    assert text_key(kind, lowercase)(texts).tolist() == expected * 2


def test_ledger_refuses_rows_that_went_nowhere():
    ledger = RowLedger()
    ledger.read("a.csv", 10)
    ledger.drop("a.csv", "empty text", 2)
    ledger.keep("a.csv", "train", 7)
    with pytest.raises(RuntimeError, match="a.csv: 10 rows read but 9 accounted for"):
        ledger.check()
    ledger.keep("a.csv", "test", 1)
    assert ledger.check()["a.csv"]["kept"] == {"train": 7, "test": 1}


def test_word_counts_count_each_text():
    assert word_counts(pd.Series(["a b", "a b", "", "one"])).tolist() == [2, 2, 0, 1]
