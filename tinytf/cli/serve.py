"""`tinytf serve`: the registered champion over HTTP, every request bounded before it is parsed.

`mlflow models serve` reads the whole body and builds a DataFrame before the model's checks run
(a huge body takes gigabytes, a deep JSON gets a 500), and it turns `null`, `42` or `NaN` rows into
the strings "None", "42" and "nan". So MLflow's own scoring app sits behind a small ASGI layer
that checks POST /invocations' type, size, JSON and rows first (415, 413, 400), then hands the
bytes on unchanged; other paths go straight to MLflow's app.
"""

from __future__ import annotations

import json
import sys

from tinytf.cli.inputs import add_model_arguments, refuse_untrusted_model
from tinytf.errors import DataError

# The model takes at most 1,000,000 bytes of text a request (tinytf.data.texts.MAX_REQUEST_BYTES);
# the body holds those texts with JSON's quotes, keys and escapes around them, so twice that.
DEFAULT_MAX_BYTES = 2_000_000
LARGEST_MAX_BYTES = 64_000_000
FORMS = ("dataframe_split", "dataframe_records", "inputs", "instances")
SHAPES = (
    'expected a JSON object with one of: {"dataframe_split": {"columns": ["text"], "data": [[TEXT], ...]}}, '
    '{"dataframe_records": [{"text": TEXT}, ...]}, {"inputs": [TEXT, ...]} (or "instances"; '
    'rows may also be {"text": TEXT}, or the whole {"text": [TEXT, ...]})'
)


def add_parser(sub) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve the registered champion over HTTP, each request's size and rows checked first",
        description="Serve MODEL (default: the champion `evaluate` registered, from the tracking store "
        "at the repository root or MLFLOW_TRACKING_URI) at POST /invocations with MLflow's own scoring "
        "app, as `mlflow models serve --env-manager local` does, behind a check that runs before MLflow "
        "reads a request: a body over --max-bytes gets 413 unread, a Content-Type other than "
        "application/json 415, malformed or too deeply nested JSON 400, and a row that is not a string, "
        "is blank or only invisible characters a 400 naming it. Loading a model runs its code: serve only "
        "models from a registry you trust.",
    )
    add_model_arguments(serve, "serve")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    serve.add_argument("--port", type=int, default=5001, help="port (default: %(default)s)")
    serve.add_argument(
        "--max-bytes",
        type=int,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help="largest request body in bytes; a larger one is refused (413) before it is read "
        f"(default: {DEFAULT_MAX_BYTES:,}; at most {LARGEST_MAX_BYTES:,})",
    )


class Refused(Exception):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def bad(message: str) -> Refused:
    return Refused(400, "BAD_REQUEST", message)


class Bounded:
    """ASGI middleware in front of MLflow's scoring app: see the module's docstring."""

    def __init__(self, app, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["path"] != "/invocations" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        try:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
            self.check_headers(headers)
            body = await self.read(receive)
            if body is None:  # the client went away
                return
            check_texts(parse(body))
        except Refused as exc:
            await respond(send, exc)
            return
        replayed = False

        async def replay():
            nonlocal replayed
            if replayed:
                return await receive()  # whatever comes next: a disconnect
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    def check_headers(self, headers: dict[str, str]) -> None:
        content_type = headers.get("content-type", "")
        media, *parameters = [part.strip().lower() for part in content_type.split(";")]
        if media != "application/json" or any(p.replace(" ", "") != "charset=utf-8" for p in parameters):
            got = f"got {content_type!r}" if content_type else "none was given"
            raise Refused(
                415,
                "UNSUPPORTED_MEDIA_TYPE",
                f"Content-Type: application/json expected ({got}); this model takes JSON texts",
            )
        length = headers.get("content-length")
        if length is not None:
            if not length.strip().isdigit():
                raise bad(f"Content-Length {length!r} is not a number of bytes")
            if int(length) > self.max_bytes:
                raise too_large(f"{int(length):,} bytes", self.max_bytes)

    async def read(self, receive) -> bytes | None:
        """The body, read up to the limit: a streamed body is refused once it passes it."""
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.max_bytes:
                raise too_large(f"more than {self.max_bytes:,} bytes", self.max_bytes)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def too_large(size: str, limit: int) -> Refused:
    return Refused(
        413,
        "REQUEST_TOO_LARGE",
        f"the request body holds {size}; at most {limit:,} (tinytf serve --max-bytes): send the texts in parts",
    )


async def respond(send, refused: Refused) -> None:
    body = json.dumps({"error_code": refused.code, "message": refused.message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": refused.status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
        }
    )
    await send({"type": "http.response.body", "body": body})


def parse(body: bytes):
    try:
        return json.loads(body)  # bytes: UTF-8 (or -16/-32, as RFC 8259 allows) found by json itself
    except RecursionError:
        raise bad("the JSON is nested too deeply; send texts in one of the input forms") from None
    except UnicodeDecodeError as exc:
        raise bad(f"the body is not UTF-8 (byte {exc.start}); send UTF-8 JSON") from None
    except ValueError as exc:  # JSONDecodeError
        raise bad(f"the body is not valid JSON ({exc})") from None


def rows_of(payload) -> list:
    """The values of the `text` column, one per row, from any of MLflow's input forms."""
    given = [key for key in FORMS if isinstance(payload, dict) and key in payload]
    if len(given) != 1 or len(payload) != 1:
        got = f"keys {sorted(payload)}" if isinstance(payload, dict) else f"a JSON {type(payload).__name__}"
        raise bad(f"{SHAPES}; got {got}")
    form, value = given[0], payload[given[0]]
    if form == "dataframe_split":
        if (
            not isinstance(value, dict)
            or value.get("columns") != ["text"]
            or not isinstance(value.get("data"), list)
        ):
            raise bad('dataframe_split: expected {"columns": ["text"], "data": [[TEXT], ...]}')
        rows = value["data"]
        for i, row in enumerate(rows):
            if not isinstance(row, list) or len(row) != 1:
                raise bad(f"row {i} of dataframe_split: expected [TEXT], one value for the one column 'text'")
        return [row[0] for row in rows]
    if form != "dataframe_records" and isinstance(value, dict):  # {"inputs": {"text": [...]}}
        if list(value) != ["text"] or not isinstance(value["text"], list):
            raise bad(f'{form}: expected {{"text": [TEXT, ...]}} or a list of texts')
        return value["text"]
    if not isinstance(value, list):
        raise bad(f"{form}: expected a list of rows, got a JSON {type(value).__name__}")
    records = form == "dataframe_records" or any(isinstance(row, dict) for row in value)
    if not records:
        return value
    for i, row in enumerate(value):
        if not isinstance(row, dict) or list(row) != ["text"]:
            raise bad(f'row {i} of {form}: expected {{"text": TEXT}}')
    return [row["text"] for row in value]


def check_texts(payload) -> None:
    """Every row as the model checks it (tinytf.data.texts.check_rows), and none invisible only."""
    from tinytf.cli.texts import refuse_invisible
    from tinytf.data.texts import check_rows, row_names

    texts = rows_of(payload)
    names = row_names(len(texts))
    try:
        check_rows(texts, names)
        for name, text in zip(names, texts, strict=True):
            refuse_invisible(name, text)
    except DataError as exc:
        raise bad(str(exc)) from None


def build_app(model, max_bytes: int = DEFAULT_MAX_BYTES):
    """MLflow's scoring app for the pyfunc `model`, behind the checks above."""
    from mlflow.pyfunc import scoring_server

    return Bounded(scoring_server.init(model), max_bytes)


def serve_command(args) -> None:
    if not 1 <= args.max_bytes <= LARGEST_MAX_BYTES:
        raise DataError(f"--max-bytes {args.max_bytes}: expected 1 to {LARGEST_MAX_BYTES:,} bytes")
    if not 0 <= args.port <= 65535:
        raise DataError(f"--port {args.port}: expected 0 to 65535")
    from tinytf.cli.urls import redacted
    from tinytf.tracking.connect import tracking_uri

    refuse_untrusted_model(args.model, args.trust_model_code)
    from tinytf.tracking.server import refuse_silent_server

    store = tracking_uri()
    refuse_silent_server(store)
    import uvicorn  # MLflow's own dependency, as its scoring server runs under it

    from tinytf.tracking.champion import load_champion

    model = load_champion(args.model, store)
    print(
        f"tinytf serve: {args.model} from {redacted(store)} at http://{args.host}:{args.port}/invocations, "
        f"bodies up to {args.max_bytes:,} bytes",
        file=sys.stderr,
    )
    uvicorn.run(build_app(model, args.max_bytes), host=args.host, port=args.port, log_level="warning")
