"""Embedding with several processes on one global mesh (``jax.distributed``): each process reads and
tokenises only its share of the texts and feeds its rows of every global batch.

Plan (every process computes the same plan without seeing the others' texts):

1. texts are sorted by character length and dealt round-robin to the ``data`` slots
   (``parallel.distributed.data_slot``: processes holding the same block of the data axis feed the
   same rows), so every slot gets a similar mix of short and long texts;
2. each slot tokenises its texts (long ones chunked as in ``FlaxEncoderEmbedder``) and cuts its
   sequences, sorted by length, into local batches of ``ceil(batch_size / slots)`` rows;
3. the slots exchange their local plans (bucket length and rows of each batch: a few integers),
   and every global step uses the longest bucket and the tallest local batch of that step, so all
   processes run the same compiled shape the same number of times (a slot with fewer batches feeds
   padding rows);
4. each step's global batch is assembled from the slots' rows
   (``jax.make_array_from_process_local_data``); each process reads back its own rows of the output;
5. chunk vectors are mean-pooled per text locally and the texts' vectors are gathered across
   processes, so every process returns the full ``[N, D]`` matrix in input order.

Vectors equal those of one process up to float32 rounding (a text may be padded to another bucket
length in another batch; ~1e-7 here).
"""

from __future__ import annotations

import numpy as np

from stylebench_jax.encoders.batching import (
    batch_rows,
    bucket_length,
    collect_pipelined,
    length_batches,
    pad_batch,
)
from stylebench_jax.parallel.distributed import (
    allgather_objects,
    allgather_rows,
    data_slot,
    is_primary,
    local_rows,
    put_batch,
)
from stylebench_jax.progress import progress_bar


def share_of_texts(lengths: np.ndarray, slot: int, slots: int) -> np.ndarray:
    """Indices (ascending) of the texts of ``slot``: texts sorted by ``lengths`` (stable), dealt
    round-robin over ``slots``."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    return np.sort(order[slot::slots])


def embed_across_processes(embedder, texts: list[str]) -> np.ndarray:
    """``[len(texts), dim]`` float32 from a ``FlaxEncoderEmbedder`` on a multi-process mesh (module
    docstring). Every process must call it with the same ``texts``."""
    mesh = embedder.mesh
    slot = data_slot(mesh)
    mine = share_of_texts(np.fromiter((len(t) for t in texts), np.int64, len(texts)), slot.index, slot.count)
    sequences, owners = embedder.text_sequences([texts[i] for i in mine])
    lengths = np.fromiter((len(s) for s in sequences), np.int64, len(sequences))
    local_batch = max(1, -(-embedder.batch_size // slot.count))
    # partial batch last: processes' batches are aligned by step, and a process with one batch more
    # than another then runs it after the shared steps (lengths stay aligned step by step)
    batches = list(length_batches(lengths, local_batch, partial_first=False))
    max_length = embedder.settings.max_length
    plan = [(bucket_length(int(lengths[rows].max()), max_length), len(rows)) for rows in batches]
    plans = allgather_objects(plan)
    steps = max(len(p) for p in plans)
    vectors = np.zeros((len(sequences), embedder.dim), np.float32)
    bar = progress_bar(total=len(sequences), desc=f"embed {embedder.name}", unit="seq",
                       enabled=embedder.progress if is_primary() else False)

    def jobs():
        for step in range(steps):
            shapes = [p[step] for p in plans if step < len(p)]
            length = max(s[0] for s in shapes)
            height = max(batch_rows(s[1], local_batch, slot.devices) for s in shapes)
            rows = batches[step] if step < len(batches) else np.zeros(0, np.int64)
            ids, mask = pad_batch([sequences[i] for i in rows], height, length, embedder.tokenizer.pad_id)
            embedder.forward_batches += 1
            yield rows, embedder._forward(embedder.params, put_batch(ids, mesh, slot),
                                          put_batch(mask, mesh, slot))

    try:
        collect_pipelined(jobs(), vectors, local_rows, bar.update)
    finally:
        bar.close()
    pooled = embedder.pool(vectors, owners, len(mine))
    out = np.zeros((len(texts), embedder.dim), np.float32)
    shares = allgather_rows(mine.astype(np.int64))
    for indices, rows in zip(shares, allgather_rows(pooled)):
        out[indices] = rows
    return out
