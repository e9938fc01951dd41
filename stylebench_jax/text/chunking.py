"""Pack sentences into chunks that fit a model's token budget (STEB's chunk-and-pool, App. G).

A long document is split at sentence boundaries; consecutive sentences are packed greedily into
chunks of at most ``budget`` content tokens; a single sentence longer than the budget is cut into
budget-sized windows. Chunks are token-id lists (the concatenation of their sentences' ids), so no
re-tokenisation is needed and the budget is exact.
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
