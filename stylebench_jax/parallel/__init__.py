"""Device meshes, logical-axis sharding rules and pad/shard/unpad helpers: the one sharding home."""

from stylebench_jax.parallel.mesh import (
    MeshSpec,
    batch_sharding,
    make_mesh,
    parse_mesh_spec,
    replicated,
    resolve_mesh,
)
from stylebench_jax.parallel.padding import pad_rows, round_up
from stylebench_jax.parallel.rules import (
    DECODER_RULES,
    DEFAULT_RULES,
    fitted_shardings,
    logical_shardings,
    override_rules,
)

__all__ = [
    "DECODER_RULES",
    "DEFAULT_RULES",
    "MeshSpec",
    "batch_sharding",
    "fitted_shardings",
    "logical_shardings",
    "make_mesh",
    "override_rules",
    "pad_rows",
    "parse_mesh_spec",
    "replicated",
    "resolve_mesh",
    "round_up",
]
