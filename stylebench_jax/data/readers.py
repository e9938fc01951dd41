"""Robust readers for the shared data formats: TSV/CSV tables, JSON Lines and plain text.

Every problem with a file is raised as ``UserInputError`` whose message starts with
``path:line[:column]`` (via ``stylebench_jax.errors.located``), says what was expected and what
was found, and fits on one line:

- missing file or dataset folder (with the layout the loader expects and where to get it);
- not valid gzip, or invalid UTF-8 (line and byte column of the first bad byte);
- broken CSV quoting, a wrong number of fields (column = first missing or surplus field),
  a missing header column, a blank line inside a table;
- invalid JSON (line and character column), a JSON line that is not an object;
- a field whose value is not of the expected type (``Row.integer``, ``Row.number``, ...):
  column = 1-based field index for tables; the field name is always given.

Files ending in ``.gz`` are decompressed transparently. A UTF-8 byte-order mark is dropped.
Tables are parsed with Python's ``csv`` module in strict mode (quoted fields may contain
newlines, tabs and doubled quotes). Line numbers are physical lines of the (decompressed) file,
1-based; a record's line is the line on which it starts.
"""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import json
import math
import sys
import zlib
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from stylebench_jax.errors import UserInputError, located

_BOM = "\ufeff"


# --------------------------------------------------------------------------- files and folders


def dataset_dir(data_root: str | Path, name: str, *, expected: str, source: str) -> Path:
    """``data_root/name`` if it is a folder, else a ``UserInputError`` describing the layout.

    ``expected`` lists the files the loader reads (relative to the folder); ``source`` says where
    the user downloads them.
    """
    root = Path(data_root)
    if not root.is_dir():
        raise UserInputError(
            f"{root}: data root not found (choose it with --data-root DIR or a config's data_root, or "
            f"set STYLEBENCH_DATA); expected it to contain {name}/ with {expected}")
    folder = root / name
    if not folder.is_dir():
        raise UserInputError(
            f"{folder}: dataset folder not found; expected {name}/ containing {expected} "
            f"(source: {source})")
    return folder


def require_file(folder: Path, relative: str, *, source: str) -> Path:
    """``folder/relative`` if it is a file, else a ``UserInputError`` naming the expected file."""
    path = Path(folder) / relative
    if not path.is_file():
        raise UserInputError(f"{path}: file not found; the loader expects {relative} in {folder} "
                             f"(source: {source})")
    return path


def read_bytes(path: str | Path) -> bytes:
    """Raw bytes of ``path``, gunzipped when the name ends in ``.gz``."""
    path = Path(path)
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise UserInputError(f"{path}: file not found") from None
    except IsADirectoryError:
        raise UserInputError(f"{path}: expected a regular file, found a directory") from None
    except OSError as error:
        raise UserInputError(f"{path}: cannot read file ({error.strerror or error})") from None
    if path.name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as error:
            raise UserInputError(f"{path}: not a valid gzip file ({error})") from None
    return raw


def decode_utf8(raw: bytes, path: str | Path) -> str:
    """Decode ``raw`` as UTF-8 (BOM dropped); invalid bytes raise with their line and byte column."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        column = error.start - (raw.rfind(b"\n", 0, error.start) + 1) + 1
        bad = raw[error.start:error.end].hex(" ")
        raise located(path, f"invalid UTF-8 (byte {bad} at byte column {column}); "
                            "expected a UTF-8 encoded file", line=line, column=column) from None
    return text[1:] if text.startswith(_BOM) else text


def read_text(path: str | Path) -> str:
    """Whole file as ``str`` (gunzipped if ``.gz``, UTF-8 validated, BOM dropped)."""
    return decode_utf8(read_bytes(path), path)


def check_unicode(text: str, error) -> None:
    """Raise ``error(message)`` if ``text`` holds a lone surrogate (e.g. JSON ``"\\ud800"``), which
    no tokenizer or UTF-8 writer can handle; valid text passes untouched."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as problem:
        raise error(f"lone surrogate U+{ord(text[problem.start]):04X} at character {problem.start + 1}; "
                    "expected valid Unicode text") from None


# --------------------------------------------------------------------------- typed field access


class _Fields:
    """Typed, located access to the fields of one record (a table row or a JSON object)."""

    path: Path
    line: int

    def _raw(self, name: str) -> Any:  # pragma: no cover - overridden
        raise NotImplementedError

    def _column(self, name: str) -> int | None:  # pragma: no cover - overridden
        raise NotImplementedError

    def error(self, name: str, message: str) -> UserInputError:
        """A ``UserInputError`` located at this record's field ``name``."""
        return located(self.path, message, line=self.line, column=self._column(name), field=name)

    def text(self, name: str, *, allow_empty: bool = False) -> str:
        """The field as a string; empty (or whitespace-only) values are an error unless allowed."""
        value = self._raw(name)
        if not isinstance(value, str):
            raise self.error(name, f"expected a string, found {_show(value)}")
        if not allow_empty and not value.strip():
            raise self.error(name, "expected a non-empty text, found an empty value")
        check_unicode(value, lambda message: self.error(name, message))
        return value

    def optional_text(self, name: str) -> str | None:
        """The field as a string, or ``None`` when it is empty / JSON null."""
        value = self._raw(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            return None
        if not isinstance(value, str):
            raise self.error(name, f"expected a string or nothing, found {_show(value)}")
        return value

    def integer(self, name: str, *, minimum: int | None = None) -> int:
        """The field as an ``int`` (decimal digits in tables, JSON integers), optionally >= minimum."""
        value = self._raw(name)
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise self.error(name, f"expected an integer, found {_show(value)}")
        try:
            number = int(value.strip()) if isinstance(value, str) else value
        except ValueError:
            raise self.error(name, f"expected an integer, found {_show(value)}") from None
        if minimum is not None and number < minimum:
            raise self.error(name, f"expected an integer >= {minimum}, found {number}")
        return number

    def number(self, name: str) -> float:
        """The field as a finite ``float``."""
        value = self._raw(name)
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise self.error(name, f"expected a number, found {_show(value)}")
        try:
            number = float(value.strip()) if isinstance(value, str) else float(value)
        except ValueError:
            raise self.error(name, f"expected a number, found {_show(value)}") from None
        if not math.isfinite(number):
            raise self.error(name, f"expected a finite number, found {_show(value)}")
        return number

    def choice(self, name: str, allowed: Iterable[str]) -> str:
        """The field, which must be one of ``allowed`` (exact match)."""
        allowed = tuple(allowed)
        value = self._raw(name)
        if value not in allowed:
            raise self.error(name, f"expected one of {', '.join(allowed)}; found {_show(value)}")
        return value


def _show(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Row(_Fields):
    """One table record: ``values[i]`` belongs to ``header[i]``; ``line`` is where it starts."""

    __slots__ = ("path", "line", "header", "values", "_index")

    def __init__(self, path: Path, line: int, header: Sequence[str], values: Sequence[str],
                 index: dict[str, int]):
        self.path, self.line, self.header, self.values, self._index = path, line, header, values, index

    def __getitem__(self, name: str) -> str:
        return self.values[self._index[name]]

    def _raw(self, name: str) -> Any:
        return self.values[self._index[name]]

    def _column(self, name: str) -> int | None:
        return self._index[name] + 1

    def __repr__(self) -> str:
        return f"Row({self.path.name}:{self.line}, {dict(zip(self.header, self.values))!r:.80})"


class MissingField(UserInputError):
    """A record lacks a required field (``key``); commands may add how to pick another field."""

    def __init__(self, message: str, key: str):
        super().__init__(message)
        self.key = key


class JsonRow(_Fields):
    """One JSON Lines object; missing keys are reported like wrong values."""

    __slots__ = ("path", "line", "data")

    def __init__(self, path: Path, line: int, data: dict):
        self.path, self.line, self.data = path, line, data

    def __getitem__(self, name: str) -> Any:
        return self._raw(name)

    def _raw(self, name: str) -> Any:
        if name not in self.data:
            error = located(self.path, f"missing key {name!r}; the object has keys "
                                       f"{', '.join(map(repr, self.data)) or 'none'}", line=self.line)
            raise MissingField(str(error), name)
        return self.data[name]

    def _column(self, name: str) -> int | None:
        return None


# --------------------------------------------------------------------------- tables


@contextlib.contextmanager
def _large_fields() -> Iterator[None]:
    """Allow whole novels in one CSV field for the duration of a read, then restore the limit."""
    previous = csv.field_size_limit()
    csv.field_size_limit(sys.maxsize)
    try:
        yield
    finally:
        csv.field_size_limit(previous)


def read_table(path: str | Path, *, delimiter: str = "\t", columns: Sequence[str],
               multiline: bool = False) -> list[Row]:
    """All data rows of a delimited file with a header line.

    ``columns`` must all appear in the header (extra header columns are allowed and kept).
    Every row must have exactly as many fields as the header. ``multiline=False`` (one record per
    line: sentences, verses, requests) refuses a field that spans lines: a stray opening quote
    would otherwise swallow the following rows into one text, silently. Raises
    ``UserInputError`` located at the offending record's first line (and column) for any deviation.
    """
    path = Path(path)
    kind = "tab" if delimiter == "\t" else repr(delimiter)
    text = read_text(path)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    rows: list[Row] = []
    consumed = 0  # physical lines read by the parser before the current record
    with _large_fields():
        try:
            header = next(reader, None)
            if header is None or not any(h.strip() for h in header):
                raise located(path, f"empty file; expected a header line with columns "
                                    f"{', '.join(columns)}", line=1)
            index = _header_index(path, header, columns, kind)
            consumed = reader.line_num
            for values in reader:
                start = consumed + 1
                consumed = reader.line_num
                if not values:
                    raise located(path, f"blank line; expected {len(header)} {kind}-separated fields",
                                  line=start)
                if len(values) != len(header):
                    column = min(len(values), len(header)) + 1
                    raise located(path, f"expected {len(header)} {kind}-separated fields "
                                        f"({', '.join(header)}), found {len(values)}",
                                  line=start, column=column)
                if not multiline and consumed > start:
                    column = next((i for i, value in enumerate(values) if "\n" in value or "\r" in value), 0)
                    raise located(path, f"field {header[column]!r} spans lines {start}-{consumed}; this "
                                        "file has one record per line (an unclosed quote?)",
                                  line=start, column=column + 1)
                rows.append(Row(path, start, header, values, index))
        except csv.Error as error:
            first = consumed + 1
            stopped = "" if reader.line_num <= first else f"; the parser stopped on line {reader.line_num}"
            raise located(path, f"malformed {kind}-separated record ({error}{stopped}); check quoting",
                          line=first) from None
    return rows


def _header_index(path: Path, header: Sequence[str], columns: Sequence[str], kind: str) -> dict[str, int]:
    index: dict[str, int] = {}
    for position, name in enumerate(header):
        if name in index and name in columns:
            raise located(path, f"column {name!r} appears twice in the header", line=1, column=position + 1)
        index.setdefault(name, position)
    missing = [name for name in columns if name not in index]
    if missing:
        raise located(path, f"header is missing column(s) {', '.join(map(repr, missing))}; expected "
                            f"{kind}-separated columns {', '.join(columns)}, found {', '.join(header)}",
                      line=1)
    return index


# --------------------------------------------------------------------------- JSON Lines


def read_jsonl(path: str | Path, *, keys: Sequence[str] = (), blank_lines: str = "error") -> list[JsonRow]:
    """One ``JsonRow`` per non-empty line; every line must be a JSON object with ``keys``.

    ``blank_lines``: ``"error"`` (data files: a blank line is a mistake) or ``"skip"`` (user input
    files, where a trailing or separating blank line is harmless).
    """
    if blank_lines not in ("error", "skip"):
        raise ValueError(f"blank_lines: expected 'error' or 'skip', found {blank_lines!r}")
    path = Path(path)
    rows: list[JsonRow] = []
    lines = read_text(path).split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            if blank_lines == "skip":
                continue
            raise located(path, "blank line; expected one JSON object per line", line=number)
        try:
            data = json.loads(line)
        except json.JSONDecodeError as error:
            raise located(path, f"invalid JSON ({error.msg})", line=number, column=error.colno) from None
        if not isinstance(data, dict):
            raise located(path, f"expected a JSON object, found {type(data).__name__}", line=number)
        row = JsonRow(path, number, data)
        for key in keys:
            row[key]
        rows.append(row)
    if not rows:
        what = "no records (every line is blank)" if lines else "empty file"
        raise located(path, f"{what}; expected one JSON object per line", line=1)
    return rows


# --------------------------------------------------------------------------- plain text


def read_lines(path: str | Path, *, allow_empty: bool = False) -> list[str]:
    """Lines of a text file without their line ends (``\\n`` or ``\\r\\n``).

    A final line end does not create an extra empty line. Empty lines raise unless allowed.
    """
    path = Path(path)
    text = read_text(path)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    lines = [line[:-1] if line.endswith("\r") else line for line in lines]
    if not allow_empty:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                raise located(path, "empty line; expected one non-empty text per line", line=number,
                              column=1)
    return lines


# --------------------------------------------------------------------------- user input files

TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")


def read_texts(path: str | Path, *, text_field: str = "text") -> list[str]:
    """Texts of a user's input file, in file order: ``.txt`` (each line a text, kept even if empty)
    or ``.jsonl`` (each non-blank line an object whose ``text_field`` is a string). A missing field
    raises :class:`MissingField`."""
    path = Path(path)
    if not path.exists():
        raise UserInputError(f"{path}: file not found")
    if not path.is_file():
        found = "a directory" if path.is_dir() else "a special file (device, pipe or socket)"
        raise UserInputError(f"{path}: expected a regular file, found {found}")
    suffix = path.suffix.lower()
    if suffix not in TEXT_SUFFIXES + JSONL_SUFFIXES:
        raise UserInputError(f"{path}: unsupported input type {suffix or '(no suffix)'!r}; expected .txt "
                             "(one text per line) or .jsonl (one JSON object per line)")
    if suffix in TEXT_SUFFIXES:
        lines = read_lines(path, allow_empty=True)
        if not lines:
            raise located(path, "file is empty; expected one text per line", line=1)
        return lines
    return [row.text(text_field, allow_empty=True) for row in read_jsonl(path, blank_lines="skip")]
