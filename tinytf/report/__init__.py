"""Report layer: typed facts read from the pipeline's output files, the tables and plots made
from them, and the README text. Builds from files only: nothing here trains or runs a model."""
