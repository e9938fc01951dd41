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
    """Group width for :func:`block_shortlist`: 1 (the whole block) unless grouping pays off.

    The widest ``g`` of ``GROUP_SIZES`` that divides ``block``, leaves at least ``4 k`` groups and
    keeps the short list (``k g`` entries) no longer than the group count (``g^2 k <= block``):
    the ``lax.top_k`` over ``block / g`` group maxima and the merge over ``k g`` entries then cost
    about the same. Measured on a 2-core AVX-512 CPU at Q = 1000 and 16384-row blocks: k = 10
    takes g = 32, k = 20 (bfloat16 mode for k = 10) g = 16; ~8 ms per block in all, against
    ~35 ms for ``lax.top_k`` over the whole block.
    """
    for g in GROUP_SIZES:
        if block % g == 0 and block // g >= 4 * k and g * g * k <= block:
            return g
    return 1


def block_shortlist(scores: jnp.ndarray, m: int, group_size: int,
                    admissible: Callable[[jnp.ndarray], jnp.ndarray] | None = None):
    """A short list of ``scores [Q, B]`` that holds each row's top ``m`` entries.

    Returns ``(values [Q, L], positions [Q, L] int32, bound [Q])``: every entry left out has a
    value ``<= bound`` (``-inf`` when nothing is left out). Positions ascend along each row, so
    ``lax.top_k``'s lower-position tie rule still means lower index first.

    ``admissible(positions)`` maps int32 positions (broadcastable to ``[Q, n]``) to a bool mask;
    inadmissible entries count as ``-inf``. ``-0.0`` counts as ``+0.0`` (:func:`canonical`).

    With ``group_size = g > 1`` the row is cut into ``B / g`` contiguous groups and the list is
    the ``m`` groups with the best (max, group index) keys, ``L = m g``: a group holding one of
    the row's top-``m`` entries has its best entry among the top ``m`` too, so it is among those
    groups, and every entry of any other group is ``<=`` its group's max ``<=`` the ``m``-th best
    group max (``bound``). Otherwise (or when there are no more than ``m`` groups) the list is
    the whole row. The list is meant to be merged straight into a running top list
    (:func:`merge_running`): ranking it on its own first costs a second ``lax.top_k`` whose
    output, once sliced and concatenated, XLA:CPU no longer lowers to its TopK routine but to
    a full comparator sort of all ``m g`` entries (~35 ms per 16384-row block at Q = 1000).
    """
    q, b = scores.shape

    def masked(values, positions):
        values = canonical(values)
        return values if admissible is None else jnp.where(admissible(positions), values, -jnp.inf)

    if group_size <= 1 or b // group_size <= m:
        positions = jnp.broadcast_to(jnp.arange(b, dtype=jnp.int32)[None, :], (q, b))
        return masked(scores, positions), positions, jnp.full((q,), -jnp.inf, scores.dtype)
    n_groups = b // group_size
    grouped = scores.reshape(q, n_groups, group_size)
    positions = jnp.arange(b, dtype=jnp.int32).reshape(1, n_groups, group_size)
    if admissible is None:
        best = grouped.max(axis=-1)
    else:
        mask = admissible(positions.reshape(1, b)).reshape(-1, n_groups, group_size)
        best = jnp.where(mask, grouped, -jnp.inf).max(axis=-1)
    best = canonical(best)
    _, groups = lax.top_k(best, m)
    groups = jnp.sort(groups, axis=-1)
    bound = jnp.take_along_axis(best, groups, axis=1).min(axis=1)
    short = jnp.take_along_axis(grouped, groups[:, :, None], axis=1).reshape(q, m * group_size)
    short_pos = (groups[:, :, None] * group_size
                 + jnp.arange(group_size, dtype=jnp.int32)).reshape(q, m * group_size)
    return masked(short, short_pos), short_pos, bound


def merge_running(running: tuple[jnp.ndarray, ...], block: tuple[jnp.ndarray, ...], k: int):
    """Merge two top lists whose first array is the ranking key; keep the best ``k``.

    ``running`` and ``block`` are tuples ``(key [Q, a], *payload [Q, a])``; every candidate in
    ``running`` has a lower index than every candidate in ``block`` (blocks are visited in index
    order) and ``block`` is in ascending index order, so concatenating running first keeps ties
    resolved by lower index.
    """
    joined = [jnp.concatenate([r, b], axis=1) for r, b in zip(running, block)]
    values, pos = lax.top_k(joined[0], k)
    return (values, *(jnp.take_along_axis(arr, pos, axis=1) for arr in joined[1:]))
