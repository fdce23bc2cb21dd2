"""The GPU study's question in one paragraph: does our own pretrained model beat TF-IDF + logistic
regression with all labels, and by how much? Read from the finished run's own tests, in
reports/finetune/summary.json: `label_curve.all.pretrained_vs_tfidf` (paired over seeds, one-sample
where TF-IDF is one fit for every seed; Holm across the label counts) and its `items` (the same
comparison over the test texts, from the kept predictions). One test, computed once, by the
finetune stage: this only words it.

    python benchmarks/study_verdict.py [--reports reports] [--out verdict.md]

Prints the paragraph (its last line is the headline) and writes it to --out (and its numbers to
the .json beside it).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ALPHA = 0.05


def from_summary(reports: Path) -> tuple[dict, dict]:
    """(the test over seeds with both means, the test over items or why there is none)."""
    path = reports / "finetune" / "summary.json"
    entry = (json.loads(path.read_text()).get("label_curve") or {}).get("all") or {}
    test = entry.get("pretrained_vs_tfidf")
    if test is None or "pretrained" not in entry:
        raise SystemExit(f"study_verdict: {path} has no all-labels pretrained_vs_tfidf test; rerun finetune")
    ours = entry["pretrained"]["mean"]
    seeds = test | {"pretrained": ours, "tfidf_lr": ours - test["mean_difference"]}
    items = test.get("items") or {"missing": "the finetune stage kept no predictions"}
    return seeds, items


def verdict(seeds: dict, items: dict) -> list[str]:
    gap, p, holm = 100 * seeds["mean_difference"], seeds.get("p_value"), seeds.get("p_holm")
    p_text = "no test (every seed differs by the same amount)" if p is None else f"p = {p:.3g}"
    if holm is not None:
        p_text += f", Holm p = {holm:.3g}"
    lines = [
        f"With all labels, our pretrained start reaches {100 * seeds['pretrained']:.2f}% of test and TF-IDF + LR "
        f"{100 * seeds['tfidf_lr']:.2f}%: {gap:+.2f} points over {seeds['n']} seeds ({seeds['test']}, {p_text})."
    ]
    if "missing" in items:
        lines.append(f"Over test items: not tested ({items['missing']}).")
    else:
        low, high = items["ci95"]
        lines.append(
            f"Over {items['n_items']} test items ({items['method']}): {100 * items['mean_difference']:+.2f} points, "
            f"p = {items['p_value']:.3g}, 95% interval {100 * low:+.2f} to {100 * high:+.2f}."
        )
    decisive = [t for t in (holm if holm is not None else p, items.get("p_value")) if t is not None]
    if decisive and max(decisive) < ALPHA:
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
    seeds, items = from_summary(args.reports)
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
