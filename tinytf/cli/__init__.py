"""The `tinytf` console script: its commands, the presets and the experiment comparison."""
