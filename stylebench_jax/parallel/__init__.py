"""Device meshes, logical-axis sharding rules and pad/shard/unpad helpers."""

from stylebench_jax.parallel.mesh import (
    DEFAULT_RULES,
    MeshSpec,
    batch_sharding,
    make_mesh,
    parse_mesh_spec,
    replicated,
)
from stylebench_jax.parallel.padding import pad_rows, pad_to_multiple

__all__ = [
    "DEFAULT_RULES",
    "MeshSpec",
    "batch_sharding",
    "make_mesh",
    "pad_rows",
    "pad_to_multiple",
    "parse_mesh_spec",
    "replicated",
]
