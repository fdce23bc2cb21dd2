"""Training layer: the task-agnostic loop, the runtime (device, precision, compile) and the
tasks built on them: language-model pretraining, the classifier, the fine-tuning starts and the
study cells (variants, grid). Events leave through callbacks; nothing here imports mlflow."""
