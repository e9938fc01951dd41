"""Memory per device of a neural embedder on a mesh, computed before any weight is read.

Parameters: ``jax.eval_shape`` of the module's ``init`` gives every parameter's shape and dtype
(nothing is allocated); the rules table gives its sharding; the bytes a device holds are those of
``sharding.shard_shape(shape)``. Exact for what ``encoders.loading.load_params`` places: the plan
builds the very module and rules table the embedder would (``neural.embedder_class``).

Activations (forward only, no gradients), per device for ``rows = ceil(batch / data)`` sequences of
``L`` tokens, with heads, KV heads and MLP units divided by the ``model`` axis where they divide:

    rows * ( L * itemsize * (3 H + (N_l + 2 K_l) D + N_l D + 3 I_l)   residual, norm, q/k/v, context, MLP
           + 2 * 4 * N_l * L^2                                         float32 attention logits, probabilities
           + L^2 )                                                     boolean mask

This is one layer's working set (XLA frees a layer's buffers before the next), an estimate that errs
high: XLA fuses several of these buffers away (on CPU, XLA's compiled temporaries measured 0.83-0.92x of
it for hidden 64-512 and 64-512 tokens; ``tests/encoders/test_memory_plan.py`` checks the bound).
It fits when parameters + activations <= 90% of the
device's memory (``bytes_limit`` of accelerators; host RAM divided among the CPU devices on CPU; or
``device_memory`` given by the user), leaving room for XLA's workspace and the input batches.

Bad values raise ``InvalidOption`` naming the option (``device_memory``, ``dtype``).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from pathlib import Path

import flax.linen as nn
import jax
import numpy as np
from jax.sharding import Mesh

from stylebench_jax.errors import InvalidOption

HEADROOM = 0.9
_UNITS = {"": 1, "b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}


def parse_bytes(text: str) -> int:
    """``"16GiB"``, ``"80GB"``, ``"1.5TiB"``, ``"123456"`` -> bytes."""
    match = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([KMGT]?i?B?)\s*", str(text), flags=re.IGNORECASE)
    if not match or match.group(2).lower() not in _UNITS:
        raise InvalidOption("device_memory", f"expected a size like 16GiB or 80GB, got {text!r}")
    size = int(float(match.group(1)) * _UNITS[match.group(2).lower()])
    if size < 1:
        raise InvalidOption("device_memory", f"expected a positive size like 16GiB or 80GB, got {text!r}")
    return size


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """Bytes per device; ``capacity_bytes`` is ``None`` when unknown (then everything "fits")."""

    model: str
    family: str  # "encoder" (BERT family) or "decoder"
    mesh: dict
    batch_size: int
    max_length: int
    dtype: str
    n_params: int
    param_bytes_total: int
    param_bytes_per_device: int
    activation_bytes_per_device: int
    capacity_bytes: int | None
    capacity_source: str
    replicated_notes: tuple = ()

    @property
    def bytes_per_device(self) -> int:
        return self.param_bytes_per_device + self.activation_bytes_per_device

    @property
    def fits(self) -> bool:
        return self.capacity_bytes is None or self.bytes_per_device <= HEADROOM * self.capacity_bytes

    def describe(self) -> str:
        mesh = ",".join(f"{k}={v}" for k, v in self.mesh.items())
        capacity = ("unknown" if self.capacity_bytes is None else
                    f"{format_bytes(self.capacity_bytes)} ({self.capacity_source}; plan uses {HEADROOM:.0%})")
        lines = [f"memory plan for {self.model} on mesh {mesh}, batch {self.batch_size} x {self.max_length} "
                 f"tokens, {self.dtype}:",
                 f"  parameters   {self.n_params / 1e6:,.1f} M = {format_bytes(self.param_bytes_total)} "
                 f"in all, {format_bytes(self.param_bytes_per_device)} per device",
                 f"  activations  {format_bytes(self.activation_bytes_per_device)} per device (one layer's "
                 "working set, estimate)",
                 f"  total        {format_bytes(self.bytes_per_device)} per device; device memory {capacity}"]
        if self.replicated_notes:
            lines.append(f"  replicated   {len(self.replicated_notes)} parameter dims do not divide the "
                         f"mesh, e.g. {self.replicated_notes[0]}")
        return "\n".join(lines)

    def refusal(self) -> str:
        """Why it does not fit, in numbers (the command adds the flags that would make it fit)."""
        mesh = ",".join(f"{k}={v}" for k, v in self.mesh.items())
        return (f"{self.model} needs {format_bytes(self.bytes_per_device)} per device on mesh {mesh} "
                f"(parameters {format_bytes(self.param_bytes_per_device)} + activations "
                f"{format_bytes(self.activation_bytes_per_device)}), more than {HEADROOM:.0%} of the "
                f"{format_bytes(self.capacity_bytes)} available ({self.capacity_source})")


def activation_bytes(*, rows: int, length: int, hidden: int, heads: int, kv_heads: int, head_dim: int,
                     intermediate: int, itemsize: int, model: int) -> int:
    """The per-device activation estimate of the module docstring."""
    def local(n):
        return n // model if n % model == 0 else n

    heads_l, kv_l, inter_l = local(heads), local(kv_heads), local(intermediate)
    per_token = 3 * hidden + (heads_l + 2 * kv_l) * head_dim + heads_l * head_dim + 3 * inter_l
    return rows * (length * per_token * itemsize + 2 * 4 * heads_l * length * length + length * length)


def device_capacity(mesh: Mesh, override: int | None = None) -> tuple[int | None, str]:
    """``(bytes per device, where the number comes from)``."""
    if override is not None:
        return override, "as given"
    device = mesh.devices.flat[0]
    if device.platform != "cpu":
        try:
            limit = (device.memory_stats() or {}).get("bytes_limit")
        except Exception:  # some backends do not implement memory_stats
            limit = None
        return (int(limit), f"{device.platform} bytes_limit") if limit else (None, "unknown")
    try:
        host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None, "unknown"
    cpus = sum(1 for d in jax.local_devices() if d.platform == "cpu")
    return host // max(cpus, 1), f"host RAM / {cpus} CPU devices"


def parameter_bytes(boxed_abstract, shardings) -> tuple[int, int, int]:
    """``(n_params, bytes in all, bytes on the most loaded device)`` of abstract params + shardings."""
    shapes = jax.tree.leaves(nn.unbox(boxed_abstract))
    sharding_leaves = jax.tree.leaves(shardings, is_leaf=lambda x: isinstance(x, jax.sharding.Sharding))
    n_params = total = per_device = 0
    for shape, sharding in zip(shapes, sharding_leaves, strict=True):
        itemsize = np.dtype(shape.dtype).itemsize
        size = math.prod(shape.shape)
        n_params += size
        total += size * itemsize
        per_device += math.prod(sharding.shard_shape(shape.shape)) * itemsize
    return n_params, total, per_device


def plan_memory(model_dir: str | Path, mesh: Mesh, *, batch_size: int = 64, max_length: int | None = None,
                dtype: str = "float32", device_memory: int | None = None,
                name: str | None = None) -> MemoryPlan:
    """The ``MemoryPlan`` of the model in ``model_dir`` (config.json only; no weights are read);
    ``name`` (default: the folder's) in the plan and its messages."""
    from stylebench_jax.encoders.loading import (
        DTYPES,
        abstract_params,
        model_family,
        sentence_transformers_defaults,
    )
    from stylebench_jax.encoders.neural import EncodeSettings, embedder_class
    from stylebench_jax.parallel import fitted_shardings

    model_dir = Path(model_dir)
    name = name or model_dir.name
    family = model_family(model_dir)
    cls = embedder_class(model_dir)
    cls.check_options(dtype=dtype, batch_size=batch_size, max_length=max_length)
    config = cls.config_class.from_json(model_dir / "config.json")
    # the embedder's own choice (sentence-transformers' max_seq_length first: 256 for MiniLM) and range
    max_length = cls.chosen_max_length(config, sentence_transformers_defaults(model_dir, cls.pooling_modes),
                                       max_length)
    if max_length > config.max_tokens:
        raise InvalidOption("max_length", f"expected at most {config.max_tokens} tokens for {name}, "
                                          f"got {max_length}")
    # Pooling and normalisation do not change the parameters (not counted: a learned attention pooling,
    # H^2 + 2H + 1, and an exported projection head, H P + 3P).
    module = cls.build_module(config, EncodeSettings(max_length=max_length, pooling=cls.default_pooling,
                                                     dtype=dtype))
    abstract = abstract_params(module)
    shardings, notes = fitted_shardings(abstract, mesh, cls.default_rules)
    n_params, total, per_device = parameter_bytes(abstract, shardings)
    data, model = int(mesh.shape["data"]), int(mesh.shape["model"])
    activations = activation_bytes(
        rows=-(-batch_size // data), length=max_length, hidden=config.hidden_size, heads=config.num_heads,
        kv_heads=getattr(config, "num_kv_heads", config.num_heads), head_dim=config.head_dim,
        intermediate=config.intermediate_size, itemsize=np.dtype(DTYPES[dtype]).itemsize, model=model)
    capacity, source = device_capacity(mesh, device_memory)
    return MemoryPlan(model=name, family=family, mesh={"data": data, "model": model},
                      batch_size=batch_size, max_length=max_length, dtype=dtype, n_params=n_params,
                      param_bytes_total=total, param_bytes_per_device=per_device,
                      activation_bytes_per_device=activations, capacity_bytes=capacity,
                      capacity_source=source, replicated_notes=tuple(notes))
