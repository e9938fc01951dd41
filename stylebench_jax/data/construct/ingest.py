"""Lenient, streaming ingestion of JSONL / TSV / CSV (optionally ``.gz``) and directory sources.

Unlike ``data/readers.py`` (strict: the first problem is an error, right for the fixed shared
datasets), a benchmark build reads collections it does not control, so a bad record is *counted*
with its file and line and skipped, and the build goes on: invalid UTF-8 (per physical line),
invalid JSON, a line that is not a JSON object, a wrong number of table fields, a missing or empty
text, a missing author, a value of the wrong type. Files are read line by line (gzip streamed), so a
source never has to fit in memory. Only a source that cannot be opened at all (missing path, no
matching file) is an error, raised before any work.

Each good row becomes a :class:`RawDocument` (mapped fields, labels, provenance); each bad one a
:class:`~stylebench_jax.data.construct.records.BadRecord`.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import json
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from stylebench_jax.config import InvalidField
from stylebench_jax.data.construct.config import SourceConfig
from stylebench_jax.data.construct.records import BadRecord
from stylebench_jax.data.readers import _large_fields

_MISSING = object()
_BOM = "\ufeff"
_SUFFIXES = {"jsonl": (".jsonl", ".jsonl.gz", ".json", ".json.gz"), "tsv": (".tsv", ".tsv.gz"),
             "csv": (".csv", ".csv.gz")}


@dataclasses.dataclass(frozen=True)
class RawDocument:
    """One ingested source record, before normalisation. ``fields`` holds the mapped record fields
    (text, author, and whichever of id, language, genre, ... the source gives), as strings."""

    source: str
    file: str
    line: int
    fields: dict[str, str]
    labels: dict[str, Any]


def source_files(source: SourceConfig, root: Path | None, where: str) -> list[tuple[Path, str]]:
    """``(path, path relative to the source)`` of every file the source reads, sorted; errors name
    the config key ``where`` (e.g. ``sources[2].path``)."""
    path = source.path if source.path.is_absolute() or root is None else root / source.path
    if not path.exists():
        raise InvalidField(where, f"{path}: no such file or directory")
    if path.is_file():
        return [(path, path.name)]
    if source.format == "directory":
        pattern = source.glob
    else:
        pattern = "**/*"
    files = sorted(p for p in path.glob(pattern) if p.is_file()
                   and (source.format == "directory" or p.name.endswith(_SUFFIXES[source.format])))
    if not files:
        wanted = source.glob if source.format == "directory" else " / ".join(_SUFFIXES[source.format])
        raise InvalidField(where, f"{path}: no {wanted} files in this directory")
    return [(p, p.relative_to(path).as_posix()) for p in files]


def check_sources(sources, root: Path | None) -> None:
    """Before any work: the data root is a folder, every source has its files, and each table
    file's header has the columns the source maps (``fields``, ``exclude``): a column missing from
    a header would otherwise turn every row into a bad record."""
    if root is not None and not Path(root).is_dir():
        raise InvalidField("data_root", f"{root}: no such directory")
    for index, source in enumerate(sources):
        files = source_files(source, root, f"sources[{index}].path")
        if source.format not in ("tsv", "csv"):
            continue
        for path, rel in files:
            header = _table_header(path, "\t" if source.format == "tsv" else ",")
            if header is None:
                continue  # an empty or unreadable file is counted as a bad record by the build
            for key, column in [*(("fields." + name, column) for name, column in source.fields.items()),
                                *(("exclude", column) for column in source.exclude)]:
                if column not in header:
                    raise InvalidField(f"sources[{index}].{key}",
                                       f"column {column!r} is not in the header of {rel} "
                                       f"({', '.join(map(repr, header))})")


def _table_header(path: Path, delimiter: str) -> list[str] | None:
    try:
        with _open(path) as handle, _large_fields():
            return next(csv.reader(_decoded_lines(handle, {}), delimiter=delimiter), None)
    except (OSError, EOFError, zlib.error, csv.Error):
        return None


def _open(path: Path):
    return gzip.open(path, "rb") if path.name.endswith(".gz") else open(path, "rb")


def _decoded_lines(handle, flags: dict[int, str]) -> Iterator[str]:
    """Physical lines as text; a line with invalid UTF-8 is flagged (line -> reason) and decoded
    with replacement characters so the table parser stays in step."""
    for number, raw in enumerate(handle, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            flags[number] = f"invalid UTF-8 (byte {raw[error.start:error.end].hex(' ')} at byte column " \
                            f"{error.start + 1})"
            text = raw.decode("utf-8", errors="replace")
        if number == 1 and text.startswith(_BOM):
            text = text[1:]
        yield text


def _lookup(data: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(data, dict) or part not in data:
            return _MISSING
        data = data[part]
    return data


def _jsonl_rows(source: SourceConfig, path: Path, rel: str) -> Iterator[tuple[int, Any] | BadRecord]:
    flags: dict[int, str] = {}
    with _open(path) as handle:
        for number, line in enumerate(_decoded_lines(handle, flags), start=1):
            if number in flags:
                yield BadRecord(source.name, rel, number, "invalid_utf8", flags.pop(number))
                continue
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                message = error.msg.removesuffix(" at")  # "Invalid control character at"
                yield BadRecord(source.name, rel, number, "invalid_json",
                                f"invalid JSON ({message} at column {error.colno})")
                continue
            if not isinstance(data, dict):
                yield BadRecord(source.name, rel, number, "not_an_object",
                                f"expected a JSON object, found {type(data).__name__}")
                continue
            yield number, data


def _table_rows(source: SourceConfig, path: Path, rel: str) -> Iterator[tuple[int, Any] | BadRecord]:
    flags: dict[int, str] = {}
    delimiter = "\t" if source.format == "tsv" else ","
    with _open(path) as handle, _large_fields():
        reader = csv.reader(_decoded_lines(handle, flags), delimiter=delimiter, strict=True)
        try:
            header = next(reader, None)
            if header is None:
                yield BadRecord(source.name, rel, 1, "empty_file", "empty file; expected a header line")
                return
            consumed = reader.line_num
            for values in reader:
                start, consumed = consumed + 1, reader.line_num
                bad = [flags.pop(n) for n in range(start, consumed + 1) if n in flags]
                if bad:
                    yield BadRecord(source.name, rel, start, "invalid_utf8", bad[0])
                elif not values:
                    continue
                elif len(values) != len(header):
                    yield BadRecord(source.name, rel, start, "field_count",
                                    f"expected {len(header)} fields, found {len(values)}")
                else:
                    yield start, dict(zip(header, values))
        except csv.Error as error:
            yield BadRecord(source.name, rel, reader.line_num, "malformed_table",
                            f"malformed table ({error}); the rest of the file was skipped")


def _directory_rows(source: SourceConfig, path: Path, rel: str) -> Iterator[tuple[int, Any] | BadRecord]:
    with _open(path) as handle:
        raw = handle.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        line = raw.count(b"\n", 0, error.start) + 1
        yield BadRecord(source.name, rel, line, "invalid_utf8",
                        f"invalid UTF-8 (byte {raw[error.start:error.end].hex(' ')})")
        return
    parts = Path(rel).parts
    yield 0, {"text": text[1:] if text.startswith(_BOM) else text, "file": rel,
              "parent": parts[-2] if len(parts) > 1 else "", "stem": Path(rel).name.split(".")[0],
              "name": Path(rel).name}


def _as_text(value: Any) -> str | None:
    """A field value as a string: strings as they are, integers in decimal; anything else None."""
    if isinstance(value, str):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def map_row(source: SourceConfig, rel: str, line: int, row: dict) -> RawDocument | BadRecord | None:
    """Apply the source's field mapping to one parsed row; None when the row is excluded."""
    for field, values in source.exclude.items():
        value = _lookup(row, field)
        if value is not _MISSING and _as_text(value) in values:
            return None
    fields: dict[str, str] = {}
    for name, path in source.fields.items():
        value = _lookup(row, path)
        if value is _MISSING or value is None:
            if name in ("text", "author"):
                return BadRecord(source.name, rel, line, f"missing_{name}",
                                 f"missing {name} (source field {path!r})")
            continue
        text = value if name == "text" and isinstance(value, str) else _as_text(value)
        if text is None or (name == "text" and not isinstance(value, str)):
            return BadRecord(source.name, rel, line, "wrong_type",
                             f"{name} (source field {path!r}): expected a string, "
                             f"found {type(value).__name__}")
        if name in ("text", "author") and not text.strip():
            return BadRecord(source.name, rel, line, f"empty_{name}", f"empty {name} (source field {path!r})")
        fields[name] = text
    for name, value in source.constants.items():
        fields[name] = value
    labels = {}
    for key in source.labels:
        value = _lookup(row, key)
        if value is not _MISSING:
            labels[key] = value
    return RawDocument(source.name, rel, line, fields, labels)


def ingest(source: SourceConfig, root: Path | None, where: str,
           counts: dict[str, int]) -> Iterator[RawDocument | BadRecord]:
    """Every record of ``source`` in file order; ``counts`` gains ``rows`` and ``excluded``."""
    reader = {"jsonl": _jsonl_rows, "tsv": _table_rows, "csv": _table_rows,
              "directory": _directory_rows}[source.format]
    produced = 0
    for path, rel in source_files(source, root, where):
        rows = reader(source, path, rel)
        try:
            for item in rows:
                counts["rows"] = counts.get("rows", 0) + 1
                if isinstance(item, BadRecord):
                    yield item
                    continue
                mapped = map_row(source, rel, *item)
                if mapped is None:
                    counts["excluded"] = counts.get("excluded", 0) + 1
                    continue
                yield mapped
                if isinstance(mapped, RawDocument):
                    produced += 1
                    if source.max_records is not None and produced >= source.max_records:
                        return
        except (OSError, EOFError, zlib.error) as error:
            yield BadRecord(source.name, rel, 0, "unreadable_file",
                            f"unreadable file ({error}); the rest of it was skipped")
