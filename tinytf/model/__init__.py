"""Model layer: attention, the transformer (and the course lab's `nn.TransformerEncoder`
reference), checkpoints and parameter counts. Depends on torch only, never on data or training."""
