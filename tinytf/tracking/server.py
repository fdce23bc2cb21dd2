"""Whether a tracking server answers at all, asked before MLflow's imports and its own requests,
which against a server that accepts connections but never answers wait minutes in retries."""

from __future__ import annotations

from tinytf.errors import DataError

SERVER_PROBE_TIMEOUT_S = 5


def refuse_silent_server(store: str) -> None:
    """One request to the server's /health (a model load makes several, each waiting its full
    timeout): no answer within SERVER_PROBE_TIMEOUT_S is said in one line. Any HTTP answer, 401
    included, is a server that runs."""
    if not store.startswith(("http://", "https://")):
        return
    import requests  # MLflow's own dependency

    try:
        requests.get(store.rstrip("/") + "/health", timeout=SERVER_PROBE_TIMEOUT_S)
    except requests.RequestException as exc:
        timed_out = isinstance(exc, requests.Timeout)
        reason = f"no answer within {SERVER_PROBE_TIMEOUT_S} s" if timed_out else type(exc).__name__
        raise DataError(
            f"{store}: the tracking server does not answer ({reason}); "
            f"start it, or point MLFLOW_TRACKING_URI at one that runs"
        ) from None
