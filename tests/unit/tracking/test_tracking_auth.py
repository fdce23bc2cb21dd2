"""The shared server recipe with authentication (docs/scale-out.md): `mlflow server --app-name
basic-auth` refuses a client without credentials and serves one with them, as the stages log."""

import base64
import json
import os
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.helpers.mlflow_ui import loopback_server

pytest.importorskip("flask_wtf", reason="mlflow's basic-auth app needs tinytf[server] (Flask-WTF)")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("auth")
    config = root / "basic_auth.ini"
    config.write_text(
        f"[mlflow]\ndefault_permission = READ\ndatabase_uri = sqlite:///{root / 'users.db'}\n"
        "admin_username = admin\nadmin_password = a-long-test-password\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
    )
    mlflow = Path(sys.executable).parent / "mlflow"
    command = [
        str(mlflow),
        "server",
        "--app-name",
        "basic-auth",
        "--backend-store-uri",
        f"sqlite:///{root / 'mlflow.db'}",
        "--artifacts-destination",
        str(root / "artifacts"),
        "--host",
        "127.0.0.1",
        "--port",
        "{port}",
    ]
    # a fixed secret for the auth app's CSRF tokens; a team sets its own, the same on every server
    env = dict(
        os.environ, MLFLOW_AUTH_CONFIG_PATH=str(config), MLFLOW_FLASK_SERVER_SECRET_KEY="test-only-secret"
    )
    with loopback_server(command, "/health", timeout=180, env=env) as url:
        yield url


def get(url: str, user: str | None = None, password: str | None = None) -> int:
    request = urllib.request.Request(f"{url}/api/2.0/mlflow/experiments/search?max_results=1")
    if user:
        token = base64.b64encode(f"{user}:{password}".encode()).decode()
        request.add_header("Authorization", f"Basic {token}")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            json.load(response)
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def test_a_client_without_credentials_is_refused_and_one_with_them_is_served(server):
    assert get(server) == 401
    assert get(server, "admin", "wrong") == 401
    assert get(server, "admin", "a-long-test-password") == 200


def test_a_stage_logs_its_run_with_the_credentials_from_the_environment(server, monkeypatch):
    from tinytf.tracking.runs import stage_run

    monkeypatch.setenv("TINYTF_TRACKING", "1")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "admin")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", "a-long-test-password")
    with stage_run("prepare", {"prepare": {"corpus": {"source": "ptb"}}}, "tinytf-auth") as tracker:
        tracker.log_metrics({"rows": 3})
    import mlflow

    runs = mlflow.search_runs(experiment_names=["tinytf-auth"])
    assert list(runs["metrics.rows"]) == [3] and list(runs["status"]) == ["FINISHED"]
