"""Texts -> token sequences, and length-bucketed batches of them for the jitted forward pass.

``token_sequences`` turns texts into the model's inputs: the optional prompt in front, the model's
special tokens around, long texts chunked at sentences or truncated. Sequences are then sorted by
length and cut into batches of ``batch_size`` rows; each batch is padded to a *bucket* length, so
XLA compiles a handful of programs (one per bucket and batch height) instead of one per distinct
length. ``plan_batches`` picks the buckets: the smallest that fits each batch when programs cost
nothing, coarser ones when padding a few batches costs less than compiling another program.
Padding rows (to make a batch divide the mesh's ``data`` axis) get one visible token so softmax and
mean pooling stay finite; callers drop them.
"""

from __future__ import annotations

import collections
from collections.abc import Callable, Iterable, Iterator, Sequence

import numpy as np

from stylebench_jax.parallel import round_up
from stylebench_jax.text.chunking import pack_token_chunks, steb_chunks
from stylebench_jax.text.sentences import parser_sentences, split_sentences

LONG_TEXT_MODES = ("chunk", "truncate", "steb", "steb-truncate")
STEB_MODES = ("steb", "steb-truncate")  # STEB's settings (``encoders.neural`` module docstring)

# Padded lengths a program may have: steps of 8 up to 64 tokens, 16 up to 128, then 32. Short texts
# dominate style data and on CPU cost grows with padded tokens, so the steps are fine at the short end;
# ``plan_batches`` uses only those whose padding saves more than another program costs (programs are
# persisted by JAX's compilation cache, see ``runtime.enable_compilation_cache``).
BUCKET_LENGTHS = (*range(8, 65, 8), *range(80, 129, 16), *range(160, 513, 32))


def token_sequences(texts: Sequence[str], tokenizer, *, max_length: int, long_text: str = "chunk",
                    prompt: str = "") -> tuple[list[list[int]], np.ndarray]:
    """Token sequences of ``texts`` (special tokens and prompt included, each at most ``max_length``
    ids) and ``owners`` ``[S]`` int64, the index of each sequence's text.

    ``tokenizer``: ``content_ids(texts)`` and ``wrap(ids)`` (``encoders.tokenizer``). A text whose
    ids fit the budget ``max_length - n_special`` is one sequence; with a ``prompt`` the text is
    tokenised together with it (``prompt + text``, as sentence-transformers does). A longer text is
    cut at the budget (``long_text="truncate"``: the prompt, in front, is kept) or split at sentence
    boundaries and packed into chunks of at most ``budget - len(prompt ids)`` ids, each chunk with the
    prompt's own ids in front (``"chunk"``, STEB App. G: the caller mean-pools the chunks' vectors).
    ``"steb-truncate"`` truncates like ``"truncate"``; ``"steb"`` chunks as STEB's
    ``steb/models/chunking.py`` (``text.chunking.steb_chunks`` on ``text.sentences.parser_sentences``:
    chunk strings tokenised again and cut at the budget, so an over-long sentence loses its tail).
    """
    if long_text not in LONG_TEXT_MODES:
        raise ValueError(f"long_text: expected one of {', '.join(LONG_TEXT_MODES)}, got {long_text!r}")
    budget = max_length - tokenizer.n_special
    prompt_ids = tokenizer.content_ids([prompt])[0] if prompt else []
    content = tokenizer.content_ids([prompt + text for text in texts] if prompt else list(texts))
    sequences: list[list[int]] = []
    owners: list[int] = []
    long_ids = []
    for index, ids in enumerate(content):
        if len(ids) <= budget:
            sequences.append(tokenizer.wrap(ids))
            owners.append(index)
        elif long_text in ("truncate", "steb-truncate"):
            sequences.append(tokenizer.wrap(ids[:budget]))
            owners.append(index)
        else:
            long_ids.append(index)
    for index in long_ids:
        if long_text == "steb":
            room = budget - len(prompt_ids)
            chunks = [ids[:room] for ids in tokenizer.content_ids(steb_chunks(
                texts[index], parser_sentences(texts[index]), tokenizer, room))]
        else:
            chunks = pack_token_chunks(tokenizer.content_ids(split_sentences(texts[index])),
                                       budget - len(prompt_ids))
        for chunk in chunks:
            sequences.append(tokenizer.wrap([*prompt_ids, *chunk]))
            owners.append(index)
    return sequences, np.asarray(owners, dtype=np.int64)


def bucket_length(length: int, max_length: int) -> int:
    """Smallest bucket >= ``length`` (``max_length`` itself is always a bucket)."""
    for bucket in BUCKET_LENGTHS:
        if length <= bucket < max_length:
            return bucket
    return max_length


def batch_rows(n: int, batch_size: int, multiple: int) -> int:
    """Rows of a batch holding ``n`` sequences: ``batch_size``, or the next power of two >= ``n`` when
    smaller (few distinct shapes), rounded up to a multiple of ``multiple`` (the data-axis size)."""
    rows = min(batch_size, 1 << max(0, (n - 1).bit_length()))
    return round_up(max(rows, n), multiple)


def length_batches(lengths: np.ndarray, batch_size: int, *,
                   partial_first: bool = True) -> Iterator[np.ndarray]:
    """Indices ``[<= batch_size]`` of each batch, sequences sorted by length (stable), shortest first.

    ``partial_first``: the one partial batch (``len % batch_size`` sequences) holds the *shortest*
    sequences: it is padded up to ``batch_rows`` rows, and padding rows cost least at the shortest
    bucket (with the partial batch last, 36 Reuters articles would run as 64 x 256 tokens). ``False``:
    the partial batch comes last (``encoders.multiprocess`` aligns processes' batches step by step, and
    a process holding one batch more must then hold it at the end)."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    first = (len(order) % batch_size or batch_size) if partial_first else batch_size
    for start in range(0, len(order), batch_size):
        yield order[max(0, start - (batch_size - first)):start + first]


def plan_lengths(maxima: Sequence[int], heights: Sequence[int], candidates: Sequence[int], *,
                 token_flops: Callable[[int], float], program_flops: float,
                 compiled: frozenset = frozenset()) -> tuple[list[int], float]:
    """Padded length of each batch minimising forward work plus the cost of new compiled programs.

    ``maxima[b]`` (non-decreasing: batches in ``length_batches`` order) is batch ``b``'s longest
    sequence and ``heights[b]`` its rows; ``candidates`` the lengths a program may have (each batch
    gets the smallest chosen one >= its maximum; the largest candidate must fit every batch).
    Cost in FLOPs: ``sum_b heights[b] * L_b * token_flops(L_b)`` for the padded tokens, plus
    ``program_flops`` for every ``(height, length)`` program not in ``compiled`` (tracing, lowering
    and compiling one costs as much as that much forward work). Exact: a dynamic programme over the
    chosen lengths (batches sharing a length are contiguous), ``O(len(candidates)^2)`` segments.
    Returns ``(lengths per batch, total cost)``.
    """
    maxima = np.asarray(maxima, dtype=np.int64)
    if len(maxima) == 0:
        return [], 0.0
    if (np.diff(maxima) < 0).any():
        raise ValueError("maxima: expected batches sorted by length (non-decreasing maxima)")
    lengths = sorted(c for c in set(candidates) if c >= maxima[0])
    if not lengths or lengths[-1] < maxima[-1]:
        raise ValueError(f"candidates: none fits the longest batch ({int(maxima[-1])} tokens)")
    rows = np.concatenate([[0], np.cumsum(np.asarray(heights, dtype=np.float64))])
    covered = [0, *np.searchsorted(maxima, lengths, side="right").tolist()]  # batches with max <= L
    lengths = [0, *lengths]
    best = [0.0] + [np.inf] * (len(lengths) - 1)
    previous = [0] * len(lengths)
    for j in range(1, len(lengths)):
        length = lengths[j]
        have = {h for h, n in compiled if n == length}
        for i in range(j):
            if best[i] == np.inf or covered[i] == covered[j]:
                continue  # unreachable, or an empty segment (never worth a program)
            new = {heights[b] for b in range(covered[i], covered[j])} - have
            cost = (best[i] + (rows[covered[j]] - rows[covered[i]]) * length * token_flops(length)
                    + program_flops * len(new))
            if cost < best[j]:
                best[j], previous[j] = cost, i
    end = min((j for j in range(1, len(lengths)) if covered[j] == len(maxima)), key=best.__getitem__)
    plan = [0] * len(maxima)
    j = end
    while j:
        i = previous[j]
        plan[covered[i]:covered[j]] = [lengths[j]] * (covered[j] - covered[i])
        j = i
    return plan, float(best[end])


def plan_batches(lengths: np.ndarray, batch_size: int, multiple: int, max_length: int, *,
                 token_flops: Callable[[int], float], program_flops: float,
                 compiled: frozenset = frozenset()) -> list[tuple[np.ndarray, int, int]]:
    """``(indices, rows, length)`` of each forward batch of sequences with ``lengths``: batches from
    ``length_batches`` (partial one first), padded lengths from ``plan_lengths`` over the buckets
    (``BUCKET_LENGTHS`` below ``max_length``, and ``max_length``). The partial batch runs at its own
    height (``batch_rows``) or, when that is cheaper, at the full height sharing the next batches'
    program. ``compiled``: ``(rows, length)`` programs that cost nothing (already compiled)."""
    batches = list(length_batches(lengths, batch_size))
    if not batches:
        return []
    maxima = [int(lengths[rows].max()) for rows in batches]
    if max(maxima) > max_length:
        raise ValueError(f"lengths: a sequence of {max(maxima)} tokens exceeds max_length {max_length}")
    candidates = [*(b for b in BUCKET_LENGTHS if b < max_length), max_length]
    full = round_up(batch_size, multiple)
    own = [batch_rows(len(rows), batch_size, multiple) for rows in batches]
    options = [own] if own[0] == full else [own, [full] * len(batches)]
    plans = [plan_lengths(maxima, heights, candidates, token_flops=token_flops,
                          program_flops=program_flops, compiled=compiled) + (heights,)
             for heights in options]
    padded, _, heights = min(plans, key=lambda plan: plan[1])
    return list(zip(batches, heights, padded))


def pad_batch(sequences: Sequence[Sequence[int]], rows: int, length: int,
              pad_id: int) -> tuple[np.ndarray, np.ndarray]:
    """``(input_ids, attention_mask)`` ``[rows, length]`` int32 holding ``sequences`` (each at most
    ``length`` ids) right-padded with ``pad_id``; rows past ``len(sequences)`` are padding rows whose
    mask shows their first token only."""
    ids = np.full((rows, length), pad_id, dtype=np.int32)
    mask = np.zeros((rows, length), dtype=np.int32)
    for r, sequence in enumerate(sequences):
        ids[r, :len(sequence)] = sequence
        mask[r, :len(sequence)] = 1
    mask[len(sequences):, 0] = 1
    return ids, mask


# Forward batches dispatched but not yet collected. One keeps the device fed (the next batch waits
# queued while the host collects the last); more did not measure faster (MiniLM, 800 real texts,
# 2 cores: 0/1/2 within noise, 35-42 texts/s) and each one adds a batch to the Ctrl-C delay.
MAX_IN_FLIGHT = 1


def collect_pipelined(jobs: Iterable[tuple[np.ndarray, object]], out: np.ndarray,
                      fetch: Callable[[object], np.ndarray], on_rows: Callable[[int], None]) -> np.ndarray:
    """Write each job's rows into ``out`` in dispatch order: ``jobs`` yields ``(rows, result)`` as
    it dispatches (``result`` an asynchronous device value), ``fetch(result)`` gives its ``[>= len(rows),
    dim]`` host rows (padding rows past ``len(rows)`` dropped), ``on_rows(n)`` reports progress.

    At most ``MAX_IN_FLIGHT`` results wait uncollected: dispatch runs ahead of compute and keeps the
    devices busy, while Ctrl-C still stops within about ``MAX_IN_FLIGHT + 1`` batch times (the
    interrupt is seen when the running batch returns, and the process cannot exit before the batches
    already dispatched have run: a 64 x 256-token MiniLM batch takes ~4 s on 2 AVX2 cores)."""
    pending: collections.deque = collections.deque()

    def collect():
        rows, result = pending.popleft()
        out[rows] = fetch(result)[:len(rows)]
        on_rows(len(rows))

    for job in jobs:
        pending.append(job)
        if len(pending) > MAX_IN_FLIGHT:
            collect()
    while pending:
        collect()
    return out
