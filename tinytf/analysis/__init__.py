"""Analysis layer: evaluation statistics, attention probes, the cost-of-attention measurement
and the checks of the course reports' claims that build and run small models."""
