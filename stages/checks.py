"""Stage `checks`: everything the report shows that needs a model built or run, so the report
itself reads files only. Parameter counts of our model and the course lab's (closed form and
counted from the built module), the course reports' parameter arithmetic, the course claims that
PyTorch settles (each measured on a small seeded model), and where each head of the pretrained
model looks on a sample sentence (its attention weights, for the report's maps).
"""

import json
import sys
from pathlib import Path

import common

from tinytf.course.checks import write_checks
from tinytf.data.tokenizer import load_tokenizer
from tinytf.model.architecture import model_config
from tinytf.model.checkpoint import load_model
from tinytf.tracking.runs import stage_run


def main() -> None:
    parser = common.stage_parser("checks", __doc__)
    parser.add_argument("--tokenizer", required=True, help="tokenizer.json (the vocabulary size)")
    parser.add_argument("--data-card", required=True, help="data.json of prepare (the number of classes)")
    parser.add_argument("--model", required=True, help="the pretrained model (.pt)")
    parser.add_argument("--reports", required=True, help="folder for the checks' JSON tables")
    args = parser.parse_args()
    params = common.load_params("checks", args)
    p = params

    staged = common.staged_outputs(args, "checks", whole=("reports",))  # the folder whole: no stale table
    with stage_run("checks", params.as_dict()) as tracker, staged:
        reports = Path(args.reports)
        tokenizer = load_tokenizer(args.tokenizer)
        vocab = tokenizer.get_vocab_size()
        classes = (
            len(json.loads(Path(args.data_card).read_text()).get("sentiment", {}).get("classes", [])) or 2
        )
        ours = model_config(p.model, vocab, p.pretrain.objective, p.base.seed, n_classes=classes)
        samples = {s.name: s.text for s in p.pretrain.samples}
        written = write_checks(reports, ours, load_model(args.model), tokenizer, samples)
        for path in written:
            tracker.log_artifact(path)
        attention = json.loads((reports / "attention.json").read_text())
        print(
            f"checks: wrote {len(written)} tables; attention maps: "
            f"{attention.get('skipped') or attention['sample']}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    common.run(main)
