"""Mesh creation from a ``data=4,model=2`` spec, and the batch / replicated shardings on it.

This package is the only place that builds meshes and shardings. A command builds the run's
``Mesh`` once (``make_mesh(spec)``) and passes it to the encoder, the kernels and the tasks; a
library call given no mesh uses ``resolve_mesh(None)``: every device on the ``data`` axis.
Parameter shardings come from the logical-axis rules tables of ``parallel.rules``.

Errors are ``ValueError`` naming the mesh sizes (commands turn them into ``--mesh`` messages).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

MESH_AXES = ("data", "model")

@dataclasses.dataclass(frozen=True)
class MeshSpec:
    """Sizes of the ``data`` and ``model`` mesh axes; ``data=-1`` means all remaining devices."""

    data: int = -1
    model: int = 1

    def resolve(self, n_devices: int) -> tuple[int, int]:
        if self.model < 1 or n_devices % self.model:
            raise ValueError(f"model={self.model} must be >= 1 and divide the {n_devices} devices")
        if self.data == 0 or self.data < -1:
            raise ValueError(f"data={self.data} must be >= 1 (or -1: every remaining device)")
        data = n_devices // self.model if self.data == -1 else self.data
        if data * self.model > n_devices:
            raise ValueError(f"data={data} x model={self.model} needs {data * self.model} devices, "
                             f"{n_devices} available")
        return data, self.model

    def __str__(self) -> str:
        return f"data={self.data},model={self.model}"


def parse_mesh_spec(text: str | None) -> MeshSpec:
    """Parse ``"data=4,model=2"`` (either part optional; ``data=-1`` = all devices)."""
    if text is None or not text.strip():
        return MeshSpec()
    sizes = {}
    for part in text.split(","):
        name, sep, value = part.strip().partition("=")
        name = name.strip()
        if not sep or name not in MESH_AXES:
            raise ValueError(f"expected entries like 'data=4,model=2' with axes {', '.join(MESH_AXES)}, "
                             f"got {part!r}")
        if name in sizes:
            raise ValueError(f"axis {name!r} given twice")
        try:
            sizes[name] = int(value)
        except ValueError:
            raise ValueError(f"size of {name!r} must be an integer, got {value!r}") from None
    return MeshSpec(**sizes)


def make_mesh(spec: MeshSpec | str | None = None, devices: Sequence[jax.Device] | None = None) -> Mesh:
    """Build a 2-D ``(data, model)`` mesh with Auto axis types over the first data*model devices."""
    if not isinstance(spec, MeshSpec):
        spec = parse_mesh_spec(spec)
    devices = list(jax.devices() if devices is None else devices)
    data, model = spec.resolve(len(devices))
    grid = np.asarray(devices[: data * model], dtype=object).reshape(data, model)
    return Mesh(grid, MESH_AXES, axis_types=(AxisType.Auto,) * len(MESH_AXES))


def resolve_mesh(mesh: Mesh | None) -> Mesh:
    """``mesh``, or for ``None`` the library default: every device on ``data`` (``make_mesh()``)."""
    return make_mesh() if mesh is None else mesh


def batch_sharding(mesh: Mesh, ndim: int = 2) -> NamedSharding:
    """Shard axis 0 over ``data``; replicate the rest (over ``model`` too)."""
    return NamedSharding(mesh, PartitionSpec("data", *([None] * (ndim - 1))))


def replicated(mesh: Mesh) -> NamedSharding:
    """Every device holds the whole array."""
    return NamedSharding(mesh, PartitionSpec())

