"""tasks/order_alignment.py: hand-computed answers for every rule, batching, and bootstrap intervals."""

import itertools
import math

import numpy as np
import pytest

from stylebench_jax.data.stel import StelInstance
from stylebench_jax.metrics.bootstrap import bootstrap_ci
from stylebench_jax.tasks.base import TextScorer
from stylebench_jax.tasks.order_alignment import (
    AlignmentInstance,
    alignment_credits,
    distractor_instances,
    evaluate_ordered_lists,
    evaluate_ordered_lists_steb,
    evaluate_stel,
    list_instance,
    mean_with_ci,
    steb_align_and_score,
    steb_list_credits,
    steb_scores,
    stel_or_content,
    stel_quadruple,
    stel_triple,
)


class TableSimilarity:
    """A PairSimilarity given by a symmetric table; unknown pairs are an error."""

    name = "table"

    def __init__(self, table):
        self.table = {}
        for (a, b), value in table.items():
            self.table[(a, b)] = self.table[(b, a)] = value

    def similarity(self, a, b):
        return np.array([self.table[(x, y)] for x, y in zip(a, b)], dtype=np.float64)


class ToyEmbedder:
    """An Embedder with fixed vectors that records how often each text is embedded."""

    name = "toy"
    identity = "toy:v1"

    def __init__(self, vectors):
        self.vectors = {text: np.asarray(v, dtype=np.float32) for text, v in vectors.items()}
        self.dim = len(next(iter(self.vectors.values())))
        self.calls = []

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.stack([self.vectors[text] for text in texts])


def stel(correct, **overrides):
    fields = dict(anchor1="A1", anchor2="A2", alt1="S1", alt2="S2", correct=correct, id="q", votes=None,
                  style_type="formality")
    fields.update(overrides)
    return StelInstance(**fields)


# order S1-S2: s(A1,S1)=0.9, s(A2,S2)=0.8 -> distances (0.1, 0.2), norm 0.2236;
# order S2-S1: s(A1,S2)=0.3, s(A2,S1)=0.4 -> distances (0.7, 0.6), norm 0.922
QUAD = {("A1", "S1"): 0.9, ("A2", "S2"): 0.8, ("A1", "S2"): 0.3, ("A2", "S1"): 0.4, ("A1", "A2"): 0.95}


def test_quadruple_rule_by_hand():
    scorer = TextScorer(TableSimilarity(QUAD))
    credits = alignment_credits(scorer, [stel_quadruple(stel(1)), stel_quadruple(stel(2))])
    np.testing.assert_array_equal(credits, [1.0, 0.0])


def test_quadruple_uses_the_euclidean_norm_not_the_sum():
    # order S1-S2: distances (0, 0.5) -> L2 0.5, L1 0.5; order S2-S1: (0.25, 0.25) -> L2 0.354, L1 0.5
    table = {("A1", "S1"): 1.0, ("A2", "S2"): 0.5, ("A1", "S2"): 0.75, ("A2", "S1"): 0.75}
    scorer = TextScorer(TableSimilarity(table))
    quad = [stel_quadruple(stel(2))]
    assert alignment_credits(scorer, quad)[0] == 1.0  # L2 prefers S2-S1
    assert alignment_credits(scorer, quad, norm="l1")[0] == 0.5  # STEB's sum objective: exact tie
    with pytest.raises(ValueError, match="norm"):
        alignment_credits(scorer, quad, norm="max")


@pytest.mark.parametrize("value", [0.5, math.nan])
def test_exact_tie_and_nan_count_half(value):
    table = {("A1", "S1"): 0.5, ("A2", "S2"): 0.5, ("A1", "S2"): 0.5, ("A2", "S1"): value}
    scorer = TextScorer(TableSimilarity(table))
    np.testing.assert_array_equal(
        alignment_credits(scorer, [stel_quadruple(stel(1)), stel_quadruple(stel(2))]), [0.5, 0.5])


def test_triple_and_stel_or_content_by_hand():
    scorer = TextScorer(TableSimilarity(QUAD))
    # triple: s(A1,S1)=0.9 > s(A1,S2)=0.3 -> S1
    np.testing.assert_array_equal(
        alignment_credits(scorer, [stel_triple(stel(1)), stel_triple(stel(2))]), [1.0, 0.0])
    # STEL-or-Content, correct=1: wrong S2 replaced by A2 -> s(A1,S1)=0.9 vs s(A1,A2)=0.95: content wins
    built = stel_or_content(stel(1))
    assert built == AlignmentInstance(("A1",), ("S1", "A2"), (0,))
    assert alignment_credits(scorer, [built])[0] == 0.0
    # correct=2: wrong S1 replaced by A2 -> candidates (A2, S2), answer S2
    assert stel_or_content(stel(2)) == AlignmentInstance(("A1",), ("A2", "S2"), (1,))
    assert alignment_credits(scorer, [stel_or_content(stel(2))])[0] == 0.0  # s(A1,A2)=0.95 > s(A1,S2)=0.3
    table = {**QUAD, ("A1", "A2"): 0.1}
    assert alignment_credits(TextScorer(TableSimilarity(table)), [stel_or_content(stel(2))])[0] == 1.0
    table[("A1", "S2")] = 0.1
    assert alignment_credits(TextScorer(TableSimilarity(table)), [stel_or_content(stel(2))])[0] == 0.5
    # STEL compares the similarities themselves (higher wins), also above 1: s = 1.5 beats 0.8
    # (|1 - s| would call 0.8 the closer one); a similarity is any "higher = more alike" score
    table = {**QUAD, ("A1", "S1"): 1.5, ("A1", "A2"): 0.8}
    assert alignment_credits(TextScorer(TableSimilarity(table)), [stel_triple(stel(1))])[0] == 1.0
    assert alignment_credits(TextScorer(TableSimilarity(table)), [stel_or_content(stel(1))])[0] == 1.0


def test_three_level_list_alignment_by_hand():
    # reference r0 r1 r2 on a line of styles; candidates in shuffled order (c2, c0, c1)
    vectors = {"r0": [1, 0], "r1": [1, 1], "r2": [0, 1], "c0": [1, 0.1], "c1": [1, 0.9], "c2": [0.1, 1],
               "d": [-1, 0]}
    embedder = ToyEmbedder(vectors)
    scorer = TextScorer(embedder)
    instance = AlignmentInstance(("r0", "r1", "r2"), ("c2", "c0", "c1"), (1, 2, 0))
    assert alignment_credits(scorer, [instance])[0] == 1.0
    wrong = AlignmentInstance(("r0", "r1", "r2"), ("c2", "c0", "c1"), (2, 1, 0))
    assert alignment_credits(scorer, [wrong])[0] == 0.0
    # the same by brute force over all 6 assignments, from cosines computed here
    unit = {k: np.asarray(v, float) / np.linalg.norm(v) for k, v in vectors.items()}
    costs = {perm: math.sqrt(sum((1 - unit[r] @ unit[("c2", "c0", "c1")[p]]) ** 2
                                 for r, p in zip(("r0", "r1", "r2"), perm)))
             for perm in itertools.permutations(range(3))}
    assert min(costs, key=costs.get) == (1, 2, 0)
    # distractor "d" (opposite of everything) among 4 candidates: still aligned, d left out
    with_distractor = AlignmentInstance(("r0", "r1", "r2"), ("c2", "d", "c0", "c1"), (2, 3, 0))
    assert alignment_credits(scorer, [with_distractor])[0] == 1.0
    # each distinct text was embedded once, in one batch per call
    assert all(len(call) == len(set(call)) for call in embedder.calls)


def test_distractor_variants_follow_steb():
    rng = np.random.default_rng(0)
    first, last = distractor_instances(["a0", "a1", "a2"], ["b0", "b1", "b2"], rng)
    # variant 1: a2 leaves the reference and replaces b2; variant 2: a0 replaces b0
    assert first.reference == ("a0", "a1") and sorted(first.candidates) == ["a2", "b0", "b1"]
    assert [first.candidates[i] for i in first.answer] == ["b0", "b1"]
    assert last.reference == ("a1", "a2") and sorted(last.candidates) == ["a0", "b1", "b2"]
    assert [last.candidates[i] for i in last.answer] == ["b1", "b2"]
    plain = list_instance(["a0", "a1", "a2"], ["b0", "b1", "b2"], rng)
    assert [plain.candidates[i] for i in plain.answer] == ["b0", "b1", "b2"]


def test_evaluate_ordered_lists_with_a_content_bound_scorer():
    # Two articles, 2 levels each. A style-blind scorer that only sees content: every text of an
    # article is alike (s=1 within, 0 across). Plain alignment is a pure tie -> 0.5 each; with the
    # distractor (same content as the reference) the scorer always picks the distractor -> 0.
    groups = [("x_simple", "x_complex"), ("y_simple", "y_complex")]
    texts = [t for g in groups for t in g]
    table = {(a, b): float(a[0] == b[0]) for a in texts for b in texts}
    scores = evaluate_ordered_lists(TextScorer(TableSimilarity(table)), groups, n_resamples=50)
    assert [s.metric for s in scores] == ["accuracy", "distractor_accuracy"]
    assert scores[0].value == 0.5 and scores[0].n == 2
    assert scores[1].value == 0.0
    # a style-only scorer (level matters, content not): perfect on both
    style = {(a, b): float(a.split("_")[1] == b.split("_")[1]) for a in texts for b in texts}
    scores = evaluate_ordered_lists(TextScorer(TableSimilarity(style)), groups, n_resamples=50)
    assert [s.value for s in scores] == [1.0, 1.0]


def test_evaluate_stel_reports_three_metrics_with_intervals():
    scorer = TextScorer(TableSimilarity(QUAD))
    scores = evaluate_stel(scorer, [stel(1, id="a"), stel(2, id="b")] * 5, seed=3, n_resamples=200)
    assert [s.metric for s in scores] == ["accuracy", "distractor_accuracy", "triple_accuracy"]
    accuracy = scores[0]
    assert accuracy.value == 0.5 and accuracy.n == 10
    assert 0.0 <= accuracy.ci_low <= accuracy.value <= accuracy.ci_high <= 1.0


def test_bootstrap_interval_is_seeded_and_uses_the_shared_bootstrap():
    credits = np.array([1.0, 0.0, 0.5, 1.0, 1.0, 0.0, 1.0])
    a = mean_with_ci(credits, "accuracy", seed=7, n_resamples=300)
    assert a == mean_with_ci(credits, "accuracy", seed=7, n_resamples=300)
    assert (a.ci_low, a.ci_high) == bootstrap_ci(credits, n_boot=300, seed=7)
    assert a.value == pytest.approx(4.5 / 7) and a.n == 7 and a.ci_low < a.value < a.ci_high
    constant = mean_with_ci(np.ones(5), "accuracy")
    assert (constant.value, constant.ci_low, constant.ci_high) == (1.0, 1.0, 1.0)
    assert math.isnan(mean_with_ci(np.array([]), "accuracy").value)


def test_instance_validation():
    with pytest.raises(ValueError):
        AlignmentInstance(("a", "b"), ("c",), (0, 0))
    with pytest.raises(ValueError):
        AlignmentInstance(("a",), ("c", "d"), (2,))


class CountingSimilarity(TableSimilarity):
    def __init__(self, table):
        super().__init__(table)
        self.requested = []

    def similarity(self, a, b):
        self.requested.extend(zip(a, b))
        return super().similarity(a, b)


def test_each_distinct_pair_is_scored_once_and_embedder_path_matches_pairwise():
    groups = [(f"g{i}_lo", f"g{i}_hi") for i in range(4)]
    texts = [t for g in groups for t in g]
    table = {(a, b): 1.0 / (1 + abs(hash(a + b)) % 7) for a in texts for b in texts}
    counting = CountingSimilarity(table)
    evaluate_ordered_lists(TextScorer(counting), groups, n_resamples=20)
    assert len(counting.requested) == len(set(counting.requested))
    # the embedder fast path gives the same numbers as TextScorer.similarity
    rng = np.random.default_rng(0)
    embedder = ToyEmbedder({t: rng.normal(size=5) for t in texts})
    scorer = TextScorer(embedder)
    instances = [list_instance(groups[0], groups[1], rng), *distractor_instances(groups[2], groups[3], rng)]
    left = [r for x in instances for r in x.reference for _ in x.candidates]
    right = [c for x in instances for _ in x.reference for c in x.candidates]
    from stylebench_jax.tasks.order_alignment import _pair_similarities

    fast = _pair_similarities(scorer, left, right, chunk=3)
    np.testing.assert_allclose(fast, scorer.similarity(left, right), rtol=1e-12)


def test_ordered_lists_are_capped_by_a_seeded_sample():
    groups = [(f"g{i}_lo", f"g{i}_hi") for i in range(6)]  # 30 ordered pairs
    texts = [t for g in groups for t in g]
    style = {(a, b): float(a.split("_")[1] == b.split("_")[1]) for a in texts for b in texts}
    scorer = TextScorer(TableSimilarity(style))
    assert evaluate_ordered_lists(scorer, groups, n_resamples=20)[0].n == 30
    capped = evaluate_ordered_lists(scorer, groups, max_instances=7, n_resamples=20)
    assert capped[0].n == capped[1].n == 7
    with pytest.raises(ValueError, match="same number"):
        evaluate_ordered_lists(scorer, [("a", "b"), ("c", "d", "e")])
    with pytest.raises(ValueError, match="at least 2 groups"):
        evaluate_ordered_lists(scorer, [("a", "b")])


# ------------------------------------------------------------------------ STEB's rule vs STEB's code

def _clipped_vectors(rng, groups, k, dim):
    """Vectors with many negative cosines (so clipping at 0 creates exact ties) and a few repeats."""
    x = rng.normal(size=(groups, k, dim))
    x[::3, 0] = -x[::3, 1]  # opposite rows: cosine -1 -> clipped to the same cost as any other negative
    x[1::4] = x[0]  # identical groups: cost ties across the whole matrix
    return x


@pytest.mark.parametrize("k,dim", [(2, 3), (3, 4), (5, 2)])
def test_steb_rule_equals_stebs_code_exactly(k, dim):
    from tests.reference.steb_reference import order_alignment_evaluate

    rng = np.random.default_rng(k * 10 + dim)
    vectors = _clipped_vectors(rng, 13, k, dim)
    labels = ["a", "b", "a", "c", "a", "b", "b", "a", "c", "c", "a", "b", "d"]  # "d": a single group
    expected = order_alignment_evaluate(vectors, labels)
    credits = steb_list_credits(vectors, labels)
    assert credits.pairs == tuple(p for members in ([0, 2, 4, 7, 10], [1, 5, 6, 11], [3, 8, 9])
                                  for p in itertools.combinations(members, 2))
    scores = steb_scores(credits, n_resamples=50)
    assert [s.metric for s in scores] == ["accuracy_steb", "distractor_accuracy_steb"]
    assert scores[0].value == expected["acc_mean"]
    assert scores[1].value == expected["distractor_acc_mean"]
    assert scores[0].n == scores[1].n == 10 + 6 + 3


def test_steb_rule_through_a_scorer_matches_stebs_code_on_the_scorers_vectors():
    from tests.reference.steb_reference import order_alignment_evaluate

    rng = np.random.default_rng(1)
    groups = [tuple(f"g{i}_{level}" for level in range(3)) for i in range(9)]
    embedder = ToyEmbedder({t: rng.normal(size=4) for g in groups for t in g})
    scorer = TextScorer(embedder)
    scores = evaluate_ordered_lists_steb(scorer, groups, n_resamples=50)
    vectors = scorer.embed([t for g in groups for t in g]).reshape(9, 3, 4)
    expected = order_alignment_evaluate(vectors, ["one"] * 9)
    assert (scores[0].value, scores[1].value) == (expected["acc_mean"], expected["distractor_acc_mean"])
    # a similarity-only scorer with the same cosines gives the same credits
    unit = {t: v / np.linalg.norm(v) for t, v in embedder.vectors.items()}
    texts = list(unit)
    table = TableSimilarity({(a, b): float(unit[a].astype(np.float64) @ unit[b])
                             for a in texts for b in texts})
    pairwise = evaluate_ordered_lists_steb(TextScorer(table), groups, n_resamples=50)
    assert [s.value for s in pairwise] == [s.value for s in scores]


def test_steb_rule_rewards_a_scorer_that_sees_no_style():
    # Every text maps to one vector: all cosines 1, all costs 0. The solver returns the identity and
    # the targets are in true order, so STEB's rule scores 1.0 on the plain alignment; in the
    # distractor variants the identity is right for "last" and wrong for "first" (offset 1): 0.5.
    # Ours gives each tie its expected credit: 1/2 of 2 orders, 1/2 of 2 candidates.
    groups = [(f"g{i}_lo", f"g{i}_hi") for i in range(5)]
    scorer = TextScorer(ToyEmbedder({t: [1.0, 0.0] for g in groups for t in g}))
    steb = evaluate_ordered_lists_steb(scorer, groups, n_resamples=20)
    assert [s.value for s in steb] == [1.0, 0.5] and steb[0].n == 10
    ours = evaluate_ordered_lists(scorer, groups, n_resamples=20)
    assert [s.value for s in ours] == [0.5, 0.5]
    # all cosines negative (two antipodal vectors per level would be -1): clipped to cost 1 everywhere
    opposite = {t: ([1.0, 0.0] if i % 2 else [-1.0, 0.0]) for i, g in enumerate(groups) for t in g}
    steb = evaluate_ordered_lists_steb(TextScorer(ToyEmbedder(opposite)), groups[:2], n_resamples=20)
    assert steb[0].value == 1.0  # the one pair (0, 1): cosines -1 -> ties -> identity


def test_steb_per_position_credit_by_hand():
    # 3 levels; source row 2 prefers target 1 and row 1 prefers target 2: positions 0 right, 1 and 2
    # swapped -> credit 1/3 (ours: the exact assignment is wrong -> 0).
    similarity = np.array([[0.9, 0.1, 0.0], [0.1, 0.2, 0.8], [0.0, 0.7, 0.3]])
    assert steb_align_and_score(similarity) == pytest.approx(1 / 3)
    # clipping: a negative cosine costs as much as 0
    assert steb_align_and_score(np.array([[-0.9, -0.1], [-0.5, -0.2]])) == 1.0  # all cost 1 -> identity
    assert steb_align_and_score(np.array([[0.5, 0.9]])) == 0.0  # 1 source row -> target 1, expected 0
    assert steb_align_and_score(np.array([[0.5, 0.9]]), offset=1) == 1.0
    assert steb_align_and_score(np.array([[0.5], [0.2]])) == 0.0  # fewer than 2 targets


def test_run_ordered_lists_reports_ours_then_stebs():
    groups = [(f"g{i}_lo", f"g{i}_hi") for i in range(4)]
    texts = [t for g in groups for t in g]
    style = {(a, b): float(a.split("_")[1] == b.split("_")[1]) for a in texts for b in texts}
    from stylebench_jax.data.units import OrderedLists
    from stylebench_jax.tasks.base import TaskContext
    from stylebench_jax.tasks.order_alignment import run_ordered_lists

    scores = run_ordered_lists(TextScorer(TableSimilarity(style)), OrderedLists(groups), TaskContext(),
                               seed=0, n_boot=20)
    assert [s.metric for s in scores] == ["accuracy", "distractor_accuracy", "accuracy_steb",
                                          "distractor_accuracy_steb"]
    assert [s.n for s in scores] == [12, 12, 6, 6]
    assert all(s.value == 1.0 for s in scores)
