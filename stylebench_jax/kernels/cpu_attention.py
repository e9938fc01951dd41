"""Fused softmax attention on XLA:CPU: a C++ kernel (``cpu_attention.cc``) called through ``jax.ffi``.

XLA:CPU runs attention's batched ``[L, d] x [d, L]`` products at 21-34 GFLOP/s and writes the
scores to memory between its fusions; the kernel computes one (sequence, head) at a time with FMA
register blocks (6 query rows x 16 columns: two ymm per row with AVX2, one zmm with AVX-512, chosen
at run time, ``WIDTH``; the same bits either way), six rows of scores live at once (in L1), on XLA's
own intra-op threads. On the 2-core AVX-512 EPYC (Zen 4, 2026-11-27) the AVX-512 products took the
attention's forward + backward at MiniLM's training shapes (32 x 12 x 128 x 32) from 36 to 21 ms
(best of 8) and a MiniLM train step (16 pairs x 128 tokens) from 1.87 to 1.71 s best, 1.90 to 1.84 s
median; the inference forward did not move (64 x 256: 2.17 vs 2.18 s). The softmax and dropout
passes stay 8-lane AVX2 code in both (wider sums would change the bits). Measured on the 2-core
AVX2 EPYC, 2026-11-27: the kernel's calls take ~0.5 s of a MiniLM forward over 64 x 256 tokens (~75
GFLOP/s on both cores); ``benchmarks/bench_encoder.py --xla-attention-row`` on 2,000 real texts,
three runs: 50.8 / 52.8 / 53.0 sentences/s with the kernel against 44.0 / 54.2 / 48.2 with XLA's
attention in the same interleaved rounds.

The formula of ``encoders.bert.softmax_attention`` (query scaled first, exp of scores minus the row
maximum, normalised after the ``p v`` product), summed in another order and with a polynomial exp
(relative error ~1e-7; exactly 0 for masked keys): as close to a float64 result as XLA's float32
one (tests/kernels/test_cpu_attention.py); MiniLM's vectors within 3e-7 of XLA's. A NaN or
infinite score makes its row's output NaN, as in XLA.

The kernel is built, loaded and registered by :mod:`stylebench_jax.kernels.native` (one library for
every C++ kernel; ``unavailable()`` and ``missing_prerequisite()`` here are that module's).

Training: ``fused_attention`` is differentiable (``jax.custom_vjp``). Its forward also keeps each query
row's score maximum and log sum of exp; the backward kernel recomputes the probabilities from them one
(sequence, head) at a time and returns the gradients of q, k, v and the bias (``d_bias`` summed over
heads and query rows, so a learned or data-dependent bias gets its true gradient; BERT's padding bias
has none to give). Gradients as close to float64 ones as XLA's float32 gradients of
``softmax_attention`` (within 2.5x of XLA's error plus 2e-6 of the largest gradient,
tests/kernels/test_cpu_attention.py). Measured 2026-11-27 on the 2-core EPYC, MiniLM shapes
(32 sequences x 12 heads x 128 tokens x 32, the attention alone in a jitted call, best / median
of 10): forward + backward 49-57 / 56-66 ms against XLA's 144-154 / 160-167 ms.

Attention-probability dropout (BERT's ``attention_probs_dropout_prob``, ``dropout.AttentionDropout``):
the training forward and the backward take a seed and a threshold and drop the probabilities whose
counter-based draw (the .cc header's formula; ``encoders.dropout.attention_keep`` computes the same
in jnp for XLA's attention) falls below the threshold; no mask is stored, the backward regenerates it.
Unit indices are the arrays' own (``b * heads + h``), so dropout runs with ``mesh`` ``None``, ``LOCAL``
or one device (the train step's per-device batches draw from per-device keys).

``unavailable()`` says why the kernel cannot run here (not x86-64, no AVX2/FMA, no compiler, a failed
build), ``None`` when it can; the embedder (``encoders.neural``) then uses XLA's attention and says so.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, PartitionSpec

from stylebench_jax.encoders.dropout import AttentionDropout
from stylebench_jax.kernels.native import (  # noqa: F401  (the kernel's availability is the library's)
    ATTENTION_BACKWARD_TARGET,
    ATTENTION_FORWARD_TARGET,
    ATTENTION_TARGET,
    missing_prerequisite,
    unavailable,
    varying_like,
)

LOCAL = "local"  # ``fused_attention``'s mesh argument inside a shard_map: the arrays are one device's
HEAD_DIM_MULTIPLE = 16  # the kernel's register blocks are 16 floats wide
# The products' vector width (the .cc's width attribute), read when a call is traced: 0 = the CPU's
# widest (AVX-512 where it has AVX-512F), 1 = AVX2, 2 = AVX-512 (tests compare them: the same bits).
WIDTH = 0


def supports(head_dim: int, dtype) -> bool:
    """Whether the kernel handles this head size and compute dtype (float32; ``head_dim % 16 == 0``)."""
    return jnp.dtype(dtype) == jnp.float32 and head_dim % HEAD_DIM_MULTIPLE == 0


def _scale(query) -> np.float32:
    return np.float32(query.shape[-1] ** -0.5)  # the float32 that softmax_attention multiplies by


def _no_seed():
    return jnp.zeros((2,), jnp.uint32)


def _units(query, sequence_major: bool) -> tuple[int, int, int]:
    """``(B, heads, L)`` of ``[B, heads, L, d]`` (or, ``sequence_major``, ``[B, L, heads, d]``) operands."""
    batch, second, third = query.shape[:3]
    return (batch, third, second) if sequence_major else (batch, second, third)


def _layout(query, sequence_major: bool) -> dict:
    """The attributes every handler takes: the query's scale, the layout and the vector width."""
    return {"scale": _scale(query), "sequence_major": np.int64(sequence_major), "width": np.int64(WIDTH)}


def _forward_call(query, key, value, bias, seed, threshold: int, sequence_major: bool):
    # stats [B, H, 2, L]: each query row's score maximum and log sum of exp past it (the .cc header)
    batch, heads, length = _units(query, sequence_major)
    return varying_like(jax.ffi.ffi_call(
        ATTENTION_FORWARD_TARGET, (jax.ShapeDtypeStruct(query.shape, jnp.float32),
                                   jax.ShapeDtypeStruct((batch, heads, 2, length), jnp.float32)))(
        query, key, value, bias, seed, threshold=np.int64(threshold), **_layout(query, sequence_major)),
        query)


@functools.partial(jax.custom_vjp, nondiff_argnums=(5, 6))
def _attention(query, key, value, bias, seed, threshold: int, sequence_major: bool):
    """The kernel's attention; ``seed`` u32[2] and ``threshold`` (a Python int, 0 = none): the
    attention dropout of ``encoders.dropout.AttentionDropout``; ``sequence_major``: the layout."""
    if threshold:  # the training forward (the inference handler has no dropout); stats unused
        return _forward_call(query, key, value, bias, seed, threshold, sequence_major)[0]
    out = jax.ShapeDtypeStruct(query.shape, jnp.float32)
    call = jax.ffi.ffi_call(ATTENTION_TARGET, (out,))
    return varying_like(call(query, key, value, bias, **_layout(query, sequence_major)), query)[0]


def _attention_forward(query, key, value, bias, seed, threshold: int, sequence_major: bool):
    out, stats = _forward_call(query, key, value, bias, seed, threshold, sequence_major)
    return out, (query, key, value, bias, seed, out, stats)


def _attention_backward(threshold: int, sequence_major: bool, residuals, d_out):
    query, key, value, bias, seed, out, stats = residuals
    grads = jax.ShapeDtypeStruct(query.shape, jnp.float32)
    d_bias_shape = jax.ShapeDtypeStruct(_units(query, sequence_major), jnp.float32)
    d_query, d_key, d_value, d_bias = varying_like(jax.ffi.ffi_call(
        ATTENTION_BACKWARD_TARGET, (grads, grads, grads, d_bias_shape))(
        query, key, value, bias, seed, out, stats, d_out, threshold=np.int64(threshold),
        **_layout(query, sequence_major)), query)
    d_seed = np.zeros(seed.shape, jax.dtypes.float0)  # an integer input: no gradient
    return d_query, d_key, d_value, d_bias.sum(axis=1).reshape(bias.shape), d_seed  # d_bias [B, H, L] summed


_attention.defvjp(_attention_forward, _attention_backward)


def fused_attention(query, key, value, bias, mesh: Mesh | str | None = None,
                    dropout: AttentionDropout | None = None, sequence_major: bool = False):
    """``softmax(q k^T / sqrt(d) + bias) v`` per head by the C++ kernel: ``[B, heads, L, d]`` float32
    -> ``[B, heads, L, d]``, or with ``sequence_major`` ``[B, L, heads, d]`` -> ``[B, L, heads, d]``
    (the projections' own layout: the kernel reads and writes it in place, no transposes around
    the call; the same arithmetic per unit, so the same bits as the head-major call transposed);
    ``bias`` ``[B, 1, 1, L]`` additive (0 or -1e9). Differentiable (the
    module docstring). ``dropout``: attention-probability dropout (training), the draws of
    ``encoders.dropout.attention_keep`` for units ``b * heads + h`` of the arrays as given (so only
    with ``mesh`` ``None``, ``LOCAL`` or one device).

    With a ``mesh`` of more than one device the call runs per shard in ``jax.shard_map`` (batch over
    ``data``, heads over ``model``, each where it divides; the embedder's batches always do, a
    module's one-row initialisation does not): XLA's partitioner cannot split a custom call and would
    gather whole arrays onto every device. ``mesh`` ``None``, ``LOCAL`` (inside a ``shard_map``
    that already splits the batch: the train step) or one device: the kernel on the arrays as given.
    Call ``unavailable()`` first: this assumes the kernel registered."""
    if isinstance(mesh, str) and mesh != LOCAL:
        raise ValueError(f"mesh: expected a Mesh, None or {LOCAL!r}, found {mesh!r}")
    if mesh is None or isinstance(mesh, str) or mesh.devices.size == 1:
        if dropout is None:
            return _attention(query, key, value, bias, _no_seed(), 0, sequence_major)
        return _attention(query, key, value, bias, dropout.seed, dropout.threshold, sequence_major)
    if dropout is not None:  # per-shard unit indices would repeat every shard's draws
        raise ValueError("fused_attention: attention dropout runs on one device's arrays (mesh None, "
                         f"{LOCAL!r} or one device), found a mesh of {mesh.devices.size} devices")
    batch, n_heads, _ = _units(query, sequence_major)
    batch_axis = "data" if batch % mesh.shape["data"] == 0 else None
    head_axis = "model" if n_heads % mesh.shape["model"] == 0 else None
    heads = PartitionSpec(*((batch_axis, None, head_axis) if sequence_major else (batch_axis, head_axis)))
    rows = PartitionSpec(batch_axis)
    return jax.shard_map(lambda q, k, v, b: _attention(q, k, v, b, _no_seed(), 0, sequence_major), mesh=mesh,
                         in_specs=(heads, heads, heads, rows), out_specs=heads, check_vma=False)(
        query, key, value, bias)
