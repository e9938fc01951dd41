"""Pack sentences into chunks that fit a model's token budget (chunk-and-pool, STEB App. G).

Ours (:func:`pack_token_chunks`): a long document is split at sentence boundaries; consecutive
sentences are packed greedily into chunks of at most ``budget`` content tokens; a single sentence
longer than the budget is cut into budget-sized windows. Chunks are token-id lists (the
concatenation of their sentences' ids), so no re-tokenisation is needed and the budget is exact.

STEB's (:func:`steb_chunks`, steb/models/chunking.py ``chunk_text`` at 40a6b8e): the same greedy
packing by per-sentence token counts, but a chunk is the *text* of its sentences joined by one space
(tokenised again by the caller and truncated at the model's length, so an over-long sentence is one
chunk that loses its tail).
"""

from __future__ import annotations

from collections.abc import Sequence


def pack_token_chunks(sentence_ids: Sequence[Sequence[int]], budget: int) -> list[list[int]]:
    """Greedy packing of per-sentence token ids into chunks of <= ``budget`` ids each.

    Sentence order is kept; every id appears in exactly one chunk; no chunk is empty.
    """
    if budget < 1:
        raise ValueError(f"budget must be >= 1, got {budget}")
    chunks: list[list[int]] = []
    current: list[int] = []
    for ids in sentence_ids:
        if not ids:
            continue
        if len(ids) > budget:
            if current:
                chunks.append(current)
                current = []
            chunks.extend(list(ids[start:start + budget]) for start in range(0, len(ids), budget))
            continue
        if len(current) + len(ids) > budget:
            chunks.append(current)
            current = []
        current.extend(ids)
    if current:
        chunks.append(current)
    return chunks


def steb_chunks(text: str, sentences: Sequence[str], tokenizer, budget: int) -> list[str]:
    """STEB's chunk strings of ``text``: ``[text]`` if its content tokens fit ``budget``, else the
    ``sentences`` (of the parser; ``[text]`` if there are none) packed greedily: a sentence that would
    take the current chunk over ``budget`` content tokens starts a new chunk; chunks are the sentences
    joined by ``" "``. ``tokenizer.content_ids(texts)`` gives token ids without special tokens."""
    if not text or not text.strip():
        return [text]
    if len(tokenizer.content_ids([text])[0]) <= budget:
        return [text]
    if not sentences:
        return [text]
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for sentence, ids in zip(sentences, tokenizer.content_ids(list(sentences))):
        if current and count + len(ids) > budget:
            chunks.append(" ".join(current))
            current, count = [], 0
        current.append(sentence)
        count += len(ids)
    if current:
        chunks.append(" ".join(current))
    return chunks
