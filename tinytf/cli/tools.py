"""Commands that need no pipeline run: parameter counts and scoring text."""

from __future__ import annotations

from pathlib import Path

from tinytf.errors import DataError


def count_params_command(params_file: str, vocab_size: int | None, course_lab: bool) -> None:
    from tinytf.model.param_count import course_lab_config, format_counts, format_course_claims

    if course_lab:
        for vocab in (100, 50_001):
            print(f"## course lab model, vocabulary {vocab:,}\n\n{format_counts(course_lab_config(vocab))}\n")
        print("## the course reports' claims, checked\n")
        print(format_course_claims())
        return
    from tinytf.model.architecture import model_config
    from tinytf.params.config import load_params

    params = load_params(params_file)
    if vocab_size is not None and not 1 <= vocab_size <= 10_000_000:
        raise DataError(f"--vocab-size {vocab_size}: expected a vocabulary size from 1 to 10,000,000")
    if vocab_size is None:
        tokenizer_file = Path("data/tokenizer.json")
        if tokenizer_file.exists():
            from tinytf.data.tokenizer import load_tokenizer

            vocab_size = load_tokenizer(tokenizer_file).get_vocab_size()
        else:
            vocab_size = params.tokenize.vocab_size
    config = model_config(params.model, vocab_size, params.pretrain.objective, params.base.seed)
    print(f"## model of {params_file}, vocabulary {vocab_size:,}\n")
    print(format_counts(config))


def score_command(model_path: str, tokenizer_path: str, names: list[str], texts: list[str]) -> None:
    """Loss and perplexity per text (checked by tinytf.data.texts.from_command_line); a text that gives
    no tokens is refused, as its perplexity over zero tokens would read as a perfect 1.00."""
    from tinytf.cli.inputs import refuse_unmade

    # before torch's imports, and before the checkpoint's reader names a missing .json beside it
    refuse_unmade(model_path, "pretrained model")
    refuse_unmade(tokenizer_path, "tokenizer")
    from tinytf.data.texts import refuse_tokenless, shown
    from tinytf.data.tokenizer import load_tokenizer
    from tinytf.model.checkpoint import load_model
    from tinytf.train.lm import score_text

    model = load_model(model_path)
    if not model.config.causal:
        raise DataError(f"{model_path}: a masked-LM checkpoint cannot score text left to right")
    tokenizer = load_tokenizer(tokenizer_path)
    if tokenizer.get_vocab_size() > model.config.vocab_size:  # its ids would index past the embedding
        raise DataError(
            f"{tokenizer_path}: {tokenizer.get_vocab_size():,} tokens, but {model_path} was trained on "
            f"{model.config.vocab_size:,}; pass the tokenizer it was trained with (--tokenizer)"
        )
    ids = [tokenizer.encode(text, add_special_tokens=False).ids for text in texts]
    refuse_tokenless(names, texts, ids, tokenizer_path)
    for text in texts:
        result = score_text(model, tokenizer, text)
        print(
            f"loss {result['loss']:.4f}  perplexity {result['perplexity']:.2f}  "
            f"({result['tokens']} tokens)  {shown(text)}"
        )
