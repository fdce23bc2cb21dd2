"""`tinytf serve`: MLflow's scoring app behind checks that run before MLflow reads a request
(issue 72), driven in process through ASGI, with no network."""

from __future__ import annotations

import asyncio
import json

import pytest

from tests.unit.tracking.test_champion import registered  # noqa: F401 (the fixture)
from tinytf.cli.parser import build_parser
from tinytf.cli.serve import DEFAULT_MAX_BYTES, Bounded, build_app

JSON = {"Content-Type": "application/json"}


class Client:
    """One ASGI request at a time; `body` may be a list of chunks (a streamed body) and counts
    how many of them the app read."""

    def __init__(self, app) -> None:
        self.app = app

    def post(self, body, headers=JSON, path="/invocations", method="POST"):
        chunks = list(body) if isinstance(body, list) else [body]
        stream = not isinstance(body, list)
        headers = dict(headers)
        if stream and "Content-Length" not in headers:
            headers["Content-Length"] = str(len(body))
        self.read = 0
        return asyncio.run(self._call(method, path, headers, iter(chunks), len(chunks)))

    async def _call(self, method, path, headers, chunks, count):
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "root_path": "",
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            "client": ("127.0.0.1", 1),
            "server": ("127.0.0.1", 5001),
        }
        done = asyncio.Event()

        async def receive():
            chunk = next(chunks, None)
            if chunk is None:
                await done.wait()  # as a server does: nothing more until the answer is sent
                return {"type": "http.disconnect"}
            self.read += 1
            return {"type": "http.request", "body": chunk, "more_body": self.read < count}

        sent = []

        async def send(message):
            sent.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                done.set()

        await self.app(scope, receive, send)
        status = next(m["status"] for m in sent if m["type"] == "http.response.start")
        text = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
        return status, text.decode()


@pytest.fixture(scope="module")
def client(registered):  # noqa: F811
    from tinytf.tracking.champion import load_champion

    model = load_champion("models:/tinytf-sentiment@champion", registered["store"])
    return Client(build_app(model, max_bytes=10_000))


@pytest.fixture(scope="module")
def wide(client):
    """The same app at the default limit, for bodies over the small one."""
    return Client(Bounded(client.app.app, DEFAULT_MAX_BYTES))


def post_json(client, payload):
    return client.post(json.dumps(payload).encode())


def test_every_input_form_is_answered_like_mlflow_does(client):
    forms = [
        {"dataframe_records": [{"text": "a gripping film"}, {"text": "dull"}]},
        {"dataframe_split": {"columns": ["text"], "data": [["a gripping film"], ["dull"]]}},
        {"inputs": ["a gripping film", "dull"]},
        {"instances": ["a gripping film", "dull"]},
        {"inputs": {"text": ["a gripping film", "dull"]}},
        {"inputs": [{"text": "a gripping film"}, {"text": "dull"}]},
    ]
    answers = []
    for payload in forms:
        status, text = post_json(client, payload)
        assert status == 200, (payload, text)
        answers.append(json.loads(text)["predictions"])
    assert all(answer == answers[0] for answer in answers) and len(answers[0]) == 2
    assert client.post(b"", method="GET", path="/ping")[0] == 200  # other paths go straight to MLflow


@pytest.mark.parametrize(
    "payload, message",
    [
        ({"inputs": [None]}, "'text' of row 0 is null"),
        ({"inputs": [42]}, "'text' of row 0 is int 42; expected a string"),
        ({"instances": ["fine", True]}, "'text' of row 1 is bool True; expected a string"),
        ({"inputs": {"text": ["fine", None]}}, "'text' of row 1 is null"),
        ({"dataframe_records": [{"text": "ok"}, {"text": 1.5}]}, "'text' of row 1 is float 1.5"),
        ({"dataframe_split": {"columns": ["text"], "data": [[None]]}}, "'text' of row 0 is null"),
        ({"inputs": [["nested"]]}, "'text' of row 0 is list"),
        ({"inputs": ["   "]}, "'text' of row 0 is only whitespace"),
        ({"inputs": ["ok", "\u200b\u200d"]}, "'text' of row 1 is only invisible characters (U+200B, U+200D)"),
        ({"inputs": ["\x00"]}, "'text' of row 0 is only invisible characters (U+0000)"),
        ({"inputs": ["\ufeff \u2060"]}, "'text' of row 0 is only invisible characters (U+FEFF, U+2060)"),
        ({"inputs": ["x" * 100_001]}, "at most 100,000 per text"),
        ({"dataframe_split": {"columns": ["review"], "data": [["a"]]}}, 'expected {"columns": ["text"]'),
        ({"dataframe_records": [{"review": "a"}]}, 'row 0 of dataframe_records: expected {"text": TEXT}'),
        ({"inputs": ["a"], "params": {"x": 1}}, "got keys ['inputs', 'params']"),
        ({"text": ["a"]}, "expected a JSON object with one of"),
        (["a"], "got a JSON list"),
    ],
)
def test_a_row_that_is_not_a_text_is_refused_naming_it(wide, payload, message):
    status, text = post_json(wide, payload)
    assert status == 400, text
    assert message in json.loads(text)["message"], text


def test_nan_and_infinity_are_not_texts(client):
    for literal in (b"NaN", b"Infinity", b"-Infinity"):
        status, text = client.post(b'{"inputs": [' + literal + b"]}")
        assert status == 400 and "'text' of row 0" in json.loads(text)["message"], text


@pytest.mark.parametrize(
    "body, message",
    [
        (b'{"inputs": ["a"', "not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b'{"inputs": ["\xff"]}', "not UTF-8"),
        (b"", "not valid JSON"),
    ],
)
def test_malformed_json_is_a_400_never_a_500(wide, body, message):
    status, text = wide.post(body)
    assert status == 400 and message in json.loads(text)["message"], text


@pytest.mark.parametrize(
    "headers, status",
    [
        ({}, 415),  # MLflow itself answered a missing Content-Type with a 500
        ({"Content-Type": "text/csv"}, 415),
        ({"Content-Type": "application/json; charset=latin-1"}, 415),
        ({"Content-Type": "application/json; charset=UTF-8"}, 200),
        ({"Content-Type": "application/json", "Content-Length": "ten"}, 400),
    ],
)
def test_the_content_type_must_be_json(client, headers, status):
    got, text = client.post(json.dumps({"inputs": ["a gripping film"]}).encode(), headers=headers)
    assert got == status, text
    if status == 415:
        assert "Content-Type: application/json expected" in json.loads(text)["message"]


def test_a_body_over_the_limit_is_refused_before_it_is_read(client):
    """Issue 72: 150 MB of one-letter rows peaked at 3.7 GB before the model's own 400. Declared
    too large, nothing is read; streamed (no Content-Length), reading stops at the limit."""
    rows = json.dumps({"inputs": ["a"] * 20_000}).encode()  # 100,012 bytes, ten times the limit
    status, text = client.post(rows)
    assert status == 413 and client.read == 0, text
    assert "100,012 bytes; at most 10,000 (tinytf serve --max-bytes)" in json.loads(text)["message"]
    # a 150 MB body streamed in 64 KiB chunks: refused after the limit's worth, not 150 MB
    chunk = b'"a", ' * (65_536 // 5)
    stream = [b'{"inputs": ['] + [chunk] * (150_000_000 // len(chunk))
    status, text = client.post(stream, headers=JSON)
    assert status == 413 and client.read <= 2, (client.read, text)
    assert "more than 10,000 bytes" in json.loads(text)["message"]
    # and at the limit exactly it is read and answered
    body = json.dumps({"inputs": ["a gripping film"]}).encode()
    exact = Client(Bounded(client.app.app, len(body)))
    assert exact.post([body[:10], body[10:]], headers=JSON)[0] == 200


def test_the_limit_is_in_the_help_and_checked():
    from tinytf.cli.main import main

    help_text = build_parser()._subparsers._group_actions[0].choices["serve"].format_help()
    assert f"(default: {DEFAULT_MAX_BYTES:,};" in " ".join(help_text.split())
    assert main(["serve", "--max-bytes", "0"]) == 2


def test_a_model_from_outside_the_store_is_served_only_when_trusted(tmp_path, capsys):
    from tinytf.cli.main import main

    assert main(["serve", "--model", str(tmp_path)]) == 2  # refused before anything loads it
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "runs its code" in err[0] and "--trust-model-code" in err[0]
