"""Hard-negative mining: centroids, nearest other groups, nearest items of other groups."""

import numpy as np
import pytest
from kernel_helpers import assert_topk_equal, unit_rows

from stylebench_jax.kernels import group_centroids, item_hard_negatives, nearest_groups


def corpus(seed=0, n=400, n_groups=23, dim=16):
    rng = np.random.default_rng(seed)
    groups = rng.integers(100, 100 + n_groups, n)
    return unit_rows(rng, (n, dim)), groups


def test_centroids_are_normalised_means_of_a_seeded_subsample():
    x, groups = corpus()
    labels, centroids = group_centroids(x, groups, max_items=12, seed=3)
    np.testing.assert_array_equal(labels, np.unique(groups))
    rng = np.random.default_rng(3)
    for g, label in enumerate(labels):  # the documented draw: big groups in label order
        members = np.flatnonzero(groups == label)
        if members.size > 12:
            members = members[np.sort(rng.choice(members.size, 12, replace=False))]
        mean = x[members].astype(np.float64).mean(axis=0)
        np.testing.assert_allclose(centroids[g], mean / np.linalg.norm(mean), atol=1e-6)
    again = group_centroids(x, groups, max_items=12, seed=3)[1]
    np.testing.assert_array_equal(again, centroids)
    assert not np.array_equal(group_centroids(x, groups, max_items=12, seed=4)[1], centroids)


def test_small_groups_use_every_item():
    x, groups = corpus(1)
    labels, centroids = group_centroids(x, groups, max_items=10_000)
    for g, label in enumerate(labels):
        mean = x[groups == label].mean(axis=0)
        np.testing.assert_allclose(centroids[g], mean / np.linalg.norm(mean), atol=1e-6)


def test_nearest_groups_exclude_the_group_itself(mesh):
    x, groups = corpus(2)
    _, centroids = group_centroids(x, groups)
    result = nearest_groups(centroids, k=5, mesh=mesh, block_size=8)
    excluded = np.eye(len(centroids), dtype=bool)
    assert_topk_equal(result, centroids, centroids, 5, excluded, exact=False)
    assert not (result.indices == np.arange(len(centroids))[:, None]).any()


def test_writing7_default_is_fifty_neighbours():
    x, groups = corpus(3, n=900, n_groups=60)
    _, centroids = group_centroids(x, groups)
    assert nearest_groups(centroids).indices.shape == (60, 50)


def test_item_hard_negatives_come_from_other_groups(mesh):
    x, groups = corpus(4)
    result = item_hard_negatives(x, groups, 7, mesh=mesh, block_size=16)
    excluded = groups[:, None] == groups[None, :]
    assert_topk_equal(result, x, x, 7, excluded, exact=False)
    assert (groups[result.indices] != groups[:, None]).all()
    subset = item_hard_negatives(x, groups, 7, query_indices=[5, 0, 399], mesh=mesh, block_size=16)
    np.testing.assert_array_equal(subset.indices, result.indices[[5, 0, 399]])


def test_bad_shapes():
    x, groups = corpus(5)
    with pytest.raises(ValueError):
        group_centroids(x, groups[:-1])
    with pytest.raises(ValueError):
        group_centroids(x, groups, max_items=0)
    with pytest.raises(ValueError):
        item_hard_negatives(x, groups[:-1], 3)
