import numpy as np
import torch

from tinytf.data.batching import PadCollate, SentimentDataset, random_blocks, sentiment_loader, strided_blocks


def test_collate_pads_to_longest_truncates_and_masks():
    batch = [([5, 6, 7, 8, 9, 10], 1), ([5, 6], 0), ([], 1)]
    out = PadCollate(max_length=4)(batch)
    assert out["input_ids"].tolist() == [[5, 6, 7, 8], [5, 6, 0, 0], [0, 0, 0, 0]]
    assert out["attention_mask"].tolist() == [[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]]
    assert out["labels"].tolist() == [1, 0, 1]
    assert all(out[key].dtype == torch.long and out[key].is_contiguous() for key in out)
    # a batch of empty texts keeps one padded position, masked out
    empty = PadCollate(max_length=4, pad_id=3)([([], 0), ([], 1)])
    assert empty["input_ids"].tolist() == [[3], [3]] and empty["attention_mask"].tolist() == [[0], [0]]


def test_collate_short_batch_stays_short_and_prefix_counts_toward_max_length():
    assert PadCollate(max_length=64)([([5, 6], 0)])["input_ids"].shape == (1, 2)
    out = PadCollate(max_length=3, prefix_id=2)([([5, 6, 7], 0)])
    assert out["input_ids"].tolist() == [[2, 5, 6]]


def test_training_loader_reshuffles_each_epoch_and_evaluation_keeps_order():
    data = SentimentDataset([[i + 5] for i in range(32)], [i % 2 for i in range(32)])
    train = sentiment_loader(data, batch_size=32, max_length=4, shuffle=True, seed=0)
    first, second = (next(iter(train))["input_ids"][:, 0].tolist() for _ in range(2))
    assert first != second and sorted(first) == sorted(second)
    ordered = sentiment_loader(data, batch_size=32, max_length=4, shuffle=False, seed=0)
    assert next(iter(ordered))["input_ids"][:, 0].tolist() == list(range(5, 37))


def test_random_blocks_targets_are_inputs_shifted_by_one():
    tokens = np.arange(100, dtype=np.uint16)
    x, y = random_blocks(tokens, block_size=8, batch_size=4, generator=torch.Generator().manual_seed(0))
    assert x.shape == y.shape == (4, 8)
    assert torch.equal(x[:, 1:], y[:, :-1]) and torch.equal(y - x, torch.ones_like(x))


def test_strided_blocks_cover_every_target_once():
    tokens = np.arange(50, dtype=np.uint16)
    targets = torch.cat([y.flatten() for _, y in strided_blocks(tokens, block_size=7, batch_size=3)])
    assert targets.tolist() == list(range(1, 50))


def test_length_grouped_batches_cover_every_text_once_with_little_padding():
    import random

    from tinytf.data.batching import LengthGroupedBatches

    rng = random.Random(0)
    lengths = [rng.randint(1, 64) for _ in range(1000)]
    sampler = LengthGroupedBatches(lengths, 32, shuffle=True, generator=torch.Generator().manual_seed(0))
    batches = list(sampler)
    assert sorted(i for b in batches for i in b) == list(range(1000)) and len(batches) == len(sampler)
    padded = sum(len(b) * max(lengths[i] for i in b) for b in batches)
    plain = sum(32 * max(lengths[i] for i in range(s, min(s + 32, 1000))) for s in range(0, 1000, 32))
    assert padded < 0.7 * plain  # grouping removes most of the padding of random batches
    assert list(sampler) != batches  # a new order each epoch


def test_grouped_evaluation_predictions_come_back_in_file_order():
    from tests.helpers.model_fixtures import small
    from tinytf.model.transformer import TinyTransformer
    from tinytf.train.classify import predict
    from tinytf.train.runtime import Runtime

    torch.manual_seed(0)
    model = TinyTransformer(small(vocab_size=50, n_layer=1, n_head=2, d_ff=16, block_size=40, dropout=0.2))
    ids = [[5 + (i % 7)] * (1 + (i * 13) % 30) for i in range(64)]
    data = SentimentDataset(ids, [i % 2 for i in range(64)])
    preds, labels, _, probabilities = predict(
        model, data, 8, 32, Runtime(torch.device("cpu"), "fp32", False), None
    )
    assert labels.tolist() == [i % 2 for i in range(64)]
    model.eval()
    with torch.no_grad():
        logits = [model.forward_cls(torch.tensor([x[:32]]))[0] for x in ids]
    assert preds.tolist() == [int(x.argmax()) for x in logits]
    # each text's probability comes back with it, in file order
    assert np.allclose(probabilities, [float(torch.softmax(x, -1).max()) for x in logits], atol=1e-5)
