"""Read the texts of an input file: ``.txt`` (one text per line) or ``.jsonl`` (one object per line).

Every problem is reported as a ``UserInputError`` naming the file and line (and field), e.g.
invalid UTF-8, a JSONL line that is not a JSON object, or a missing/non-string field.
"""

from __future__ import annotations

import json
from pathlib import Path

from stylebench_jax.errors import UserInputError, located

TEXT_SUFFIXES = (".txt",)
JSONL_SUFFIXES = (".jsonl", ".ndjson")


def _lines(path: Path) -> list[str]:
    if not path.exists():
        raise UserInputError(f"{path}: file not found")
    if not path.is_file():
        raise UserInputError(f"{path}: not a regular file")
    raw = path.read_bytes()
    lines = raw.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    decoded = []
    for number, line in enumerate(lines, start=1):
        try:
            decoded.append(line.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError as error:
            raise located(path, f"invalid UTF-8 (byte 0x{line[error.start]:02x} at byte "
                                f"{error.start + 1} of the line)", line=number,
                          column=error.start + 1) from None
    if not decoded:
        raise UserInputError(f"{path}: file is empty (expected one text per line)")
    if decoded[0].startswith("\ufeff"):
        decoded[0] = decoded[0][1:]
    return decoded


def read_texts(path: str | Path, *, text_field: str = "text") -> list[str]:
    """Texts of ``path`` in file order. ``.txt``: each line is a text (kept even if empty).
    ``.jsonl``: each non-blank line is an object whose ``text_field`` is a string."""
    path = Path(path)
    if not path.exists():
        raise UserInputError(f"{path}: file not found")
    suffix = path.suffix.lower()
    if suffix not in TEXT_SUFFIXES + JSONL_SUFFIXES:
        raise UserInputError(f"{path}: unsupported input type {suffix or '(none)'!r}; "
                             "expected .txt (one text per line) or .jsonl (one JSON object per line)")
    lines = _lines(path)
    if suffix in TEXT_SUFFIXES:
        return lines
    texts = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            raise located(path, f"not valid JSON ({error.msg})", line=number, column=error.colno) from None
        if not isinstance(record, dict):
            raise located(path, f"expected a JSON object, found {type(record).__name__}", line=number)
        if text_field not in record:
            raise located(path, "missing (use --text-field to choose another field)",
                          line=number, field=text_field)
        if not isinstance(record[text_field], str):
            raise located(path, f"expected a string, found {type(record[text_field]).__name__}",
                          line=number, field=text_field)
        texts.append(record[text_field])
    if not texts:
        raise UserInputError(f"{path}: no records (every line is blank)")
    return texts
