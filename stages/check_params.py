"""Stage `check_params`: validate params.yaml against the schema before any other stage runs.

Every other stage depends on its output, so DVC runs it first. DVC deletes a stage's outputs
before running the stage again; a value the schema refuses stops the pipeline here, in one line
naming the key, before any output is deleted. The output holds the same bytes whatever the
params, so a params change reruns only the stages that read the changed keys.
"""

import common

from tinytf.io import write_text

CHECKED = "params.yaml passed tinytf's schema (stages/check_params.py)\n"


def main() -> None:
    parser = common.stage_parser("check_params", __doc__)
    parser.add_argument("--out", required=True, help="the file every other stage depends on")
    args = parser.parse_args()
    common.load_params("check_params", args)  # the whole file, validated: a bad key stops here
    write_text(args.out, CHECKED)


if __name__ == "__main__":
    common.run(main)
