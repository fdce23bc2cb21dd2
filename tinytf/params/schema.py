"""Typed sections from YAML: the machinery `tinytf.params.config` builds params.yaml's schema with,
and `DeclaredParams`, a read-only view that lets its reader see only the keys it declares."""

from __future__ import annotations

import dataclasses
import difflib
import operator
import types
import typing
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

import yaml

from tinytf.errors import ParamsError

# YAML aliases a params file may hold: params.yaml and the presets use none, and each alias can
# double what the loader builds, so a few hundred bytes of nested aliases (a "billion laughs")
# hold DVC and this loader for minutes; counted on the token stream, before anything is built
MAX_YAML_ALIASES = 20
# values in one list: a list of seeds, label counts or candidates multiplies the runs, so its length
# sizes time as a number does; far above any study's, refused at once above it
MAX_LIST_ITEMS = 1000


def read_yaml(path: Path) -> Any:
    """A YAML file's content, refused in one line when it is not UTF-8, not YAML, or holds more
    aliases than MAX_YAML_ALIASES."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        aliases = sum(isinstance(token, yaml.AliasToken) for token in yaml.scan(text))
        if aliases > MAX_YAML_ALIASES:
            raise ParamsError(
                f"{file}: {aliases} YAML aliases (*name); at most {MAX_YAML_ALIASES}: write the values out"
            )
        return yaml.safe_load(text)
    except UnicodeDecodeError as exc:
        raise ParamsError(f"{file}: byte {exc.start} is not UTF-8; save the file as UTF-8") from None
    except yaml.YAMLError as exc:
        raise ParamsError(f"{file}: not valid YAML: {' '.join(str(exc).split())}") from None
    except OSError as exc:
        raise ParamsError(f"{file}: cannot be read ({exc.strerror})") from None


def bounded(default: Any, **limits: float) -> Any:
    """A dataclass field with a default and numeric limits (ge/gt/le/lt) checked on load."""
    if isinstance(default, (list, dict)):
        return field(default_factory=lambda: type(default)(default), metadata=limits)
    return field(default=default, metadata=limits)


def parse_section(cls: type, data: Any, key: str, file: str) -> Any:
    """Build dataclass `cls` from a mapping, checking every key, type and limit."""
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ParamsError(f"{file}: {key or 'top level'}: expected a mapping, got {_describe(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in data:
        if name not in fields:
            guess = difflib.get_close_matches(str(name), list(fields), n=1)
            hint = f" (did you mean '{join(key, guess[0])}'?)" if guess else ""
            known = ", ".join(fields)
            raise ParamsError(f"{file}: unknown key '{join(key, name)}'{hint}; known keys: {known}")
    values = {}
    for name, fld in fields.items():
        if name in data:
            values[name] = _coerce(hints[name], data[name], join(key, name), file)
            _check_limits(fld.metadata, values[name], join(key, name), file)
    obj = cls(**values)
    if hasattr(obj, "validate"):
        obj.validate(key, file)
    return obj


EXPECTED = {bool: "true or false", int: "an integer", str: "a string"}


def _coerce(hint: Any, value: Any, key: str, file: str) -> Any:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if dataclasses.is_dataclass(hint):
        return parse_section(hint, value, key, file)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        options = [a for a in args if a is not type(None)]
        errors = []
        for option in options:
            try:
                return _coerce(option, value, key, file)
            except ParamsError as exc:
                errors.append(str(exc))
        raise ParamsError(errors[0])
    if origin is Literal:
        if value not in args:
            choices = ", ".join(repr(a) for a in args)
            guess = difflib.get_close_matches(str(value), [str(a) for a in args], n=1)
            hint_text = f" (did you mean '{guess[0]}'?)" if guess else ""
            raise ParamsError(f"{file}: {key}: {value!r} is not one of {choices}{hint_text}")
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ParamsError(f"{file}: {key}: expected a list, got {_describe(value)}")
        if len(value) > MAX_LIST_ITEMS:
            raise ParamsError(f"{file}: {key}: {len(value):,} values; at most {MAX_LIST_ITEMS:,}")
        return [_coerce(args[0], item, f"{key}[{i}]", file) for i, item in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ParamsError(f"{file}: {key}: expected a mapping, got {_describe(value)}")
        return {str(k): _coerce(args[1], v, join(key, str(k)), file) for k, v in value.items()}
    if hint in (bool, int, str):
        # bool is a subclass of int, so `true` is refused as an integer by hand
        if not isinstance(value, hint) or (hint is int and isinstance(value, bool)):
            raise ParamsError(f"{file}: {key}: expected {EXPECTED[hint]}, got {_describe(value)}")
        return value
    if hint is float:
        # YAML reads 1e-3 (no dot) as a string; accept it as the number the user meant
        if isinstance(value, str):
            try:
                value = float(value)
            except ValueError:
                raise ParamsError(f"{file}: {key}: expected a number, got {_describe(value)}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ParamsError(f"{file}: {key}: expected a number, got {_describe(value)}")
        return float(value)
    if hint is Any:
        return value
    raise TypeError(f"unsupported schema type {hint!r} for {key}")


LIMITS = {"ge": operator.ge, "gt": operator.gt, "le": operator.le, "lt": operator.lt}
SYMBOLS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def _check_limits(limits: Any, value: Any, key: str, file: str) -> None:
    for item in value if isinstance(value, list) else [value]:
        if not isinstance(item, (int, float)) or isinstance(item, bool):
            continue
        for name, bound in limits.items():
            if not LIMITS[name](item, bound):
                raise ParamsError(f"{file}: {key}: must be {SYMBOLS[name]} {bound}, got {item}")


def set_dotted(raw: dict, dotted: str, value: Any) -> None:
    node = raw
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ParamsError(f"override {dotted}: '{part}' is not a section")
    node[parts[-1]] = value


def parse_overrides(items: list[str]) -> dict:
    """`--set KEY=VALUE` items as {dotted key: value}, for `set_dotted`."""
    overrides = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ParamsError(f"--set {item!r}: expected KEY=VALUE, e.g. --set tokenize.vocab_size=4000")
        # values are YAML so that numbers, booleans and lists mean what they do in params.yaml
        overrides[key.strip()] = yaml.safe_load(value)
    return overrides


def join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else str(name)


def _describe(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"


def to_dict(obj: Any) -> Any:
    """Plain-dict view of a params object (for logging and hashing)."""
    return dataclasses.asdict(obj)


def _plain(value: Any) -> Any:
    """Dataclasses (and lists of them) as dicts, for logging and hashing."""
    if dataclasses.is_dataclass(value):
        return to_dict(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def flatten(data: dict, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists become their string form (MLflow params are strings)."""
    flat: dict[str, Any] = {}
    for name, value in data.items():
        dotted = join(prefix, name)
        if isinstance(value, dict):
            flat.update(flatten(value, dotted))
        else:
            flat[dotted] = value
    return flat


class UndeclaredParam(ParamsError):
    """A stage read a params key its declaration does not list: DVC would not rerun it on a change."""


class DeclaredParams:
    """A read-only view of `Params` through which a stage sees only the keys it declares, so that it
    cannot depend on a key DVC does not watch. `declared` holds dotted keys as dvc.yaml's `params:`
    lists them (`model`, `tokenize.max_length`): a declared key, or anything under it, reads as the
    plain value; a parent of declared keys, as a narrower view; anything else raises `UndeclaredParam`.
    """

    def __init__(self, obj: Any, declared: tuple[str, ...], reader: str, prefix: str = ""):
        object.__setattr__(self, "_obj", obj)
        object.__setattr__(self, "_declared", declared)
        object.__setattr__(self, "_reader", reader)
        object.__setattr__(self, "_prefix", prefix)

    def __getattr__(self, name: str) -> Any:
        method = getattr(type(self._obj), name, None)
        if callable(method) and not isinstance(method, type):
            return method.__get__(self)  # bound to this view, so the keys it reads are checked too
        key = join(self._prefix, name)
        value = getattr(self._obj, name)
        if any(key == d or key.startswith(d + ".") for d in self._declared):
            return value
        if dataclasses.is_dataclass(value) and any(d.startswith(key + ".") for d in self._declared):
            return DeclaredParams(value, self._declared, self._reader, key)
        raise UndeclaredParam(
            f"{self._reader} reads params key '{key}', which its `params:` in dvc.yaml does not "
            f"declare (declared: {', '.join(self._declared) or 'none'}); add it there, or DVC will "
            "not rerun the stage when it changes"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("params are read-only")

    def as_dict(self) -> dict[str, Any]:
        """The declared keys and their values, nested by section (what the stage's run logs)."""
        out: dict[str, Any] = {}
        for dotted in self._declared:
            if self._prefix and not dotted.startswith(self._prefix + "."):
                continue
            parts = dotted[len(self._prefix) + 1 :].split(".") if self._prefix else dotted.split(".")
            value = self._obj
            for part in parts:
                value = getattr(value, part)
            node = out
            for part in parts[:-1]:
                node = node.setdefault(part, {})
            node[parts[-1]] = _plain(value)
        return out
