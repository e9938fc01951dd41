"""Brute-force references shared by the kernel tests (full score matrix, stable argsort)."""

from __future__ import annotations

import jax
import numpy as np

from stylebench_jax.parallel.mesh import make_mesh


def meshes() -> dict:
    """1 device, all 8 fake devices on ``data``, and a 4 x 2 ``data x model`` mesh."""
    devices = jax.devices()
    assert len(devices) == 8, "tests/conftest.py should provide 8 fake CPU devices"
    return {"1dev": make_mesh("data=1", devices[:1]), "8dev": make_mesh("data=8"),
            "4x2": make_mesh("data=4,model=2")}


MESH_IDS = ("1dev", "8dev", "4x2")


def dyadic(rng: np.random.Generator, shape, levels: int = 2) -> np.ndarray:
    """Entries in {-levels..levels} / 4: every dot product is exact in float32 and bfloat16, so
    ties are real ties and any summation order gives the same bits."""
    return (rng.integers(-levels, levels + 1, shape) / 4).astype(np.float32)


def unit_rows(rng: np.random.Generator, shape) -> np.ndarray:
    x = rng.standard_normal(shape).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def brute_force(q, c, k, excluded=None):
    """(indices, scores) of the top ``min(k, N)`` by full float64 matrix + stable argsort."""
    s = q.astype(np.float64) @ c.astype(np.float64).T
    if excluded is not None:
        s[excluded] = -np.inf
    kk = min(k, c.shape[0])
    order = np.argsort(-s, axis=1, kind="stable")[:, :kk]
    scores = np.take_along_axis(s, order, axis=1)
    order[scores == -np.inf] = -1
    return order, scores


def assert_topk_equal(result, q, c, k, excluded=None, *, exact=True, tol=1e-5):
    """``exact``: indices and scores equal to brute force bit for bit (dyadic inputs).
    Otherwise every returned score equals the reference score at that rank within ``tol``, the
    returned scores are the true scores of the returned indices, and indices are distinct."""
    ref_idx, ref_scores = brute_force(q, c, k, excluded)
    assert result.indices.shape == ref_idx.shape
    if exact:
        np.testing.assert_array_equal(result.indices, ref_idx)
        np.testing.assert_array_equal(result.scores, ref_scores.astype(np.float32))
        return
    np.testing.assert_array_equal(result.indices == -1, ref_idx == -1)
    np.testing.assert_allclose(result.scores, ref_scores, atol=tol, rtol=0)
    s = q.astype(np.float64) @ c.astype(np.float64).T
    rows = np.arange(q.shape[0])[:, None]
    real = result.indices >= 0
    np.testing.assert_allclose(result.scores[real], s[rows, np.maximum(result.indices, 0)][real], atol=tol)
    for row in result.indices:
        picked = row[row >= 0]
        assert len(set(picked.tolist())) == picked.size
    assert (result.indices == ref_idx).mean() > 0.98
