"""Device-side pieces of blocked top-k: per-block selection and the running merge.

Everything here runs inside ``jax.jit`` / ``jax.shard_map``. Ordering is total and deterministic:
higher score first, and among equal scores the lower candidate index first. ``lax.top_k`` already
breaks ties by lower position; every function here keeps "lower position = lower candidate index"
true for what it hands to ``lax.top_k``, so the tie rule carries over to candidate indices.
``-0.0`` is mapped to ``+0.0`` first, because ``lax.top_k`` orders ``-0.0`` below ``+0.0`` while
NumPy (and IEEE comparison) treats them as equal.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
from jax import lax

GROUP_SIZES = (32, 16, 8)


def canonical(scores: jnp.ndarray) -> jnp.ndarray:
    """Replace ``-0.0`` by ``+0.0`` so equal scores are bitwise equal (needed for tie order)."""
    return jnp.where(scores == 0, jnp.zeros_like(scores), scores)


def pick_group_size(block: int, k: int) -> int:
    """Group width for :func:`block_topk`: 1 (plain ``lax.top_k``) unless grouping pays off.

    Grouping needs ``block % g == 0`` and at least ``4 k`` groups; the widest such ``g`` of
    ``GROUP_SIZES`` is used (measured on a 2-core AVX-512 CPU, ``[1000, 16384]`` scores: k = 10
    takes 8.7 ms with g = 32 against 58 ms for ``lax.top_k``; k = 43 takes 26 ms against 71 ms).
    """
    for g in GROUP_SIZES:
        if block % g == 0 and block // g >= 4 * k:
            return g
    return 1


def block_topk(scores: jnp.ndarray, k: int, group_size: int,
               admissible: Callable[[jnp.ndarray], jnp.ndarray] | None = None):
    """Exact top-``k`` of each row of ``scores [Q, B]``: values ``[Q, k]`` and positions ``[Q, k]`` int32.

    ``admissible(positions)`` maps int32 positions (broadcastable to ``[Q, m]``) to a bool mask;
    inadmissible entries count as ``-inf``. It is evaluated lazily, inside the reductions, so the
    masked ``[Q, B]`` tile is never written out. ``-0.0`` counts as ``+0.0`` (:func:`canonical`).

    With ``group_size = g > 1`` the row is cut into ``B / g`` contiguous groups. A group holding one
    of the row's top-``k`` entries has its best entry among the top ``k`` too, so it is among the
    ``k`` groups with the best (max, group index) keys; only those ``k * g`` entries are ranked.
    Selected groups are put back in ascending order, so position order in the short list is
    candidate order and ``lax.top_k``'s lower-position tie rule still means lower index first.
    """
    q, b = scores.shape
    k = min(k, b)

    def masked(values, positions):
        values = canonical(values)
        return values if admissible is None else jnp.where(admissible(positions), values, -jnp.inf)

    if group_size <= 1:
        return lax.top_k(masked(scores, jnp.arange(b, dtype=jnp.int32)[None, :]), k)
    n_groups = b // group_size
    grouped = scores.reshape(q, n_groups, group_size)
    positions = jnp.arange(b, dtype=jnp.int32).reshape(1, n_groups, group_size)
    if admissible is None:
        best = grouped.max(axis=-1)
    else:
        mask = admissible(positions.reshape(1, b)).reshape(-1, n_groups, group_size)
        best = jnp.where(mask, grouped, -jnp.inf).max(axis=-1)
    _, groups = lax.top_k(canonical(best), k)
    groups = jnp.sort(groups, axis=-1)
    short = jnp.take_along_axis(grouped, groups[:, :, None], axis=1).reshape(q, k * group_size)
    short_pos = (groups[:, :, None] * group_size
                 + jnp.arange(group_size, dtype=jnp.int32)).reshape(q, k * group_size)
    values, pos = lax.top_k(masked(short, short_pos), k)
    return values, jnp.take_along_axis(short_pos, pos, axis=1)


def merge_running(running: tuple[jnp.ndarray, ...], block: tuple[jnp.ndarray, ...], k: int):
    """Merge two top lists whose first array is the ranking key; keep the best ``k``.

    ``running`` and ``block`` are tuples ``(key [Q, a], *payload [Q, a])``; every candidate in
    ``running`` has a lower index than every candidate in ``block`` (blocks are visited in index
    order), so concatenating running first keeps ties resolved by lower index.
    """
    joined = [jnp.concatenate([r, b], axis=1) for r, b in zip(running, block)]
    values, pos = lax.top_k(joined[0], k)
    return (values, *(jnp.take_along_axis(arr, pos, axis=1) for arr in joined[1:]))
