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


def _flops(length):  # MiniLM's per-token cost shape: matrix products + attention growing with length
    return 21.2e6 + 9216.0 * length


def _brute_force(maxima, heights, candidates, program_flops, compiled=frozenset()):
    """Cheapest cost over every subset of candidate lengths (each batch: smallest chosen length that fits)."""
    import itertools

    best = np.inf
    for r in range(1, len(candidates) + 1):
        for chosen in itertools.combinations(sorted(candidates), r):
            if chosen[-1] < max(maxima):
                continue
            plan = [min(c for c in chosen if c >= m) for m in maxima]
            programs = {(h, n) for h, n in zip(heights, plan)} - set(compiled)
            work = sum(h * n * _flops(n) for h, n in zip(heights, plan))
            best = min(best, work + program_flops * len(programs))
    return best


@pytest.mark.parametrize("seed", range(12))
def test_plan_lengths_is_the_cheapest_assignment(seed):
    """The dynamic programme's cost equals brute force over every set of lengths, and its plan costs what
    it says; with programs free it is the smallest bucket per batch (the fixed buckets of before)."""
    from stylebench_jax.encoders.batching import plan_lengths

    rng = np.random.default_rng(seed)
    candidates = [8, 16, 24, 32, 48, 64, 96, 128]
    maxima = np.sort(rng.integers(1, 129, size=rng.integers(1, 9)))
    heights = [int(rng.choice([16, 64]))] + [64] * (len(maxima) - 1)
    program_flops = float(rng.choice([0.0, 2e9, 2e10, 1.5e11]))
    compiled = frozenset({(64, int(rng.choice(candidates)))}) if seed % 3 == 0 else frozenset()
    plan, cost = plan_lengths(maxima, heights, candidates, token_flops=_flops, program_flops=program_flops,
                              compiled=compiled)
    assert all(n >= m and n in candidates for n, m in zip(plan, maxima))
    programs = {(h, n) for h, n in zip(heights, plan)} - compiled
    assert cost == pytest.approx(sum(h * n * _flops(n) for h, n in zip(heights, plan))
                                 + program_flops * len(programs))
    assert cost == pytest.approx(_brute_force(maxima, heights, candidates, program_flops, compiled))
    if program_flops == 0:
        assert plan == [min(c for c in candidates if c >= m) for m in maxima]


def test_plan_batches_merges_short_buckets_and_reuses_compiled_programs():
    """Style data: many short sentences and a tail of long articles. With a CPU's program cost the short
    buckets merge into fewer programs (the partial batch joins the full height); programs already
    compiled are reused instead of compiling a better-fitting one; free programs give one per bucket."""
    from stylebench_jax.encoders.batching import bucket_length, plan_batches

    rng = np.random.default_rng(0)
    lengths = np.r_[rng.integers(5, 20, 900), rng.integers(20, 70, 300), np.full(300, 256)]
    kwargs = dict(token_flops=_flops)
    free = plan_batches(lengths, 64, 1, 256, program_flops=0.0, **kwargs)
    assert [n for _, _, n in free] == [bucket_length(int(lengths[r].max()), 256) for r, _, _ in free]
    merged = plan_batches(lengths, 64, 1, 256, program_flops=1.5e11, **kwargs)
    assert len({(h, n) for _, h, n in merged}) < len({(h, n) for _, h, n in free})
    assert {h for _, h, _ in merged} == {64}  # the partial batch of 28 rides with the full batches
    assert [r.tolist() for r, _, _ in merged] == [r.tolist() for r, _, _ in free]  # same rows, same order
    reuse = plan_batches(lengths, 64, 1, 256, program_flops=1.5e11, compiled=frozenset({(64, 256)}), **kwargs)
    assert {(h, n) for _, h, n in reuse} == {(h, n) for _, h, n in merged}  # 256 was chosen anyway
    only = plan_batches(lengths, 64, 1, 256, program_flops=1e15, compiled=frozenset({(64, 256)}), **kwargs)
    assert {(h, n) for _, h, n in only} == {(64, 256)}


def test_plan_refuses_unsorted_or_too_long_batches():
    from stylebench_jax.encoders.batching import plan_batches, plan_lengths

    with pytest.raises(ValueError, match="maxima"):
        plan_lengths([16, 8], [64, 64], [8, 16], token_flops=_flops, program_flops=0.0)
    with pytest.raises(ValueError, match="candidates"):
        plan_lengths([8, 40], [64, 64], [8, 16, 32], token_flops=_flops, program_flops=0.0)
    with pytest.raises(ValueError, match="max_length 32"):
        plan_batches(np.array([5, 40]), 64, 1, 32, token_flops=_flops, program_flops=0.0)
    assert plan_batches(np.zeros(0, np.int64), 64, 1, 32, token_flops=_flops, program_flops=0.0) == []


def test_embedder_plans_programs_and_reuses_them(tmp_path, monkeypatch):
    """The embedder pads by the plan: with programs dear every batch shares one program (and a later call
    compiles nothing new), with programs free each batch gets its own bucket; the vectors agree (padding
    is masked), so the plan changes the cost, never the result."""
    import jax

    from stylebench_jax.encoders import neural
    from stylebench_jax.parallel import make_mesh
    from tests.helpers.tiny_models import write_tiny_model

    folder = write_tiny_model(tmp_path / "tiny")
    mesh = make_mesh("data=1", jax.devices()[:1])
    words = "the cat sat on a mat while rain fell over quiet hills".split()
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(words, size=n)) for n in rng.integers(1, 60, size=40)]
    vectors = {}
    for cost in (0.0, 1e18):
        monkeypatch.setattr(neural, "CPU_PROGRAM_FLOPS", cost)
        embedder = neural.FlaxEncoderEmbedder(folder, mesh=mesh, batch_size=8, long_text="truncate",
                                              progress=False)
        vectors[cost] = embedder.embed(texts)
        programs = set(embedder.programs)
        assert (len(programs) > 2) if cost == 0 else (programs == {(8, embedder.settings.max_length)})
        embedder.embed(texts[:5] + ["rain"])  # only programs it has: none is added under dear programs
        assert (embedder.programs == programs) or cost == 0
    np.testing.assert_allclose(vectors[0.0], vectors[1e18], atol=2e-6)
