"""Pretraining (the core of stage `pretrain`): train the transformer as a language model on the tokenized corpus.

Per epoch: loss and perplexity on train (its first validation-sized slice, comparable and cheap),
validation and test, and on PTB word-level perplexity (per word, end-of-sentence included, as the
literature divides); at the end, the sample sentences of params (course report 004).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from tinytf.data.batching import load_tokens
from tinytf.data.splits import SPLITS
from tinytf.data.tokenizer import MASK, load_tokenizer
from tinytf.io import sha256_file, write_json, write_text
from tinytf.model.architecture import model_config
from tinytf.model.checkpoint import save_model
from tinytf.model.transformer import TinyTransformer
from tinytf.params.config import ModelParams, PretrainParams
from tinytf.train import distributed, lm
from tinytf.train.loop import Callback, LoopConfig, run_loop
from tinytf.train.runtime import Runtime, maybe_compile, resolve_runtime, seed_everything


class BlockSource:
    """Random blocks from the train stream; the data position is the generator state."""

    def __init__(self, tokens: np.ndarray, objective: lm.Objective, block: int, batch: int, seed: int):
        self.tokens, self.objective, self.block, self.batch = tokens, objective, block, batch
        self.generator = torch.Generator().manual_seed(seed)

    def next_batch(self):
        return self.objective.train_batch(self.tokens, self.block, self.batch, self.generator)

    def state(self) -> dict:
        return {"generator": self.generator.get_state()}

    def load_state(self, state: dict) -> None:
        self.generator.set_state(state["generator"])


@dataclass
class PretrainResult:
    model: TinyTransformer
    history: list[dict]
    step_log: list[dict]
    final: dict
    samples: list[dict]
    runtime: Runtime


def code_fingerprint() -> str:
    """sha256 over tinytf's own source: a state saved by other code must not be resumed."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


def resume_key(params_hash: str, data_dir: str | Path) -> str:
    """What a saved state must match to be resumed: the params, data and code."""
    return f"{params_hash}:{data_fingerprint(Path(data_dir))}:{code_fingerprint()}"


def data_fingerprint(data_dir: Path) -> str:
    """sha256 over the tokenizer and the train token ids."""
    parts = [
        sha256_file(data_dir / "tokenizer.json"),
        sha256_file(data_dir / "tokens" / "corpus" / "train.npy"),
    ]
    return hashlib.sha256("|".join(parts).encode()).hexdigest()[:16]


def lm_step_loss(model: TinyTransformer, runtime: Runtime):
    """The loss of one batch, forward and loss in one function, so a compiled graph holds the whole
    step and its backward."""

    def step_loss(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return lm.lm_loss(model.forward_lm(x), y, ignore_index=lm.IGNORE)

    return maybe_compile(step_loss, runtime)


def step_tokens(params: PretrainParams, block_size: int) -> int:
    """Tokens one optimizer step trains on."""
    return block_size * params.batch_size * params.grad_accum


def epoch_steps(params: PretrainParams, train_tokens: int, block_size: int) -> tuple[int, int]:
    """(steps per epoch, tokens per step): `steps_per_epoch`, or one pass over train when it is 0."""
    tokens_per_step = step_tokens(params, block_size)
    return params.steps_per_epoch or max(train_tokens // tokens_per_step, 1), tokens_per_step


def loop_config(params: PretrainParams, steps_per_epoch: int, tokens_per_step: int) -> LoopConfig:
    """The optimizer and schedule of pretraining."""
    return LoopConfig(
        total_steps=steps_per_epoch * params.epochs,
        steps_per_epoch=steps_per_epoch,
        lr=params.lr,
        weight_decay=params.weight_decay,
        warmup_steps=params.warmup_steps,
        min_lr_ratio=params.min_lr_ratio,
        grad_clip=params.grad_clip,
        grad_accum=params.grad_accum,
        log_every=params.log_every,
        checkpoint_every=params.checkpoint_every,
        tokens_per_step=tokens_per_step,
        desc="pretrain",
    )


def words_with_eos(stats_path: Path) -> dict[str, int] | None:
    """Word counts for word-level perplexity, only for PTB (one sentence a line, <unk> a word)."""
    if not stats_path.exists():
        return None
    corpus = json.loads(stats_path.read_text()).get("corpus", {})
    if corpus.get("source") != "ptb":
        return None
    # train also holds the in-domain text: only PTB's own validation and test are per-word comparable
    return {s: v["words"] + v["rows"] for s, v in corpus["splits"].items() if s != "train"}


# One recipe, nanochat-style, read top to bottom; its closures share the model and runtime.
def pretrain(
    model_params: ModelParams,
    params: PretrainParams,
    seed: int,
    data_dir: str | Path,
    stats_path: str | Path,
    state_path: str | Path | None = None,
    params_hash: str = "",
    callbacks: list[Callback] = (),
    snapshot_dir: str | Path | None = None,
) -> PretrainResult:
    """`snapshot_dir` receives the model at the end of every epoch but the last (`epoch<N>.pt`). They
    are kept in the training state and written once training ends, so a resumed run writes them all."""
    data_dir = Path(data_dir)
    tokenizer = load_tokenizer(data_dir / "tokenizer.json")
    tokens = {s: load_tokens(data_dir / "tokens" / "corpus" / f"{s}.npy") for s in SPLITS}
    seed_everything(seed)
    config = model_config(model_params, tokenizer.get_vocab_size(), params.objective, seed)
    model = TinyTransformer(config)
    objective = lm.Objective(
        params.objective, config.vocab_size, tokenizer.token_to_id(MASK), params.mask_prob
    )
    block, batch = config.block_size, params.batch_size
    steps_per_epoch, tokens_per_step = epoch_steps(params, len(tokens["train"]), block)
    total_steps = steps_per_epoch * params.epochs

    runtime = resolve_runtime(params.device, params.precision, params.compile, total_steps)
    model.to(runtime.device)
    step_loss = lm_step_loss(model, runtime)

    def loss_fn(batch_xy):
        x, y = (t.to(runtime.device, non_blocking=True) for t in batch_xy)
        return step_loss(x, y)

    words = words_with_eos(Path(stats_path))
    eval_tokens = params.eval_batches * block * batch

    kept: dict = {"snapshots": {}}  # epoch -> weights and tokens; saved with the training state

    def evaluate_all(epoch: int, step: int) -> dict[str, float]:
        if snapshot_dir is not None and epoch < params.epochs:
            weights = {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}
            kept["snapshots"][epoch] = {"model": weights, "pretrain_tokens": step * tokens_per_step}
        metrics = {}
        for split in SPLITS:
            limit = eval_tokens or (len(tokens["validation"]) if split == "train" else 0)
            result = lm.evaluate(model, tokens[split], objective, block, batch, runtime, limit)
            metrics[f"{split}_loss"] = result["loss"]
            metrics[f"{split}_perplexity"] = result["perplexity"]
            if words and split in words and not limit and params.objective == "causal":
                metrics[f"{split}_word_perplexity"] = float(np.exp(result["nll_sum"] / words[split]))
        return metrics

    loop = loop_config(params, steps_per_epoch, tokens_per_step)
    print(f"pretrain: {total_steps} steps ({steps_per_epoch}/epoch), {runtime.describe()}")
    source = BlockSource(tokens["train"], objective, block, batch, seed)
    out = run_loop(
        model,
        source,
        loss_fn,
        loop,
        runtime,
        evaluate_all,
        list(callbacks),
        state_path,
        resume_key(params_hash, data_dir),
        params.resume,
        kept,
    )
    samples = []
    if params.objective == "causal":
        for sample in params.samples:
            scored = lm.score_text(model, tokenizer, sample.text, runtime)
            samples.append({"name": sample.name, **scored})
    model.to("cpu")
    if snapshot_dir is not None:
        write_snapshots(Path(snapshot_dir), config, kept["snapshots"], params.epochs)
    final = {**out["history"][-1], "tokens": total_steps * tokens_per_step}
    return PretrainResult(model, out["history"], out["step_log"], final, samples, runtime)


def write_snapshots(folder: Path, config, snapshots: dict[int, dict], epochs: int) -> None:
    """`epoch<N>.pt` for every epoch but the last, from the weights kept as training went."""
    model = TinyTransformer(config)
    for epoch in range(1, epochs):
        model.load_state_dict(snapshots[epoch]["model"])
        save_model(
            folder / f"epoch{epoch}.pt",
            model,
            {"pretrain_tokens": snapshots[epoch]["pretrain_tokens"]},
            stage="pretrain",
        )
    if distributed.is_main():  # a longer run (no DVC to clear outs) left more
        for stale in folder.glob("epoch*.*"):
            if stale.stem not in {f"epoch{e}" for e in range(1, epochs)}:
                stale.unlink()


def sample_table(final: dict, samples: list[dict]) -> str:
    """Course report 004's table: rows Loss and Perplexity; columns train, dev and the samples."""
    columns = ["train", "dev"] + [s["name"] for s in samples]
    loss = [final["train_loss"], final["validation_loss"]] + [s["loss"] for s in samples]
    ppl = [final["train_perplexity"], final["validation_perplexity"]] + [s["perplexity"] for s in samples]
    lines = ["| | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines.append("| Loss | " + " | ".join(f"{v:.3f}" for v in loss) + " |")
    lines.append("| Perplexity | " + " | ".join(f"{v:.2f}" for v in ppl) + " |")
    return "\n".join(lines) + "\n"


def write_outputs(result: PretrainResult, model_path: Path, report_dir: Path, extra: dict) -> dict:
    """Model + config JSON, per-epoch CSV for DVC plots, metrics JSON, the sample table."""
    import pandas as pd

    save_model(model_path, result.model, {**extra, "pretrain_tokens": result.final["tokens"]}, "pretrain")
    report_dir.mkdir(parents=True, exist_ok=True)
    epochs = pd.DataFrame(result.history)
    write_text(report_dir / "epochs.csv", epochs.to_csv(index=False))
    write_text(report_dir / "steps.csv", pd.DataFrame(result.step_log).to_csv(index=False))
    metrics = {
        **{k: v for k, v in result.final.items() if k not in ("epoch", "step", "tokens")},
        "tokens": result.final["tokens"],
        "epochs": result.final["epoch"],
        "steps": result.final["step"],
        "samples": {s["name"]: {"loss": s["loss"], "perplexity": s["perplexity"]} for s in result.samples},
        "precision": result.runtime.precision,  # what `auto` chose on this machine
        "compile": result.runtime.compile,
    }
    write_json(report_dir / "metrics.json", metrics)
    table = sample_table(result.final, result.samples)
    if not result.samples:  # dvc.yaml declares the file: a masked LM's run writes it too
        table += "\nNo sample sentences scored: a masked LM gives no left-to-right perplexity of a text.\n"
    write_text(report_dir / "samples.md", table)
    return metrics
