"""Data layer: named sources and their checksums, file readers, splits, the `prepare` step,
the data card, the tokenizer and the batches the trainers consume. Imports nothing above it
(no model, no training, no tracking)."""
