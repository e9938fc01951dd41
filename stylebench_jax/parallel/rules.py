"""Logical-axis rules tables and the named shardings they give a tree of parameters.

Parameters carry logical axis names (``vocab``, ``embed``, ``heads``, ``kv_heads``, ``kv``, ``mlp``);
activations use ``batch`` and ``length``. A rules table maps each onto a mesh axis, ``data`` (batch
parallelism) or ``model`` (tensor parallelism over attention heads and the MLP), or ``None``
(replicated). Tables are data, so a config can swap one without touching model code.

A rule says which mesh axis a dimension *may* split over. ``fitted_shardings`` splits a dimension only
when its size divides evenly by that axis (``jax.device_put`` refuses uneven shards); otherwise that
dimension is replicated and the fact reported, e.g. 2 grouped KV heads on ``model=4`` (Megatron-LM
also replicates KV heads when the tensor-parallel degree exceeds them).
"""

from __future__ import annotations

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

Rules = tuple[tuple[str, str | None], ...]

# Heads and MLP split over `model` (Megatron-style: column-parallel in, row-parallel out); the batch
# splits over `data`; everything else is replicated.
DEFAULT_RULES: Rules = (
    ("batch", "data"),
    ("length", None),
    ("vocab", None),
    ("embed", None),
    ("heads", "model"),
    ("kv_heads", "model"),  # grouped key/value heads of decoders (replicated where they do not divide)
    ("kv", None),
    ("mlp", "model"),
)


def override_rules(rules: Rules, **changes: str | None) -> Rules:
    """``rules`` with the mesh axis of the named logical axes replaced (new names appended)."""
    out = [(name, changes.pop(name) if name in changes else axis) for name, axis in rules]
    return (*out, *changes.items())


# Decoders shard their vocabulary over `model` too: a 128k x 4096 table is ~7% of an 8B model, which
# would otherwise sit whole on every device (BERT-family tables, 30k x 384, stay replicated).
DECODER_RULES: Rules = override_rules(DEFAULT_RULES, vocab="model")


def fitted_shardings(abstract_tree, mesh: Mesh, rules: Rules = DEFAULT_RULES) -> tuple[object, list[str]]:
    """``(tree of NamedSharding, notes)`` for a tree of logically partitioned values.

    ``abstract_tree``: ``flax.linen`` boxed ``LogicallyPartitioned`` leaves, e.g. from
    ``jax.eval_shape(module.init, ...)``. ``notes`` lists ``"path: dim d (size s) replicated, not
    divisible by axis=n"`` for every dimension the rules wanted split but that does not divide.
    """
    import flax.linen as nn  # here, not at module level: kernels import parallel/ and never need flax

    logical = nn.get_partition_spec(abstract_tree)
    shapes = nn.unbox(abstract_tree)
    notes: list[str] = []

    def fit(path, spec, value):
        shape = tuple(value.shape)
        mesh_spec = nn.logical_to_mesh_axes(tuple(spec), rules) if spec is not None else PartitionSpec()
        axes = []
        for dim, axis in enumerate(tuple(mesh_spec) + (None,) * (len(shape) - len(mesh_spec))):
            if axis is not None and shape[dim] % mesh.shape[axis]:
                notes.append(f"{jax.tree_util.keystr(path)}: dim {dim} (size {shape[dim]}) replicated, "
                             f"not divisible by {axis}={mesh.shape[axis]}")
                axis = None
            axes.append(axis)
        return NamedSharding(mesh, PartitionSpec(*axes))

    shardings = jax.tree_util.tree_map_with_path(
        fit, logical, shapes, is_leaf=lambda x: isinstance(x, PartitionSpec))
    return shardings, notes


def logical_shardings(abstract_tree, mesh: Mesh, rules: Rules = DEFAULT_RULES):
    """The tree of ``NamedSharding`` of ``fitted_shardings`` (without the notes)."""
    return fitted_shardings(abstract_tree, mesh, rules)[0]
