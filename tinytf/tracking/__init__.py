"""The MLflow edge: runs and their tags, the champion model, its registration and serving."""
