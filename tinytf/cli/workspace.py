"""What `tinytf exp` and `tinytf preset` do to the workspace: one of them at a time (a lock), and
a workspace `-S` written into params.yaml as one changed line.

DVC writes a `-S` into params.yaml before it runs anything, even for a temporary or queued
experiment: two runs started together in one workspace would each run with the other's values.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tinytf.cli import files
from tinytf.errors import ParamsError, TinyTFError

LOCK = Path(".dvc/tmp/tinytf-exp.lock")  # under .dvc/tmp/, which DVC's own .gitignore leaves out


@contextlib.contextmanager
def workspace_lock(root: str | Path = ".") -> Iterator[Path]:
    """Hold the workspace's experiment lock (fcntl.flock, released when the process ends, even
    killed); TinyTFError naming the holder when another process has it."""
    root = Path(root)
    if not (root / ".dvc").is_dir():
        raise TinyTFError(
            f"{root.resolve()}: no .dvc/ here: run tinytf exp and preset from the repository root"
        )
    path = root / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another tinytf exp or preset"
            raise TinyTFError(
                f"{path}: {holder} is running in this workspace; wait for it to end (nothing ran; "
                "params.yaml is as it was), or run the two in clones of their own"
            ) from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"tinytf exp or preset (pid {os.getpid()})")
        handle.flush()
        try:
            yield path
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_settings(params_file: str | Path, values: dict[str, Any], deleted: Iterable[str] = ()) -> None:
    """Set dotted keys (and delete `deleted`) in params_file, each on its own line with its comment
    kept (ruamel.yaml's round trip; DVC's own `-S` rewrites some hundred lines). The text must read
    back as the stages read it with exactly these values before it replaces the file."""
    import yaml as pyyaml
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap

    params_file = Path(params_file)
    text = params_file.read_text(encoding="utf-8")
    editor = _editor()
    data = editor.load(text)
    expected = pyyaml.safe_load(text)
    for dotted, value in values.items():
        *parents, last = dotted.split(".")
        node, plain = data, expected
        for part in parents:
            if part not in node:
                node[part], plain[part] = CommentedMap(), {}
            node, plain = node[part], plain[part]
        node[last], plain[last] = _node(value, YAML()), value
    for dotted in deleted:
        *parents, last = dotted.split(".")
        node, plain = data, expected
        try:
            for part in parents:
                node, plain = node[part], plain[part]
            del node[last], plain[last]
        except (KeyError, TypeError):
            raise ParamsError(f"-S '~{dotted}': {params_file} has no key {dotted} to delete") from None
    out = io.StringIO()
    editor.dump(data, out)
    if pyyaml.safe_load(out.getvalue()) != expected:
        raise ParamsError(
            f"{params_file}: {', '.join(values)} would not read back as set; run dvc exp run -S instead"
        )
    files.write_bytes(params_file, out.getvalue().encode("utf-8"))


def _editor():
    """ruamel.yaml round trip in params.yaml's layout: null written out, no line re-wrapped."""
    from ruamel.yaml import YAML
    from ruamel.yaml.representer import RoundTripRepresenter

    class Representer(RoundTripRepresenter):  # a subclass: add_representer edits the class it is on
        pass

    Representer.add_representer(
        type(None), lambda rep, _: rep.represent_scalar("tag:yaml.org,2002:null", "null")
    )
    editor = YAML()
    editor.Representer = Representer
    editor.preserve_quotes = True
    editor.width = 4096
    editor.indent(mapping=2, sequence=4, offset=2)
    return editor


def _node(value: Any, loader) -> Any:
    """`value` as params.yaml writes values: lists and maps in flow style, a float as YAML 1.1 reads
    back a number, a string quoted only when the stages' reader would take it for something else."""
    import yaml as pyyaml
    from ruamel.yaml.comments import CommentedMap, CommentedSeq
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(value, list):
        node = CommentedSeq(_node(v, loader) for v in value)
    elif isinstance(value, dict):
        node = CommentedMap((k, _node(v, loader)) for k, v in value.items())
    elif isinstance(value, float):
        return loader.load(yaml_value(value))
    elif isinstance(value, str):
        try:
            same = pyyaml.safe_load(value) == value
        except pyyaml.YAMLError:
            same = False
        return value if same else DoubleQuotedScalarString(value)
    else:
        return value
    node.fa.set_flow_style()
    return node


def yaml_value(value) -> str:
    """`value` as DVC's YAML 1.1 reads it back: JSON, but a float in exponent form gets its dot
    (YAML 1.1 reads 5e-05 as a string, 5.0e-05 as a number)."""
    if isinstance(value, float):
        text = repr(value)
        mantissa, e, exponent = text.partition("e")
        return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else text
    if isinstance(value, list):
        return "[" + ", ".join(yaml_value(v) for v in value) + "]"
    return json.dumps(value)
