"""One config system: YAML -> frozen dataclass, ``file:line: key.path: message`` errors, overrides.

A config *schema* is a frozen dataclass whose fields carry type annotations; nested dataclasses
are sections. ``load_config(path, Schema, overrides)`` reads a YAML file, applies ``key.path=value``
overrides (MaxText style: ``stylebench train run.yaml trainer.batch_size=512``) and builds the
dataclass, checking every key and value on the way:

- unknown keys are rejected with the keys the section accepts;
- values must match the annotation: ``str``, ``int``, ``float`` (an int is accepted), ``bool``,
  ``pathlib.Path`` (from a string, kept relative to the working directory), ``Literal[...]``
  choices, ``X | None``, ``tuple[X, ...]`` / ``list[X]`` (both become tuples, so configs stay
  hashable), ``tuple[X, Y]``, ``dict[str, X]`` and nested dataclasses;
- fields without a default are required;
- ``field(metadata={"minimum": m, "maximum": M})`` bounds numbers, ``{"non_empty": True}``
  rejects empty strings and sequences, ``{"config": False}`` marks a field the code sets (not a
  key of the file);
- a schema's ``__post_init__`` may raise :class:`InvalidField` (``InvalidField("tasks[1]",
  "unknown task 'x'")``; the path is relative to that dataclass) or a plain ``ValueError``
  (reported at the dataclass itself): both come out located at the right line.

Every problem is a :class:`ConfigError` (a ``UserInputError``: the CLI prints it on one line and
exits with code 2) whose message reads ``quick.yaml:14: datasets[3].tasks[1]: unknown task
'clusters'; ...``; a bad override reads ``quick.yaml: override 'trainer.lr=abc': trainer.lr:
expected a number, found 'abc'``. Library code raises ``ValueError`` naming fields; only this
loader and ``commands/`` speak in key paths and flags.

``config_to_dict`` gives back plain JSON-ready data (the resolved config a run records).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar, Union

import yaml

from stylebench_jax.errors import UserInputError, located

T = TypeVar("T")
KeyPath = tuple[str | int, ...]


class ConfigError(UserInputError):
    """A config file or override that cannot be used as given (message: file:line: key.path: ...)."""


class InvalidField(ValueError):
    """Raised by a schema's ``__post_init__``: ``field`` is a key path relative to that dataclass
    (``"size"``, ``"datasets[2].tasks[0]"``), ``message`` what is wrong with its value."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def format_path(keys: Sequence[str | int]) -> str:
    """``("datasets", 3, "tasks", 1)`` -> ``"datasets[3].tasks[1]"``."""
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else (f".{key}" if out else str(key))
    return out


def parse_path(text: str) -> KeyPath:
    """Inverse of :func:`format_path`: ``"a.b[2].c"`` -> ``("a", "b", 2, "c")``."""
    keys: list[str | int] = []
    for part in text.split("."):
        name, _, rest = part.partition("[")
        if not name and not keys:
            raise ValueError(f"empty key in {text!r}")
        if name:
            keys.append(name)
        while rest:
            index, sep, rest = rest.partition("]")
            if not sep or not index.isdigit():
                raise ValueError(f"bad index in {text!r}")
            keys.append(int(index))
            rest = rest[1:] if rest.startswith("[") else rest
            if rest:
                raise ValueError(f"unexpected {rest!r} in {text!r}")
    return tuple(keys)


# --------------------------------------------------------------------------- locating keys


class Locator:
    """Maps key paths of a loaded YAML document to line numbers, and builds located errors."""

    def __init__(self, source: str | Path, root: yaml.Node | None):
        self.source = source
        self.root = root
        self.overridden: dict[KeyPath, str] = {}

    def line(self, keys: Sequence[str | int]) -> int | None:
        node, line = self.root, (self.root.start_mark.line + 1 if self.root is not None else None)
        for key in keys:
            child = _child(node, key)
            if child is None:
                return line
            node = child
            line = node.start_mark.line + 1
        return line

    def in_file(self, keys: Sequence[str | int]) -> bool:
        node = self.root
        for key in keys:
            node = _child(node, key)
            if node is None:
                return False
        return True

    def error(self, keys: Sequence[str | int], message: str) -> ConfigError:
        keys = tuple(keys)
        label = format_path(keys)
        for path, text in self.overridden.items():  # a value set on the command line
            # ... or a key that only an override brings (not in the file: no line of it to show)
            if keys[: len(path)] == path or (path[: len(keys)] == keys and not self.in_file(keys)):
                return ConfigError(f"{self.source}: override {text!r}: {label}: {message}")
        text = f"{label}: {message}" if label else message
        # a check of a whole section (shares summing to 1) that an override changed part of
        inside = [repr(t) for path, t in self.overridden.items() if keys and path[: len(keys)] == keys]
        if inside:
            text += f" (with override{'s' if len(inside) > 1 else ''} {', '.join(inside)})"
        return ConfigError(str(located(self.source, text, line=self.line(keys))))


def _child(node: yaml.Node | None, key: str | int) -> yaml.Node | None:
    if isinstance(node, yaml.MappingNode) and isinstance(key, str):
        for key_node, value_node in node.value:
            if key_node.value == key:
                return value_node
    if isinstance(node, yaml.SequenceNode) and isinstance(key, int) and key < len(node.value):
        return node.value[key]
    return None


# --------------------------------------------------------------------------- reading YAML


def read_yaml(path: str | Path) -> tuple[Any, Locator]:
    """Parse a YAML file; returns ``(data, locator)``. Unreadable or invalid files raise
    :class:`ConfigError` with the line and column of the problem."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: config file not found")
    if not path.is_file():
        raise ConfigError(f"{path}: expected a YAML file, found a directory")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: invalid UTF-8 ({error.reason}); expected a UTF-8 YAML file") from None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read config file ({error.strerror or error})") from None
    return parse_yaml(text, path)


def parse_yaml(text: str, source: str | Path) -> tuple[Any, Locator]:
    """Parse YAML ``text`` (named ``source`` in errors); returns ``(data, locator)``."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(str(located(source, f"invalid YAML ({problem})",
                                      line=mark.line + 1 if mark else None,
                                      column=mark.column + 1 if mark else None))) from None
    return ({} if data is None else data), Locator(source, node)


# --------------------------------------------------------------------------- overrides


def apply_overrides(data: Any, overrides: Sequence[str], schema: type, locator: Locator) -> Any:
    """Return ``data`` with each ``key.path=value`` of ``overrides`` set (in order).

    The value is read as the field's type asks: kept verbatim for strings and paths, parsed as
    YAML otherwise (``[a, b]``, ``{x: 1}``, ``true``, ``null``), numbers also in forms YAML 1.1
    leaves as strings (``2e-5``). Unknown keys fail here, naming the keys the section accepts.
    """
    for text in overrides:
        key, sep, raw = text.partition("=")
        key = key.strip()
        try:
            keys = parse_path(key) if sep and key else None
        except ValueError:
            keys = None
        if not keys:
            raise ConfigError(f"{locator.source}: override {text!r}: expected key.path=value "
                              "(e.g. trainer.batch_size=512)")
        locator.overridden[keys] = text
        annotation = _annotation_at(schema, keys, locator)
        data = _set(data, keys, _override_value(raw, annotation), locator)
    return data


def _annotation_at(schema: type, keys: KeyPath, locator: Locator) -> Any:
    annotation: Any = schema
    for depth, key in enumerate(keys):
        annotation = _strip_optional(annotation)
        if dataclasses.is_dataclass(annotation) and isinstance(key, str):
            hints = _hints(annotation)
            if key not in hints:
                raise locator.error(keys[: depth + 1], f"unknown key {key!r}; expected one of "
                                                       f"{', '.join(hints)}")
            annotation = hints[key]
        elif _origin(annotation) in (tuple, list) and isinstance(key, int):
            args = typing.get_args(annotation)
            annotation = args[0] if len(args) == 2 and args[1] is Ellipsis or len(args) == 1 else (
                args[key] if key < len(args) else Any)
        elif _origin(annotation) is dict and isinstance(key, str):
            annotation = typing.get_args(annotation)[1]
        else:
            raise locator.error(keys[: depth + 1], "cannot be set: its parent is not a section")
    return annotation


def _override_value(raw: str, annotation: Any) -> Any:
    base = _strip_optional(annotation)
    if base in (str, Path) and raw.strip() not in ("null", "~"):
        return raw
    try:
        value = yaml.safe_load(raw)
    except yaml.YAMLError:
        return raw
    if isinstance(value, str) and base in (int, float):
        try:
            return int(raw) if base is int else float(raw)
        except ValueError:
            return value
    return value


def _set(data: Any, keys: KeyPath, value: Any, locator: Locator, depth: int = 0) -> Any:
    """``data`` with ``keys[depth:]`` set to ``value`` (copies along the path, never in place)."""
    head, last = keys[depth], depth == len(keys) - 1
    if isinstance(head, int):
        if not isinstance(data, list) or head >= len(data):
            raise locator.error(keys[: depth + 1], f"no list entry {head} to override")
        copy = list(data)
        copy[head] = value if last else _set(copy[head], keys, value, locator, depth + 1)
        return copy
    copy = dict(data) if isinstance(data, dict) else {}
    copy[head] = value if last else _set(copy.get(head, {}), keys, value, locator, depth + 1)
    return copy


# --------------------------------------------------------------------------- building dataclasses


def load_config(path: str | Path, schema: type[T], overrides: Sequence[str] = ()) -> T:
    """Read ``path``, apply ``overrides`` and build ``schema`` (see the module docstring)."""
    data, locator = read_yaml(path)
    return build(schema, apply_overrides(data, overrides, schema, locator), locator)


def locate_field(path: str | Path, schema: type, overrides: Sequence[str],
                 error: InvalidField) -> ConfigError:
    """An ``InvalidField`` found after loading (a file the config names, a topic count the corpus
    cannot give) as ``file:line: key.path: message`` of the config at ``path`` (or of the override
    that set the key)."""
    data, locator = read_yaml(path)
    apply_overrides(data, overrides, schema, locator)
    try:
        keys = parse_path(error.field)
    except ValueError:
        keys = (error.field,)
    return locator.error(keys, error.message)


def build(schema: type[T], data: Any, locator: Locator, keys: KeyPath = ()) -> T:
    """Check ``data`` against ``schema`` and construct it; errors are located by ``locator``."""
    return _convert(schema, data, locator, tuple(keys))


def config_from_dict(schema: type[T], data: Mapping[str, Any], source: str = "<config>") -> T:
    """Build ``schema`` from plain data (tests, configs assembled in code); errors name ``source``."""
    return build(schema, dict(data), Locator(source, None))


def _config_fields(schema: type) -> list[dataclasses.Field]:
    """Fields read from the file: ``field(metadata={"config": False})`` marks one set by code."""
    return [f for f in dataclasses.fields(schema) if f.init and f.metadata.get("config", True)]


def _hints(schema: type) -> dict[str, Any]:
    hints = typing.get_type_hints(schema)
    return {f.name: hints[f.name] for f in _config_fields(schema)}


def _origin(annotation: Any) -> Any:
    return typing.get_origin(annotation)


def _strip_optional(annotation: Any) -> Any:
    if _origin(annotation) in (Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def _describe(annotation: Any) -> str:
    annotation = _strip_optional(annotation)
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             Path: "a path (string)"}
    if annotation in names:
        return names[annotation]
    if _origin(annotation) is Literal:
        return "one of " + ", ".join(str(a) for a in typing.get_args(annotation))
    if _origin(annotation) in (tuple, list):
        return "a list"
    if _origin(annotation) is dict or dataclasses.is_dataclass(annotation):
        return "a mapping"
    return str(annotation)


def _show(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _convert(annotation: Any, value: Any, locator: Locator, keys: KeyPath) -> Any:
    origin = _origin(annotation)
    if origin in (Union, types.UnionType):
        args = typing.get_args(annotation)
        if value is None and type(None) in args:
            return None
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1:
            return _convert(rest[0], value, locator, keys)
        for arg in rest:  # first member the value fits
            try:
                return _convert(arg, value, locator, keys)
            except ConfigError:
                continue
        raise locator.error(keys, f"expected {' or '.join(_describe(a) for a in rest)}, found {_show(value)}")
    if annotation is Any:
        return value
    if dataclasses.is_dataclass(annotation):
        return _dataclass(annotation, value, locator, keys)
    if origin is Literal:
        choices = typing.get_args(annotation)
        if value not in choices or isinstance(value, bool) != any(isinstance(c, bool) for c in choices):
            raise locator.error(keys, f"expected one of {', '.join(map(str, choices))}, found {_show(value)}")
        return value
    if origin in (tuple, list):
        return _sequence(annotation, value, locator, keys)
    if origin is dict:
        if not isinstance(value, dict):
            raise locator.error(keys, f"expected a mapping, found {_show(value)}")
        key_type, value_type = typing.get_args(annotation) or (str, Any)
        return {_convert(key_type, k, locator, keys + (str(k),)):
                _convert(value_type, v, locator, keys + (str(k),)) for k, v in value.items()}
    return _scalar(annotation, value, locator, keys)


def _scalar(annotation: Any, value: Any, locator: Locator, keys: KeyPath) -> Any:
    if annotation is bool:
        if not isinstance(value, bool):
            raise locator.error(keys, f"expected true or false, found {_show(value)}")
        return value
    if annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise locator.error(keys, f"expected an integer, found {_show(value)}")
        return value
    if annotation is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise locator.error(keys, f"expected a number, found {_show(value)}")
        if not math.isfinite(value):  # YAML's .nan / .inf: no setting means either, and NaN passes bounds
            raise locator.error(keys, f"expected a finite number, found {_show(value)}")
        return float(value)
    if annotation is str:
        if not isinstance(value, str):
            raise locator.error(keys, f"expected a string, found {_show(value)}")
        return value
    if annotation is Path:
        if not isinstance(value, str) or not value.strip():
            raise locator.error(keys, f"expected a path (a non-empty string), found {_show(value)}")
        return Path(value).expanduser()
    raise TypeError(f"config schemas cannot use type {annotation!r} (at {format_path(keys)})")


def _sequence(annotation: Any, value: Any, locator: Locator, keys: KeyPath) -> tuple:
    if not isinstance(value, list):
        raise locator.error(keys, f"expected a list, found {_show(value)}")
    args = typing.get_args(annotation)
    if _origin(annotation) is tuple and args and not (len(args) == 2 and args[1] is Ellipsis):
        if len(value) != len(args):
            raise locator.error(keys, f"expected a list of {len(args)} values, found {len(value)}")
        return tuple(_convert(a, v, locator, keys + (i,)) for i, (a, v) in enumerate(zip(args, value)))
    item = args[0] if args else Any
    return tuple(_convert(item, v, locator, keys + (i,)) for i, v in enumerate(value))


def _check_metadata(field: dataclasses.Field, value: Any, locator: Locator, keys: KeyPath) -> None:
    meta = field.metadata
    if value is None:
        return
    if "minimum" in meta and value < meta["minimum"]:
        raise locator.error(keys, f"expected a value >= {meta['minimum']}, found {_show(value)}")
    if "maximum" in meta and value > meta["maximum"]:
        raise locator.error(keys, f"expected a value <= {meta['maximum']}, found {_show(value)}")
    if meta.get("non_empty") and (not value or (isinstance(value, str) and not value.strip())):
        raise locator.error(keys, f"expected a non-empty value, found {_show(value)}")


def _dataclass(schema: type, value: Any, locator: Locator, keys: KeyPath) -> Any:
    hints = _hints(schema)
    if not isinstance(value, dict):
        raise locator.error(keys, f"expected a mapping with keys {', '.join(hints)}, found {_show(value)}")
    for key in value:
        if key not in hints:
            raise locator.error(keys + (str(key),),
                                f"unknown key {key!r}; expected one of {', '.join(hints)}")
    kwargs = {}
    for field in _config_fields(schema):
        if field.name not in value:
            if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING:
                raise locator.error(keys + (field.name,), f"missing; expected {_describe(hints[field.name])}")
            continue
        converted = _convert(hints[field.name], value[field.name], locator, keys + (field.name,))
        _check_metadata(field, converted, locator, keys + (field.name,))
        kwargs[field.name] = converted
    try:
        return schema(**kwargs)
    except InvalidField as error:
        try:
            relative = parse_path(error.field)
        except ValueError:
            relative = (error.field,)
        raise locator.error(keys + relative, error.message) from None
    except ValueError as error:
        raise locator.error(keys, str(error)) from None


# --------------------------------------------------------------------------- back to plain data


def config_to_dict(config: Any) -> Any:
    """A config dataclass as JSON-ready data (tuples -> lists, paths -> strings)."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        return {f.name: config_to_dict(getattr(config, f.name)) for f in dataclasses.fields(config)}
    if isinstance(config, (tuple, list)):
        return [config_to_dict(v) for v in config]
    if isinstance(config, dict):
        return {str(k): config_to_dict(v) for k, v in config.items()}
    if isinstance(config, Path):
        return str(config)
    return config
