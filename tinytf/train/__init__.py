"""Training layer: the task-agnostic loop, the runtime and the tasks built on them. Events leave
through callbacks; nothing here imports mlflow."""
