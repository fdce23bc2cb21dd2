"""The GPU study's question in one paragraph: does our own pretrained model beat TF-IDF + logistic
regression with all labels, and by how much? Read from a finished run's reports/ only (finetune's
runs.csv, baselines' summary.json, and per-item `predictions` files where the stages write them).

- Over seeds: the pretrained start's test accuracy per seed against TF-IDF + LR's on the same seed
  (one fit for every seed when all labels leave nothing to draw: then a one-sample test),
  `tinytf.analysis.evaluation.paired_comparison`: t-test and sign test, and the t interval.
- Over test items: where reports/finetune/ and reports/baselines/ hold `predictions.{csv,parquet}`
  with `arm`, `labels`, `seed`, `item` and `correct` columns, each item's accuracy over seeds,
  pretrained minus TF-IDF, paired t-test over items with its interval; otherwise it says why not.

    python benchmarks/study_verdict.py [--reports reports] [--out verdict.md]

Prints the paragraph (its last line is the headline) and writes it to --out.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from tinytf.analysis.evaluation import paired_comparison

ALPHA = 0.05
ITEM_COLUMNS = {"arm", "labels", "seed", "item", "correct"}


def over_seeds(reports: Path) -> dict:
    runs = pd.read_csv(reports / "finetune" / "runs.csv", dtype={"labels": str})
    ours = runs[runs["chosen"] & (runs["start"] == "final") & (runs["arm"] == "pretrained")]
    ours = ours[ours["labels"] == "all"].set_index("seed")["test_accuracy"].sort_index()
    tfidf = json.loads((reports / "baselines" / "summary.json").read_text())["label_curve"]["all"]["tfidf_lr"]
    by_seed = {int(s): v for s, v in tfidf["by_seed"].items()}
    if len(by_seed) == 1:  # all labels: one subset, one fit, whatever the seed
        by_seed = dict.fromkeys(ours.index, next(iter(by_seed.values())))
    seeds = [s for s in ours.index if s in by_seed]
    if not seeds:
        raise SystemExit("study_verdict: no seed has both a pretrained run and a TF-IDF fit with all labels")
    a, b = [float(ours[s]) for s in seeds], [float(by_seed[s]) for s in seeds]
    result = paired_comparison(a, b) | {"pretrained": float(np.mean(a)), "tfidf_lr": float(np.mean(b))}
    result["interval"] = _t_interval(np.asarray(a) - np.asarray(b))
    return result


def over_items(reports: Path) -> dict:
    """Each test item's accuracy over seeds, pretrained minus TF-IDF; or why there is no test."""
    frames = []
    for stage in ("finetune", "baselines"):
        found = sorted((reports / stage).glob("predictions.*"))
        if not found:
            return {"missing": f"no {reports / stage}/predictions.* file"}
        frame = pd.read_parquet(found[0]) if found[0].suffix == ".parquet" else pd.read_csv(found[0])
        if not ITEM_COLUMNS <= set(frame.columns):
            return {"missing": f"{found[0]} lacks the columns {sorted(ITEM_COLUMNS - set(frame.columns))}"}
        frames.append(frame[list(ITEM_COLUMNS)])
    items = pd.concat(frames)
    items = items[items["labels"].astype(str) == "all"]
    per_item = items.groupby(["arm", "item"])["correct"].mean().unstack("arm")
    if not {"pretrained", "tfidf_lr"} <= set(per_item.columns):
        return {"missing": f"the predictions with all labels hold the arms {sorted(per_item.columns)}"}
    diff = (per_item["pretrained"] - per_item["tfidf_lr"]).dropna().to_numpy()
    test = stats.ttest_1samp(diff, 0.0) if np.ptp(diff) > 0 else None
    return {
        "n": int(len(diff)),
        "mean_difference": float(diff.mean()),
        "p_value": None if test is None else float(test.pvalue),
        "interval": _t_interval(diff),
    }


def _t_interval(diff: np.ndarray, level: float = 0.95) -> list[float] | None:
    if len(diff) < 2 or np.ptp(diff) == 0:
        return None
    low, high = stats.t.interval(level, len(diff) - 1, loc=diff.mean(), scale=stats.sem(diff))
    return [float(low), float(high)]


def verdict(seeds: dict, items: dict) -> list[str]:
    gap, p = 100 * seeds["mean_difference"], seeds.get("p_value")
    ci = seeds["interval"]
    p_text = "no test (every seed differs by the same amount)" if p is None else f"p = {p:.3g}"
    lines = [
        f"With all labels, our pretrained start reaches {100 * seeds['pretrained']:.2f}% of test and TF-IDF + LR "
        f"{100 * seeds['tfidf_lr']:.2f}%: {gap:+.2f} points over {seeds['n']} seeds ({seeds['test']}, {p_text}"
        + (f", 95% interval {100 * ci[0]:+.2f} to {100 * ci[1]:+.2f}" if ci else "")
        + ")."
    ]
    if "missing" in items:
        lines.append(f"Over test items: not tested ({items['missing']}).")
    else:
        ci_items = items["interval"]
        lines.append(
            f"Over {items['n']} test items (each item's accuracy over seeds): {100 * items['mean_difference']:+.2f} "
            f"points, paired t-test p = {items['p_value']:.3g}"
            + (f", 95% interval {100 * ci_items[0]:+.2f} to {100 * ci_items[1]:+.2f}" if ci_items else "")
            + "."
            if items["p_value"] is not None
            else f"Over {items['n']} test items: every item differs by the same amount."
        )
    tested = [t for t in (p, items.get("p_value")) if t is not None]
    if tested and max(tested) < ALPHA:
        word = "beats" if gap > 0 else "loses to"
        lines.append(
            f"verdict: our pretrained model {word} TF-IDF + LR with all labels, by {abs(gap):.2f} points"
        )
    else:
        lines.append(
            f"verdict: no difference detected between our pretrained model and TF-IDF + LR with all labels "
            f"at this budget ({gap:+.2f} points)"
        )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reports", type=Path, default=Path("reports"))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    seeds, items = over_seeds(args.reports), over_items(args.reports)
    lines = verdict(seeds, items)
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text, encoding="utf-8")
        args.out.with_suffix(".json").write_text(
            json.dumps({"seeds": seeds, "items": items}, indent=1) + "\n"
        )
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
