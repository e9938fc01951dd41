"""The background corpus that corpus-fitted baselines (``tfidf``, ``stylometric``) are fitted on.

STEB fits its TF-IDF vectorizers on a 10B-token FineWeb sample; with no web corpus here we draw a
fixed, register-diverse sample from the shared data folder instead:

==================  =============================================================================
source              segments
==================  =============================================================================
cds                 ``cds_samples/cds_samples.tsv`` column ``text`` (11 styles: tweets, AAE, Bible,
                    Joyce, lyrics, poetry, Shakespeare, COHA decades, Switchboard)
pastel              ``pastel/pastel_v1_sentences.tsv`` column ``output_sentence`` (crowd-written)
politeness          ``stanford_politeness/{wikipedia,stack-exchange}.annotated.csv`` column ``Request``
news                ``reuters_c50/reuters_c50.tsv.gz`` column ``text``, rows with ``split == train``
fiction             ``gutenberg_classics_pyrse/gutenberg_classics_16.tsv.gz`` column ``text``
web                 ``m4_llama2_sample/m4_llama2_en_pairs.jsonl`` field ``human_text`` (human only)
==================  =============================================================================

Every text is cut into paragraphs (see ``paragraphs``); paragraphs of 3 to 150 words are
candidates, and ``per_source`` of them are drawn per source with ``np.random.default_rng([seed, k])``
(k = source number; kept in file order). The corpus ``digest`` (SHA-256 over the
settings and the drawn texts) goes into the fitted embedders' identities, so a different data root or
a changed file gives different cache keys. Evaluation datasets overlap these sources: the fit is
unsupervised (IDF weights, SVD basis, feature means), like STEB's own transductive fit.
"""

from __future__ import annotations

import csv
import dataclasses
import gzip
import hashlib
import io
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from stylebench_jax.errors import located

PER_SOURCE = 600
MIN_WORDS, MAX_WORDS = 3, 150
_PARAGRAPH_BREAK = re.compile(r"\n\s*\n")


@dataclasses.dataclass(frozen=True)
class BackgroundCorpus:
    """``texts[i]`` was drawn from source ``sources[i]``; ``digest`` identifies settings and content."""

    texts: tuple[str, ...]
    sources: tuple[str, ...]
    digest: str


def _open_text(path: Path) -> io.TextIOBase:
    if not path.is_file():
        raise located(path, "background corpus source not found; expected the shared data folder "
                      "(pass --data-root)")
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")


def _table_column(path: Path, column: str, *, delimiter: str,
                  where: tuple[str, str] | None = None) -> Iterator[str]:
    csv.field_size_limit(sys.maxsize)
    with _open_text(path) as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        try:
            header = next(reader)
            needed = [column] + ([where[0]] if where else [])
            missing = [name for name in needed if name not in header]
            if missing:
                raise located(path, f"missing column(s) {missing}; found {header}", line=1)
            index = header.index(column)
            filter_index = header.index(where[0]) if where else None
            for row in reader:
                if len(row) != len(header):
                    raise located(path, f"expected {len(header)} fields, found {len(row)}",
                                  line=reader.line_num)
                if filter_index is None or row[filter_index] == where[1]:
                    yield row[index]
        except (csv.Error, UnicodeDecodeError) as error:
            raise located(path, f"unreadable ({error})", line=reader.line_num) from None


def _jsonl_field(path: Path, field: str) -> Iterator[str]:
    with _open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise located(path, f"invalid JSON ({error.msg})", line=number,
                              column=error.colno) from None
            value = record.get(field) if isinstance(record, dict) else None
            if not isinstance(value, str):
                raise located(path, "expected a string", line=number, field=field)
            yield value


def _sources(root: Path) -> dict[str, list[Iterator[str]]]:
    return {
        "cds": [_table_column(root / "cds_samples/cds_samples.tsv", "text", delimiter="\t")],
        "pastel": [_table_column(root / "pastel/pastel_v1_sentences.tsv", "output_sentence",
                                 delimiter="\t")],
        "politeness": [_table_column(root / f"stanford_politeness/{name}.annotated.csv", "Request",
                                     delimiter=",") for name in ("wikipedia", "stack-exchange")],
        "news": [_table_column(root / "reuters_c50/reuters_c50.tsv.gz", "text", delimiter="\t",
                               where=("split", "train"))],
        "fiction": [_table_column(root / "gutenberg_classics_pyrse/gutenberg_classics_16.tsv.gz", "text",
                                  delimiter="\t")],
        "web": [_jsonl_field(root / "m4_llama2_sample/m4_llama2_en_pairs.jsonl", "human_text")],
    }


def paragraphs(text: str) -> list[str]:
    """Paragraphs of ``text`` with whitespace collapsed, 3..150 words each: blocks between blank lines,
    and blocks longer than 150 words cut at their line breaks (one-paragraph-per-line sources)."""
    out = []
    for block in _PARAGRAPH_BREAK.split(text):
        parts = [block] if len(block.split()) <= MAX_WORDS else block.split("\n")
        for part in parts:
            words = part.split()
            if MIN_WORDS <= len(words) <= MAX_WORDS:
                out.append(" ".join(words))
    return out


def load_background(data_root: str | Path, *, per_source: int = PER_SOURCE,
                    seed: int = 0) -> BackgroundCorpus:
    """Draw the background corpus from ``data_root`` (see module docstring); deterministic in
    ``(files, per_source, seed)``. Raises ``UserInputError`` naming the file if a source is missing or
    malformed."""
    root = Path(data_root)
    texts: list[str] = []
    names: list[str] = []
    for number, (name, streams) in enumerate(_sources(root).items()):
        candidates = [segment for stream in streams for text in stream for segment in paragraphs(text)]
        if not candidates:
            raise located(root, f"background source {name!r} yielded no paragraphs of "
                          f"{MIN_WORDS}-{MAX_WORDS} words")
        rng = np.random.default_rng([seed, number])
        chosen = np.sort(rng.choice(len(candidates), size=min(per_source, len(candidates)), replace=False))
        texts.extend(candidates[i] for i in chosen)
        names.extend([name] * len(chosen))
    hasher = hashlib.sha256(f"background:v1:per_source={per_source}:seed={seed}\n".encode())
    for name, text in zip(names, texts):
        hasher.update(f"{name}\t{text}\n".encode())
    return BackgroundCorpus(tuple(texts), tuple(names), hasher.hexdigest())
