"""Statistics of prepared datasets and the markdown data card rendered from them."""

from __future__ import annotations

from itertools import combinations

import pandas as pd

from tinytf.data.markdown import environment
from tinytf.data.rows import word_counts
from tinytf.data.splits import SPLITS

QUANTILES = (0.5, 0.9, 0.99, 1.0)


def dataset_stats(data, key, match_rule: str) -> dict:
    """Rows, label balance, length quantiles, repeats and cross-split overlaps; texts are compared
    as the tokenizer sees them (`key`, described by `match_rule`)."""
    splits: dict[str, pd.DataFrame] = data.splits
    keys = {split: key(splits[split]["text"]) for split in SPLITS}
    per_split = {}
    for split in SPLITS:
        frame = splits[split]
        words = word_counts(frame["text"])
        entry = {
            "rows": int(len(frame)),
            "characters": int(frame["text"].str.len().sum()),
            "words": int(words.sum()),
            "words_per_text": {f"p{int(q * 100)}": float(words.quantile(q)) for q in QUANTILES},
            "duplicate_texts": int(keys[split].duplicated().sum()),
        }
        if data.classes:
            counts = frame["label"].value_counts()
            entry["labels"] = {name: int(counts.get(i, 0)) for i, name in enumerate(data.classes)}
        per_split[split] = entry
    texts = {split: set(keys[split]) for split in SPLITS}
    overlaps = {f"{a}&{b}": len(texts[a] & texts[b]) for a, b in combinations(SPLITS, 2)}
    stats = {
        "source": data.source,
        "files": data.files,
        "splits": per_split,
        "cross_split_overlaps": overlaps,
        "match_rule": match_rule,
        "notes": data.notes,
    }
    if data.classes:
        stats["classes"] = list(data.classes)
    return stats


def render_data_card(stats: dict) -> str:
    """data.md from data.json's statistics: the tables built here, the words in
    templates/data_card.md.j2."""
    from tinytf.data.sources import ORIGINS

    datasets = [
        {
            "name": name,
            "source": entry["source"],
            "origin": ORIGINS.get(entry["source"], ""),
            "table": _splits_table(entry["splits"]),
            "match_rule": entry.get("match_rule") or "exact",
            "overlaps": entry["cross_split_overlaps"],
            "ledger": _row_ledger(entry.get("notes", {}).get("rows")),
            "notes": entry.get("notes") or {},
        }
        for name, entry in stats.items()
    ]
    return environment("tinytf.data").get_template("data_card.md.j2").render(datasets=datasets)


def _splits_table(splits: dict) -> str:
    rows = []
    for split, s in splits.items():
        words = s["words_per_text"]
        row = {"split": split, "rows": s["rows"], "words": s["words"], "words/text p50": words["p50"]}
        row |= {"p90": words["p90"], "p99": words["p99"], "max": words["p100"]}
        row["duplicate texts"] = s["duplicate_texts"]
        for label, count in s.get("labels", {}).items():
            row[f"{label}"] = f"{count} ({count / max(s['rows'], 1):.1%})"
        rows.append(row)
    return pd.DataFrame(rows).to_markdown(index=False)


def _row_ledger(rows: dict | None) -> str | None:
    """The data card's table of what happened to every row of each bring-your-own file."""
    if not rows:
        return None
    columns = {}
    for path, entry in rows.items():
        column = {"rows read": entry["read"]}
        column.update({f"kept in {split}": entry["kept"].get(split, 0) for split in SPLITS})
        column.update({f"dropped: {reason}": n for reason, n in entry["dropped"].items()})
        column["(repeats with another label)"] = entry.get("repeats with another label", "")
        columns[f"`{path}`"] = column
    return pd.DataFrame(columns).to_markdown()
