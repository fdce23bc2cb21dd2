"""Analysis layer: evaluation statistics, attention probes, the cost-of-attention measurement
and the checks of the seed reports' claims that build and run small models."""
