"""A.4 structuring: required fields per task type, and contiguous chunks of over-long documents.

A document longer than ``max_tokens[task_type]`` is split at sentence boundaries
(``text.sentences.regex_split``, or ``script_split`` for a text written mostly in CJK, Hangul,
Indic, Arabic... letters, whose sentences end in marks such as ``。`` with no space after; both
deterministic, unlike the spaCy sentencizer whose presence depends on the install) into contiguous
chunks: consecutive sentences are packed greedily up to a token budget, each chunk's budget drawn
from ``chunk_tokens`` by a generator seeded with the build seed and the document key (so chunk
lengths vary when several budgets are listed); a sentence longer than its budget is cut at spaces,
or at characters where it has too few spaces (Chinese and Japanese write none). Each chunk is the
exact character span ``[start, end)`` of the document text, inherits its metadata and gets the key
``<document key>@<start>``.
"""

from __future__ import annotations

import re

import numpy as np

from stylebench_jax.data.construct.config import StructureConfig
from stylebench_jax.data.construct.records import Origin, Record, document_id
from stylebench_jax.data.sampling import unit_rng
from stylebench_jax.text.sentences import regex_split, script_split, uses_script_rules

_SPACE = re.compile(r"\S+")


def missing_field(record: Record, required: tuple[str, ...]) -> str | None:
    """The first required field that is absent or empty (``labels.<key>`` names a label)."""
    for name in required:
        if name.startswith("labels."):
            value = record.labels.get(name[len("labels."):])
        else:
            value = getattr(record, name if name != "author" else "author_id", None)
        if value is None or (isinstance(value, str) and not value.strip()):
            return name
    return None


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (module docstring), in order."""
    spans, position = [], 0
    for sentence in (script_split if uses_script_rules(text) else regex_split)(text):
        start = text.find(sentence, position)
        if start < 0:  # cannot happen: both splitters return stripped substrings in order
            raise AssertionError("sentence not found in its text")
        spans.append((start, start + len(sentence)))
        position = start + len(sentence)
    return spans


def _cut_long(text: str, span: tuple[int, int], n_tokens: int, budget: int) -> list[tuple[int, int]]:
    """Split one over-long sentence into ``ceil(n_tokens / budget)`` pieces, even in words (at spaces)
    or, where it has fewer words than pieces (a text without spaces), even in characters."""
    needed = -(-n_tokens // budget)
    words = [(m.start() + span[0], m.end() + span[0]) for m in _SPACE.finditer(text[span[0]:span[1]])]
    if len(words) < needed:
        words = [(i, i + 1) for i in range(span[0], span[1]) if not text[i].isspace()]
    pieces = min(len(words), needed)
    if pieces <= 1:
        return [span]
    bounds = np.linspace(0, len(words), pieces + 1).round().astype(int)
    return [(words[a][0], words[b - 1][1]) for a, b in zip(bounds[:-1], bounds[1:]) if b > a]


def chunk_spans(text: str, sentence_tokens, spans, budgets) -> list[tuple[int, int]]:
    """Pack sentences (``spans`` with token counts ``sentence_tokens``) into chunk spans; ``budgets``
    yields the budget of each new chunk."""
    pieces: list[tuple[tuple[int, int], int]] = []
    budget = next(budgets)
    for span, n in zip(spans, sentence_tokens):
        if n > budget:
            parts = _cut_long(text, span, n, budget)
            pieces += [(p, -(-n // len(parts))) for p in parts]
        else:
            pieces.append((span, n))
    chunks, start, end, used = [], None, None, 0
    for (a, b), n in pieces:
        if start is not None and used + n > budget:
            chunks.append((start, end))
            start, used, budget = None, 0, next(budgets)
        if start is None:
            start = a
        end, used = b, used + n
    if start is not None:
        chunks.append((start, end))
    return chunks


def _budgets(config: StructureConfig, seed: int, key: str):
    rng = unit_rng(seed, key)
    while True:
        yield int(config.chunk_tokens[int(rng.integers(len(config.chunk_tokens)))])


def split_document(record: Record, config: StructureConfig, seed: int, salt: str,
                   count_tokens) -> list[Record]:
    """Chunks of ``record`` (itself when it fits ``max_tokens``); ``count_tokens(texts) -> [int]``.
    Chunk token lengths are recounted on the chunk texts."""
    limit = config.max_tokens.get(record.task_type)
    if limit is None or record.token_length <= limit:
        return [record]
    spans = sentence_spans(record.text)
    counts = count_tokens([record.text[a:b] for a, b in spans])
    chunks = chunk_spans(record.text, counts, spans, _budgets(config, seed, record.key))
    if config.max_chunks_per_document is not None and len(chunks) > config.max_chunks_per_document:
        keep = np.linspace(0, len(chunks) - 1, config.max_chunks_per_document).round().astype(int)
        chunks = [chunks[i] for i in sorted(set(keep.tolist()))]
    texts = [record.text[a:b] for a, b in chunks]
    lengths = count_tokens(texts)
    base = record.origin.start
    out = []
    for (a, b), text, n in zip(chunks, texts, lengths):
        key = f"{record.key}@{a}"
        out.append(record.with_text(text, n, key=key, id=document_id(salt, key),
                                    origin=Origin(record.origin.file, record.origin.line, base + a,
                                                  base + b)))
    return out
