"""Stage `prepare`: fetch and verify the corpus and sentiment sources, split them, and write
the parquet splits and the data card. Nothing is written until every check has passed.

Bring-your-own files must live under the `--raw` folder (data/raw/), which dvc.yaml declares
as a dependency: that is how `dvc repro` sees an edited data file. Texts are compared for
repeats and overlaps as the tokenizer will see them, hence the two tokenize keys.
"""

import os
import sys
from pathlib import Path

import common

from tinytf.data.prepare import run_prepare
from tinytf.data.rows import describe_rule, text_key
from tinytf.errors import DataError
from tinytf.tracking.runs import stage_run


def user_files(prepare) -> dict[str, str]:
    """Every data file the params point to, by the key that names it."""
    found = {}
    for name in ("corpus", "sentiment"):
        section = getattr(prepare, name)
        if section.source == "files":
            for split in ("train", "validation", "test"):
                if path := getattr(section.files, split):
                    found[f"prepare.{name}.files.{split}"] = path
    for i, path in enumerate(prepare.corpus.in_domain.files):
        found[f"prepare.corpus.in_domain.files[{i}]"] = path
    return found


def check_under(raw: Path, files: dict[str, str]) -> None:
    """A file outside the declared folder is invisible to `dvc status`: refuse it, saying how to fix.
    So is a symlink in the folder that leads out of it (resolved: a link once read any file the
    user could, and a parse error quoted its first line); the target is never named or read."""
    root = Path(os.path.abspath(raw))
    for key, path in files.items():
        if not Path(os.path.abspath(path)).is_relative_to(root):
            raise DataError(
                f"{key}: {path} is outside {raw}/, so `dvc repro` would not see it change; "
                f"copy it there (cp {path} {raw}/) or track it there with `dvc add`, and point {key} to it"
            )
        if not Path(path).resolve().is_relative_to(root.resolve()):
            raise DataError(
                f"{key}: {path} is a symlink (or under one) that leads outside {raw}/; files there must "
                f"stay inside it: replace the link with the file itself (large ones: `dvc add {path}`)"
            )


def main() -> None:
    parser = common.stage_parser("prepare", __doc__)
    parser.add_argument("--out", required=True, help="folder for the parquet splits (corpus/, sentiment/)")
    parser.add_argument("--reports", required=True, help="folder for the data card (data.md, data.json)")
    parser.add_argument("--raw", required=True, help="the folder every bring-your-own data file must be in")
    args = parser.parse_args()
    params = common.load_params("prepare", args)
    check_under(Path(args.raw), user_files(params.prepare))
    kind, lowercase = params.tokenize.kind, params.tokenize.lowercase

    with stage_run("prepare", params.as_dict()) as tracker:
        datasets, _ = run_prepare(
            params.prepare,
            params.base.seed,
            args.out,
            args.reports,
            text_key(kind, lowercase),
            describe_rule(kind, lowercase),
            before_swap=common.params_unchanged,  # an edit of params.yaml meanwhile: nothing put in place
        )
        for data in datasets:
            for split, frame in data.splits.items():
                path = f"{args.out}/{data.name}/{split}.parquet"
                tracker.log_dataset(frame, path, f"{data.name}-{split}", split)
                tracker.log_metrics({f"{data.name}.{split}.rows": len(frame)})
            rows = ", ".join(f"{s} {len(f)}" for s, f in data.splits.items())
            print(f"prepared {data.name} ({data.source}): {rows}", file=sys.stderr)
        tracker.log_artifact(f"{args.reports}/data.md")
        tracker.log_artifact(f"{args.reports}/data.json")


if __name__ == "__main__":
    common.run(main)
