"""Length batches: every sequence once, sorted by length, full batches except the shortest one."""

import numpy as np
import pytest

from stylebench_jax.encoders.batching import MAX_IN_FLIGHT, batch_rows, collect_pipelined, length_batches


@pytest.mark.parametrize(("n", "batch_size"), [(100, 64), (128, 64), (5, 64), (130, 64), (7, 3), (1, 1)])
def test_length_batches_put_the_partial_batch_first(n, batch_size):
    lengths = np.random.default_rng(n).integers(1, 300, size=n)
    batches = list(length_batches(lengths, batch_size))
    joined = np.concatenate(batches)
    assert sorted(joined.tolist()) == list(range(n))
    assert (np.diff(lengths[joined]) >= 0).all()
    assert [len(b) for b in batches[1:]] == [batch_size] * (len(batches) - 1)
    assert len(batches[0]) == (n % batch_size or batch_size)


def test_partial_batch_pads_the_shortest_sequences():
    """100 sequences, batches of 64: the 36 shortest are padded to 64 rows, the 64 longest are not."""
    lengths = np.r_[np.full(36, 10), np.full(64, 256)][np.random.default_rng(0).permutation(100)]
    first, second = length_batches(lengths, 64)
    assert (lengths[first] == 10).all() and batch_rows(len(first), 64, 1) == 64
    assert (lengths[second] == 256).all() and batch_rows(len(second), 64, 1) == 64


def test_partial_batch_last_on_request():
    lengths = np.arange(100)[::-1]
    batches = list(length_batches(lengths, 64, partial_first=False))
    assert [len(b) for b in batches] == [64, 36]
    assert (np.diff(lengths[np.concatenate(batches)]) >= 0).all()


def test_collect_pipelined_keeps_order_and_bounds_in_flight_results():
    """Rows land where the job says (padding rows dropped); at most MAX_IN_FLIGHT results wait
    uncollected when the next one is dispatched; progress counts real rows only."""
    order = np.random.default_rng(1).permutation(10)
    jobs_rows = [order[:3], order[3:7], order[7:9], order[9:]]
    dispatched, fetched, progress = [], [], []

    def jobs():
        for k, rows in enumerate(jobs_rows):
            assert len(dispatched) - len(fetched) <= MAX_IN_FLIGHT
            dispatched.append(k)
            padded = np.r_[rows, -np.ones(2)].astype(np.float32)  # two padding rows
            yield rows, (k, padded[:, None].repeat(2, axis=1))

    def fetch(result):
        fetched.append(result[0])
        return result[1]

    out = collect_pipelined(jobs(), np.full((10, 2), np.nan, np.float32), fetch, progress.append)
    np.testing.assert_array_equal(out, np.arange(10, dtype=np.float32)[:, None].repeat(2, axis=1))
    assert fetched == [0, 1, 2, 3] and progress == [3, 4, 2, 1]
