"""Analysis layer: the study's statistics (paired and multi-bootstrap tests, power), the matrix
studies' cells and tables, and the trained baselines."""
