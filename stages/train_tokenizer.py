"""Stage `tokenize`: train the BPE (or WordPiece) tokenizer on the prepared corpus (and the
sentiment train texts), then encode every split: the corpus as one id stream per split, the
sentiment texts untruncated (the collate function truncates to tokenize.max_length).
A script named tokenize.py would shadow the standard library's `tokenize` module.
"""

import sys

import common

from tinytf.data.tokenizer import run_tokenize
from tinytf.tracking.runs import stage_run


def main() -> None:
    parser = common.stage_parser("tokenize", __doc__)
    parser.add_argument("--prepared", required=True, help="folder of the prepared parquet splits")
    parser.add_argument("--out", required=True, help="folder for tokenizer.json and tokens/")
    parser.add_argument("--report", required=True, help="JSON file of tokenizer statistics")
    args = parser.parse_args()
    params = common.load_params("tokenize", args)
    p = params.tokenize

    staged = common.staged_outputs(args, "tokenize", into=("out",), whole=("report",))
    with stage_run("tokenize", params.as_dict()) as tracker, staged:
        metrics, timings = run_tokenize(p, args.prepared, args.out, args.report)
        corpus, sentiment = metrics["corpus"], metrics["sentiment"]
        tracker.log_metrics(
            {f"corpus.{s}.tokens": m["tokens"] for s, m in corpus.items()}
            | {f"corpus.{s}.unk_rate": m["unk_rate"] for s, m in corpus.items()}
            | {f"sentiment.{s}.truncated": m["truncated_at_max_length"] for s, m in sentiment.items()}
            | timings
        )
        tracker.log_artifact(f"{args.out}/tokenizer.json")
        tracker.log_artifact(args.report)
        truncated = sum(m["truncated_at_max_length"] for m in sentiment.values())
        print(
            f"tokenizer: {metrics['vocab_size']} tokens ({p.kind}), trained in {timings['train_seconds']:.1f} s; "
            f"corpus {timings['corpus_megabytes']:.1f} MB encoded at {timings['encode_mb_per_s']:.1f} MB/s; "
            f"{truncated} sentiment texts longer than max_length={p.max_length}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    common.run(main)
