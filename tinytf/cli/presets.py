"""Named presets, run the DVC way: `presets/NAME.yaml` holds partial params, and `tinytf preset
NAME` runs them as a temporary DVC experiment (`dvc exp run --temp -S key=value ...`), so a failed
one leaves the workspace as it was. The preset is checked against params.yaml before DVC starts: a
bad key stops with its name and the preset's file, not in the middle of a pipeline."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from tinytf.cli import dvc_quiet
from tinytf.cli.experiments import check_experiment, set_in_workspace, set_items
from tinytf.cli.forecast import cache_dir
from tinytf.cli.workspace import workspace_lock, yaml_value
from tinytf.errors import ParamsError
from tinytf.io import staged, write_json, write_text
from tinytf.params.config import load_params
from tinytf.params.schema import flatten, read_yaml


def available(preset_dir: Path) -> list[str]:
    return sorted(p.stem for p in preset_dir.glob("*.yaml"))


def preset_values(name: str, preset_dir: str | Path = "presets") -> dict:
    """The preset's values by dotted key."""
    preset_dir = Path(preset_dir)
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_-]*", name):
        # a name, never a path: `tinytf preset ../params` would run params.yaml as a preset
        raise ParamsError(
            f"preset {name!r}: a preset is a name of {preset_dir}/ ({', '.join(available(preset_dir))}); "
            f"to run a file of your own, put it in a folder as NAME.yaml and pass --presets-dir FOLDER"
        )
    path = preset_dir / f"{name}.yaml"
    if not path.exists():
        raise ParamsError(
            f"{path}: no preset '{name}'; available: {', '.join(available(preset_dir)) or 'none'}"
        )
    values = read_yaml(path) or {}
    if not isinstance(values, dict):
        raise ParamsError(f"{path}: expected a mapping of params sections")
    return flatten(values)


def set_args(
    name: str, params_file: str | Path = "params.yaml", preset_dir: str | Path = "presets"
) -> list[str]:
    """`dvc exp run`'s `-S key=value` arguments for the preset, checked against params_file first."""
    values = preset_values(name, preset_dir)
    try:
        load_params(params_file, values)
    except ParamsError as exc:
        raise ParamsError(f"preset {Path(preset_dir) / f'{name}.yaml'}: {exc}") from None
    # JSON is YAML, which is how DVC reads a -S value: lists, numbers and strings stay themselves
    return [arg for key, value in values.items() for arg in ("-S", f"{key}={yaml_value(value)}")]


def _same(here, wanted) -> bool:
    """Equal as params, a number read back as a string (an older 5e-05) included."""
    if isinstance(wanted, list) and isinstance(here, list):
        return len(here) == len(wanted) and all(_same(h, w) for h, w in zip(here, wanted, strict=True))
    if isinstance(wanted, float) and isinstance(here, str):
        try:
            return float(here) == wanted
        except ValueError:
            return False
    return here == wanted


def caps(name: str, params_file: str | Path, values: dict, dvc_args: list[str]) -> list[str]:
    """A line for each `max_rows` cap the preset puts on a user's own rows (`source: files`)."""
    pairs = (item.partition("=")[::2] for item in set_items(dvc_args))  # checked already: KEY=VALUE
    sets = {key: yaml.safe_load(value) for key, value in pairs if key.startswith("prepare.")}
    prepare = load_params(params_file, values | sets).prepare
    lines = []
    for section in ("sentiment", "corpus"):
        mine, key = getattr(prepare, section), f"prepare.{section}.max_rows"
        if mine.source == "files" and mine.max_rows:
            files = ", ".join(f for f in (mine.files.train, mine.files.validation, mine.files.test) if f)
            lines.append(
                f"tinytf: preset {name} keeps the first {mine.max_rows} rows of each split of your data "
                f"({files}: {key}); -S {key}=0 keeps them all"
            )
    return lines


def run_preset(
    name: str, dvc_args: list[str], params_file: str | Path, preset_dir: str | Path, workspace: bool = False
) -> int:
    """Run the preset as a DVC experiment, in a temporary copy unless `workspace`; dvc's exit status."""
    arguments = set_args(name, params_file, preset_dir)
    values = preset_values(name, preset_dir)
    apart = workspace or {"--temp", "--queue"} & set(dvc_args)
    in_copy = not workspace or bool({"--temp", "--queue"} & set(dvc_args))
    # the -S arguments given beside the preset, and a copy's data files
    check_experiment(dvc_args, params_file, in_copy, values)
    capped = caps(name, params_file, values, dvc_args)  # before a workspace run writes the -S in
    with workspace_lock(Path(params_file).resolve().parent):
        if not in_copy:  # the preset's values and the -S written into params.yaml, one line each
            arguments, dvc_args = [], set_in_workspace(dvc_args, params_file, values)
        for line in capped:
            print(line, file=sys.stderr)
        command = ["exp", "run", *arguments, *([] if apart else ["--temp"]), *dvc_args]
        print("tinytf: " + " ".join(command), file=sys.stderr)
        return subprocess.run([*dvc_quiet.command(), *command]).returncode


# a preset's committed report: readme.json (its README is rendered again from it), the tables and
# plots the README links, the headline metrics and the summaries
EXPORTED = {
    "readme.json": "readme.json",
    "metrics.json": "metrics.json",
    "tables": "tables",
    "plots": "plots",
    "finetune/summary.json": "summary.json",
    "baselines/summary.json": "baselines.json",
    "variants/summary.json": "variants.json",
}


def export_report(
    name: str,
    params_file: str | Path = "params.yaml",
    preset_dir: str | Path = "presets",
    reports: str | Path = "reports",
    study: str | Path | None = None,
) -> Path:
    """Copy the workspace's report into reports/presets/NAME/ (swapped in whole), after checking
    its params hold every value of the preset. `study`: a folder benchmarks/gpu_study.sh wrote (a GPU
    machine without DVC), whose report/ and params.yaml stand for the workspace's."""
    values = preset_values(name, preset_dir)
    presets = Path(reports) / "presets"
    if study is not None:
        study = Path(study)
        if not (study / "report").is_dir() or not (study / "params.yaml").is_file():
            raise ParamsError(
                f"{study}: no report/ and params.yaml beside it: not a folder gpu_study.sh wrote"
            )
        reports, params_file = study / "report", study / "params.yaml"
        refuse_links_out(study, [params_file, *(reports / src for src in EXPORTED)])
    load_params(params_file)  # a missing or invalid file stops here, named
    params = flatten(yaml.safe_load(Path(params_file).read_text(encoding="utf-8")) or {})
    for key, value in values.items():
        here = params.get(key)
        if not _same(here, value):
            raise ParamsError(
                f"{params_file}: {key} is {here!r}, preset '{name}' sets {value!r}: apply the "
                f"preset's run first (dvc exp apply EXP) so the report is the preset's"
            )
    reports = Path(reports)
    missing = [src for src in EXPORTED if not (reports / src).exists()]
    if missing:
        raise ParamsError(
            f"{reports}: no {', '.join(missing)}: run the pipeline (dvc repro) before exporting"
        )
    with staged([presets], f"export-{name}") as staging:
        folder = staging[presets] / name
        folder.mkdir()
        for src, dest in EXPORTED.items():
            copy = shutil.copytree if (reports / src).is_dir() else shutil.copyfile
            copy(reports / src, folder / dest)
        write_json(folder / "preset.json", values)
        if values.get("pretrain.objective") == "masked":
            compare_objectives(values, params, params_file, reports, folder)
        write_text(folder / "README.md", preset_readme(folder))
    return presets / name


def refuse_links_out(folder: Path, paths: list[Path]) -> None:
    """Refuse a symlink under `paths` that leads out of `folder`: the export copies what links point
    at, so a link to a private file would put its text in reports/presets/. The target is not named."""
    top = folder.resolve()
    seen: set[Path] = set()

    def check(path: Path) -> None:
        if not path.exists() and not path.is_symlink():
            return  # missing: the check for missing files says so
        if not path.resolve().is_relative_to(top):
            parts = path.relative_to(folder).parts  # the first link below `folder` on the way
            link = next(
                folder.joinpath(*parts[:i])
                for i in range(1, len(parts) + 1)
                if folder.joinpath(*parts[:i]).is_symlink()
            )
            raise ParamsError(
                f"{link}: a symbolic link that leads out of {folder}; the export copies only what is "
                f"inside it: put the file itself there"
            )
        if path.is_dir() and path.resolve() not in seen:
            seen.add(path.resolve())
            for child in sorted(path.iterdir()):
                check(child)

    for path in paths:
        check(path)


def preset_readme(folder: Path) -> str:
    """A preset's committed README from its folder alone: readme.json rendered, links to files the
    export does not hold kept as text, and the masked preset's comparison (objectives.json)."""
    from tinytf.report.render import read_view, render

    folder = Path(folder)
    text = render(read_view(folder / "readme.json"))
    if (folder / "objectives.json").exists():
        values = json.loads((folder / "preset.json").read_text(encoding="utf-8"))
        comparison = json.loads((folder / "objectives.json").read_text(encoding="utf-8"))["objectives"]
        text += "\n".join(objectives_lines(values, comparison))
    return unlinked(text, folder)


# a relative Markdown link: [text](target), the target without a scheme or a space
RELATIVE_LINK = re.compile(r"\[([^\]]+)\]\(((?![a-z][a-z0-9+.-]*:|#)[^)\s]+)\)")


def unlinked(text: str, folder: Path) -> str:
    """A link to a file the export does not copy (data.md, ...) becomes its text in code quotes."""

    def keep(match: re.Match) -> str:
        label, target = match.groups()
        if (folder / target.split("#")[0]).exists():
            return match.group(0)
        return label if label.startswith("`") else f"`{label}`"

    return RELATIVE_LINK.sub(keep, text)


def _git(args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)


def _at_head(path: Path) -> str:
    """The committed text of `path` at HEAD: the run a preset's experiment started from."""
    path = Path(path).resolve()
    top = _git(["rev-parse", "--show-toplevel"], path.parent).stdout.strip()
    done = _git(["show", f"HEAD:{path.relative_to(top).as_posix()}"], Path(top)) if top else None
    if done is None or done.returncode != 0:
        raise ParamsError(f"HEAD:{path}: {done.stderr.strip() if done else 'not in a git repository'}")
    return done.stdout


PREDICTIONS = "data/predictions/finetune.parquet"  # every fine-tuning run's per-text predictions


def _cached_at_head(root: Path, out: str) -> Path:
    """The DVC cache's copy of `out` as HEAD's dvc.lock records it (the causal run's, replaced here)."""
    lock = yaml.safe_load(_at_head(root / "dvc.lock")) or {}
    for stage in lock.get("stages", {}).values():
        for entry in stage.get("outs", []):
            if entry.get("path") == out:
                md5 = entry["md5"]
                cached = cache_dir(root) / "files" / "md5" / md5[:2] / md5[2:]
                if cached.exists():
                    return cached
                raise ParamsError(
                    f"{out} of HEAD's run (md5 {md5}) is not in the DVC cache: run `dvc pull {out}` at HEAD"
                )
    raise ParamsError(f"HEAD:dvc.lock: no output {out}; commit the causal run's dvc.lock first")


def compare_objectives(
    values: dict, here: dict, params_file: str | Path, reports: Path, folder: Path
) -> None:
    """The masked preset's run (`here`: the workspace's params, flattened) against HEAD's causal run,
    whose params differ only in the preset's keys: objectives.json and tables/objectives.md."""
    import pandas as pd  # here: the other commands start without pandas

    from tinytf.analysis import objectives
    from tinytf.data.sentiment import test_groups

    head = flatten(yaml.safe_load(_at_head(Path(params_file))) or {})
    other = sorted(
        k for k in head.keys() | here.keys() if k not in values and not _same(here.get(k), head.get(k))
    )
    if other or head.get("pretrain.objective") != "causal":
        raise ParamsError(
            f"{params_file}: HEAD's run is not this preset's causal twin (differs in "
            f"{', '.join(other) or 'pretrain.objective'}): commit the causal run first"
        )
    runs = reports / "finetune" / "runs.csv"
    causal, masked = pd.read_csv(io.StringIO(_at_head(runs))), pd.read_csv(runs)
    comparison = objectives.objective_comparison(causal, masked)
    root = Path(params_file).resolve().parent
    objectives.add_multiboot(
        comparison,
        (causal, pd.read_parquet(_cached_at_head(root, PREDICTIONS))),
        (masked, pd.read_parquet(root / PREDICTIONS)),
        test_groups(root / "data"),
    )
    commit = _git(["rev-parse", "HEAD"], runs.resolve().parent).stdout.strip()
    write_json(folder / "objectives.json", {"objectives": comparison, "causal_run": commit})
    write_text(folder / "tables" / "objectives.md", objectives.table(comparison))


def objectives_lines(values: dict, comparison: dict) -> list[str]:
    """The masked preset's README section: its starts against the causal run's (objectives.json)."""
    from tinytf.analysis import objectives

    attention = values.get("finetune.attention", "pretraining")
    alike = attention == "causal"  # v2: both runs' scratch starts one model
    how = (
        "Both runs fine-tune every start under causal attention (`finetune.attention`), so the two "
        "scratch starts are the same model."
        if alike
        else f"This run fine-tunes every start under {attention} attention, the default run under "
        "causal attention (`finetune.attention`): each body as it was pretrained, each scratch start "
        "as its run's bodies. Each objective is therefore read against its own scratch start, the "
        "difference in differences (masked − its scratch) − (causal − its scratch); the raw masked − "
        "causal difference also counts the change of attention. The other half of objective × "
        "attention (each body under the other's attention) was not run."
    )
    lines = [
        "",
        "## Masked vs causal pretraining on the label curve",
        "",
        "Added by the export from `objectives.json`: this run's masked-LM start against the causal start "
        f"of the committed default run{' it differs from only in `pretrain.objective`' if alike else ''}, "
        "paired over the same seeds (subset, head init and batch order) and "
        "pretraining seeds, by a multi-bootstrap over pretraining runs, seeds and test movies at once, Holm "
        f"across the label counts. {how} The masked LM had the causal one's budget: the same steps, batch, "
        "lr and tokens read, 15 % of those tokens predicted (the causal LM predicts every one).",
        "",
        "The course's claim (course report 000): a causal LM's unidirectionality \"could harm the results even with "
        'fine tuning", while BERT\'s masked objective "allows the model to generalize better". Here:',
        "",
    ]
    families = ["masked_vs_causal"] if alike else ["did", "masked_vs_causal"]
    for labels, entry in objectives.rows(comparison):
        lines += [f"- {objectives.verdict(labels, entry, f)}" for f in families if f in entry]
    return [*lines, "", objectives.table(comparison)]
