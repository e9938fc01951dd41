"""Order alignment: STEL's quadruple, triple and STEL-or-Content rules, and two rules for ordered lists.

**Our rule** (one rule for every order-alignment instance). An instance has an ordered *reference*
list ``R = (r_1, ..., r_K)`` and an unordered *candidate* set ``C`` of ``M >= K`` texts, of which
``K`` carry the reference's styles (the others are distractors). The prediction is the injective
assignment ``pi`` of reference positions to candidates that minimises the distance

    cost(pi) = || (1 - s(r_1, c_pi(1)), ..., 1 - s(r_K, c_pi(K))) ||_2

over all ``M! / (M - K)!`` assignments, with ``s`` the scorer's similarity (cosine for embedders). The
instance is right if ``pi`` is exactly the true assignment. When ``m`` assignments tie for the minimum
the instance gets credit ``1/m`` if the true one is among them (the expected score of a random tie
break), and when any cost is NaN it gets the chance credit ``1 / #assignments``.

Special cases, all from STEL (Wegmann & Nguyen 2021, github.com/nlpsoc/STEL
``src/STEL/utility/eval_on_tasks.py``) and STEL-or-Content (Wegmann et al. 2022):

- quadruple: ``R = (A1, A2)``, ``C = (S1, S2)``: order S1-S2 if ``||(1-s(A1,S1), 1-s(A2,S2))|| <
  ||(1-s(A1,S2), 1-s(A2,S1))||``, S2-S1 if ``>``, and an exact tie scores 0.5.
- triple: ``R = (A1,)``, ``C = (S1, S2)``: S1 if ``s(A1,S1) > s(A1,S2)``, S2 if ``<``, tie 0.5.
- STEL-or-Content: the wrong alternative is replaced by A2 (same content as A1, opposite style), then the
  triple rule: the distractor tests whether the scorer prefers style over content.

For ordered lists of any length K (e.g. OneStopEnglish's 3 reading levels) our rule
(:func:`evaluate_ordered_lists`, metrics ``accuracy`` and ``distractor_accuracy``) aligns every
*ordered* pair of distinct groups of one unit, with the candidate group shuffled (seeded), and the
distractor variants move one reference item into the candidate set (the last one, and in a second
variant the first one; distractor accuracy averages the two). ``norm="l1"`` sums the distances
instead of taking their L2 norm; it is *not* STEB's rule (no clipping, exact-assignment credit).

**STEB's rule** (:func:`evaluate_ordered_lists_steb`, metrics ``accuracy_steb`` and
``distractor_accuracy_steb``; Rivera Soto et al., seed paper 000 §3.1; code
github.com/rrivera1849/STEB ``steb/tasks/order_alignment.py`` at commit 8a036408, ``align_and_score``
and ``OrderAlignmentTask.evaluate``): every *unordered* pair ``i < j`` of groups with the same label
(``itertools.combinations``); cosines are clipped at 0, the cost ``1 - max(s, 0)`` goes to the Hungarian
algorithm (``scipy.optimize.linear_sum_assignment``) with the target group *in its true order*, and the
credit is the share of positions assigned correctly (per-position, not all-or-nothing). Distractor
variants as above without shuffling (the last item of ``i`` replaces the last of ``j`` and leaves ``i``;
the first item likewise, expected positions offset by one); ``distractor_accuracy_steb`` is the mean
over both variants of all pairs.

Why we keep ours next to STEB's. Clipping turns every non-positive cosine into the same cost 1, and the
solver then breaks the resulting ties in favour of the identity assignment, which is the right answer
because the targets keep their true order; per-position credit also gives partial marks. Both inflate
STEB's numbers for models that do not separate the styles at all (real MiniLM, quick suite: ASSET 0.691
with STEB's rule vs 0.568 with ours; OneStopEnglish sentences 0.502 vs 0.214 and distractor accuracy
0.198 vs 0.000). Our rule shuffles the candidates and gives tied assignments the expected credit of a
random tie break, so a constant scorer scores chance. Results labelled STEB (``*_steb`` metrics and
STEB's aggregate scores) use STEB's rule; ``accuracy`` / ``distractor_accuracy`` are ours.

Accuracy is the mean credit. STEL's script differs in one corner we do not copy: it reports exactly 0.5
for a component when undecided instances are at least as many as decided ones.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from stylebench_jax.data.stel import StelInstance
from stylebench_jax.data.units import OrderedLists, StelSet
from stylebench_jax.metrics.bootstrap import bootstrap_ci
from stylebench_jax.tasks.base import Score, TaskContext, TextScorer, TooFewInstances

MAX_ASSIGNMENTS = 5040
DEFAULT_RESAMPLES = 1000
# Cap on ordered group pairs per ordered-list unit (all pairs grow quadratically: 400 groups give 159,600).
MAX_LIST_INSTANCES = 10_000


@dataclasses.dataclass(frozen=True)
class AlignmentInstance:
    """Ordered ``reference`` [K], unordered ``candidates`` [M >= K]; ``answer[i]`` is the index of the
    candidate that matches ``reference[i]`` (candidates not in ``answer`` are distractors)."""

    reference: tuple[str, ...]
    candidates: tuple[str, ...]
    answer: tuple[int, ...]

    def __post_init__(self):
        k, m = len(self.reference), len(self.candidates)
        if k == 0 or m < k or len(self.answer) != k:
            raise ValueError(f"need 1 <= K <= M and K answers; got K={k}, M={m}, answers={self.answer}")
        if len(set(self.answer)) != k or not all(0 <= index < m for index in self.answer):
            raise ValueError(f"answer must name K distinct candidates in 0..{m - 1}, got {self.answer}")


# ----------------------------------------------------------------------------------------------- rules

def assignment_credit(similarities: np.ndarray, answer_index: np.ndarray, assignments: np.ndarray, *,
                      norm: str = "l2") -> np.ndarray:
    """Credit per instance of the minimum-distance assignment (see module docstring).

    Args:
      similarities: ``[N, K, M]`` float64, ``s(reference_i, candidate_j)``.
      answer_index: ``[N]`` int, row of ``assignments`` that is the true assignment.
      assignments: ``[P, K]`` int, every injective map of K positions into M candidates.
      norm: ``"l2"`` (STEL) or ``"l1"`` (sum of the distances; not STEB's rule, which clips cosines
        at 0 and credits positions: :func:`steb_align_and_score`).

    Returns:
      ``[N]`` float64 in [0, 1]: 1 right, 0 wrong, ``1/m`` for an m-way tie holding the answer.
    """
    n, k, _ = similarities.shape
    distances = 1.0 - similarities[:, np.arange(k)[None, :], assignments]  # [N, P, K]
    if k == 1:  # triples: STEL compares s(A1, S1) > s(A1, S2) itself; |1 - s| would reverse s > 1
        costs = distances[..., 0]
    elif norm == "l2":
        costs = np.sqrt(np.sum(distances * distances, axis=-1))
    elif norm == "l1":
        costs = np.sum(distances, axis=-1)
    else:
        raise ValueError(f"norm must be 'l2' or 'l1', got {norm!r}")
    undecidable = np.isnan(costs).any(axis=1)
    safe = np.where(np.isnan(costs), np.inf, costs)
    winners = safe == safe.min(axis=1, keepdims=True)
    credit = winners[np.arange(n), answer_index] / winners.sum(axis=1)
    return np.where(undecidable, 1.0 / assignments.shape[0], credit)


def _assignments(k: int, m: int) -> np.ndarray:
    count = int(np.prod(np.arange(m - k + 1, m + 1)))
    if count > MAX_ASSIGNMENTS:
        raise ValueError(f"{count} assignments of {k} references to {m} candidates; at most "
                         f"{MAX_ASSIGNMENTS} are enumerated")
    return np.array(list(itertools.permutations(range(m), k)), dtype=np.int64).reshape(-1, k)


def _pair_similarities(scorer: TextScorer, left: list[str], right: list[str],
                       chunk: int = 65536) -> np.ndarray:
    """``[P]`` float64 ``s(left[p], right[p])``, each distinct ordered pair scored once.

    For an embedder the distinct texts are embedded once (``scorer.embed``, unit rows) and cosines
    are taken in chunks of ``chunk`` pairs, so memory stays ``O(chunk * D)`` however many instances
    reuse the same texts.
    """
    if scorer.has_vectors:
        unique = list(dict.fromkeys(left + right))
        index = {text: i for i, text in enumerate(unique)}
        vectors = scorer.embed(unique).astype(np.float64)
        ia = np.fromiter((index[t] for t in left), dtype=np.int64, count=len(left))
        ib = np.fromiter((index[t] for t in right), dtype=np.int64, count=len(right))
        out = np.empty(len(left), dtype=np.float64)
        for start in range(0, len(left), chunk):
            stop = start + chunk
            out[start:stop] = np.einsum("nd,nd->n", vectors[ia[start:stop]], vectors[ib[start:stop]])
        return out
    pairs = list(dict.fromkeys(zip(left, right)))
    position = {pair: i for i, pair in enumerate(pairs)}
    # STEL counts an undefined (NaN) similarity as a tie
    values = scorer.similarity([a for a, _ in pairs], [b for _, b in pairs], nan_is_tie=True)
    return values[np.fromiter((position[pair] for pair in zip(left, right)), dtype=np.int64,
                              count=len(left))]


def alignment_credits(scorer: TextScorer, instances: Sequence[AlignmentInstance], *,
                      norm: str = "l2") -> np.ndarray:
    """``[N]`` float64 credit per instance. All ``K x M`` similarities are computed in one batch (each
    distinct text embedded once, each distinct pair scored once); instances are grouped by ``(K, M)``."""
    credits = np.empty(len(instances), dtype=np.float64)
    if not instances:
        return credits
    left: list[str] = []
    right: list[str] = []
    for instance in instances:
        for text in instance.reference:
            left.extend([text] * len(instance.candidates))
            right.extend(instance.candidates)
    sims = _pair_similarities(scorer, left, right)
    offsets = np.cumsum([0] + [len(x.reference) * len(x.candidates) for x in instances])
    shapes: dict[tuple[int, int], list[int]] = {}
    for index, instance in enumerate(instances):
        shapes.setdefault((len(instance.reference), len(instance.candidates)), []).append(index)
    for (k, m), members in shapes.items():
        assignments = _assignments(k, m)
        lookup = {tuple(row): p for p, row in enumerate(assignments.tolist())}
        block = np.stack([sims[offsets[i]:offsets[i + 1]].reshape(k, m) for i in members])
        answers = np.array([lookup[instances[i].answer] for i in members], dtype=np.int64)
        credits[members] = assignment_credit(block, answers, assignments, norm=norm)
    return credits


# --------------------------------------------------------------------------------------- STEL builders

def stel_quadruple(instance: StelInstance) -> AlignmentInstance:
    """``R = (A1, A2)``, ``C = (S1, S2)``; answer S1-S2 if ``correct == 1``."""
    answer = (0, 1) if instance.correct == 1 else (1, 0)
    return AlignmentInstance((instance.anchor1, instance.anchor2), (instance.alt1, instance.alt2), answer)


def stel_triple(instance: StelInstance) -> AlignmentInstance:
    """``R = (A1,)``, ``C = (S1, S2)``; the answer is the alternative in A1's style."""
    return AlignmentInstance((instance.anchor1,), (instance.alt1, instance.alt2),
                             (0,) if instance.correct == 1 else (1,))


def stel_or_content(instance: StelInstance) -> AlignmentInstance:
    """The triple with the wrong alternative replaced by A2 (same content as A1, the other style)."""
    if instance.correct == 1:
        return AlignmentInstance((instance.anchor1,), (instance.alt1, instance.anchor2), (0,))
    return AlignmentInstance((instance.anchor1,), (instance.anchor2, instance.alt2), (1,))


# --------------------------------------------------------------------------------- ordered-list builders

def pair_groups(groups: Sequence[Sequence[str]], *, max_instances: int | None = None,
                seed: int = 0) -> list[tuple[int, int]]:
    """Ordered pairs ``(reference group, candidate group)`` of distinct groups (both directions; STEB's
    rule uses each unordered pair once), optionally a seeded sample of ``max_instances`` of them, in
    sorted order."""
    lengths = {len(group) for group in groups}
    if len(lengths) > 1:
        raise ValueError(f"all groups need the same number of ordered texts, got lengths {sorted(lengths)}")
    pairs = [(i, j) for i in range(len(groups)) for j in range(len(groups)) if i != j]
    if max_instances is not None and len(pairs) > max_instances:
        rng = np.random.default_rng(seed)
        chosen = rng.choice(len(pairs), size=max_instances, replace=False)
        pairs = [pairs[index] for index in sorted(chosen)]
    return pairs


def list_instance(reference: Sequence[str], other: Sequence[str],
                  rng: np.random.Generator) -> AlignmentInstance:
    """Align ``other`` (same order of styles as ``reference``) after shuffling it with ``rng``."""
    order = rng.permutation(len(other))
    candidates = tuple(other[index] for index in order)
    answer = tuple(int(np.flatnonzero(order == position)[0]) for position in range(len(reference)))
    return AlignmentInstance(tuple(reference), candidates, answer)


def distractor_instances(reference: Sequence[str], other: Sequence[str],
                         rng: np.random.Generator) -> tuple[AlignmentInstance, AlignmentInstance]:
    """STEB's two distractor variants: the last (then the first) reference item leaves the reference and
    replaces the matching position of ``other``; it must stay unassigned. Candidates are shuffled."""
    variants = []
    for drop in (len(reference) - 1, 0):
        kept = [position for position in range(len(reference)) if position != drop]
        candidates = list(other)
        candidates[drop] = reference[drop]
        order = rng.permutation(len(candidates))
        shuffled = tuple(candidates[index] for index in order)
        answer = tuple(int(np.flatnonzero(order == position)[0]) for position in kept)
        variants.append(AlignmentInstance(tuple(reference[p] for p in kept), shuffled, answer))
    return variants[0], variants[1]


# ------------------------------------------------------------------------------------------ evaluation

def mean_with_ci(credits: np.ndarray, metric: str, *, seed: int = 0,
                 n_resamples: int = DEFAULT_RESAMPLES) -> Score:
    """Mean credit with a seeded 95% percentile bootstrap interval over instances
    (``metrics.bootstrap_ci``); NaN with ``n = 0`` for no instances."""
    credits = np.asarray(credits, dtype=np.float64)
    if credits.size == 0:
        return Score(metric, float("nan"), float("nan"), float("nan"), 0)
    low, high = bootstrap_ci(credits, n_boot=n_resamples, seed=seed)
    return Score(metric, float(credits.mean()), low, high, int(credits.size))


def evaluate_stel(scorer: TextScorer, instances: Sequence[StelInstance], *, seed: int = 0,
                  n_resamples: int = DEFAULT_RESAMPLES) -> list[Score]:
    """STEL on one component: ``accuracy`` (quadruple rule, primary), ``distractor_accuracy``
    (STEL-or-Content) and ``triple_accuracy``, each with a seeded 95% bootstrap interval."""
    builders = (("accuracy", stel_quadruple), ("distractor_accuracy", stel_or_content),
                ("triple_accuracy", stel_triple))
    built = [build(x) for _, build in builders for x in instances]
    credits = alignment_credits(scorer, built).reshape(len(builders), len(instances))
    return [mean_with_ci(row, metric, seed=seed, n_resamples=n_resamples)
            for (metric, _), row in zip(builders, credits)]


def evaluate_ordered_lists(scorer: TextScorer, groups: Sequence[Sequence[str]], *,
                           max_instances: int | None = MAX_LIST_INSTANCES, seed: int = 0, norm: str = "l2",
                           n_resamples: int = DEFAULT_RESAMPLES) -> list[Score]:
    """Our order alignment on groups of same-content texts, each listed in the same order of styles.

    Every ordered pair of distinct groups is one instance: align the shuffled second group to the
    first (STEB's rule on the same groups: :func:`evaluate_ordered_lists_steb`). With more than
    ``max_instances`` pairs (default 10,000; ``None`` = all) a seeded sample of them is used. Returns
    ``accuracy`` (exact assignment) and ``distractor_accuracy`` (mean of the two distractor variants per
    instance); the bootstrap resamples instances. Groups need at least 2 texts.
    """
    if len(groups) < 2 or any(len(group) < 2 for group in groups):
        raise TooFewInstances(f"order alignment needs at least 2 groups of at least 2 ordered texts, got "
                         f"{len(groups)} group(s)")
    pairs = pair_groups(groups, max_instances=max_instances, seed=seed)
    rng = np.random.default_rng(seed)
    plain, distractor = [], []
    for i, j in pairs:
        plain.append(list_instance(groups[i], groups[j], rng))
        distractor.extend(distractor_instances(groups[i], groups[j], rng))
    credits = alignment_credits(scorer, plain + distractor, norm=norm)
    accuracy = credits[:len(plain)]
    variants = credits[len(plain):].reshape(-1, 2).mean(axis=1)
    return [mean_with_ci(accuracy, "accuracy", seed=seed, n_resamples=n_resamples),
            mean_with_ci(variants, "distractor_accuracy", seed=seed, n_resamples=n_resamples)]


# ------------------------------------------------------------------------------- STEB's list rule

@dataclasses.dataclass(frozen=True)
class StebListCredits:
    """Per unordered group pair ``(i, j)``, ``i < j`` in ``itertools.combinations`` order: STEB's
    per-position credit of the plain alignment and of its two distractor variants, ``[P]`` float64."""

    pairs: tuple[tuple[int, int], ...]
    plain: np.ndarray
    last: np.ndarray
    first: np.ndarray


def steb_align_and_score(similarity: np.ndarray, offset: int = 0) -> float:
    """STEB's credit of one alignment (``align_and_score`` in steb/tasks/order_alignment.py).

    ``similarity [n_src, n_tgt]`` float64: source position ``a`` against target position ``b``, the
    targets in their true order. Cosines are clipped at 0, ``linear_sum_assignment`` minimises the
    summed cost ``1 - max(s, 0)``, and the credit is the share of source positions ``a`` assigned to
    target ``a + offset``. Fewer than 2 targets score 0 (as STEB).
    """
    n_src, n_tgt = similarity.shape
    if n_tgt < 2:
        return 0.0
    rows, cols = linear_sum_assignment(1.0 - np.maximum(similarity, 0.0))
    predicted = cols[np.argsort(rows)]
    return float(np.mean(predicted == np.arange(n_src) + offset))


def _l2_normalize(x: np.ndarray) -> np.ndarray:
    """STEB's ``l2_normalize`` (steb/metrics.py): rows divided by their norm, zero rows left as they are."""
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def _label_pairs(labels: Sequence) -> list[tuple[int, int]]:
    """Unordered pairs of indices with equal labels: labels in first-appearance order, then
    ``itertools.combinations`` within each (STEB's ``group_indices_by_label`` loop)."""
    groups: dict = {}
    for index, label in enumerate(labels):
        groups.setdefault(label, []).append(index)
    return [pair for members in groups.values() for pair in itertools.combinations(members, 2)]


def steb_list_credits(vectors: np.ndarray, labels: Sequence | None = None) -> StebListCredits:
    """STEB's rule on every unordered same-label pair of groups, from embeddings.

    ``vectors [G, K, D]`` (any float; L2-normalised here in float64 as STEB does), ``labels [G]``
    (``None``: one label). The similarity matrices are formed exactly as STEB forms them (the
    distractor target is ``j`` with its last, resp. first, row replaced by ``i``'s), one small
    product per alignment, so the numbers match STEB's code bit for bit (tests/reference).
    """
    x = _l2_normalize(np.asarray(vectors, dtype=np.float64))
    if x.ndim != 3 or x.shape[1] < 2:
        raise ValueError(f"vectors must be [G, K >= 2, D], got {x.shape}")
    pairs = _label_pairs([0] * x.shape[0] if labels is None else labels)
    plain, last, first = (np.empty(len(pairs)) for _ in range(3))
    for p, (i, j) in enumerate(pairs):
        emb_i, emb_j = x[i], x[j]
        plain[p] = steb_align_and_score(emb_i @ emb_j.T)
        target = emb_j.copy()
        target[-1] = emb_i[-1]
        last[p] = steb_align_and_score(emb_i[:-1] @ target.T)
        target = emb_j.copy()
        target[0] = emb_i[0]
        first[p] = steb_align_and_score(emb_i[1:] @ target.T, offset=1)
    return StebListCredits(tuple(pairs), plain, last, first)


def steb_list_credits_from_similarities(cross: Callable[[int, int], np.ndarray],
                                        within: Callable[[int], np.ndarray],
                                        n_groups: int) -> StebListCredits:
    """STEB's rule for a similarity-only scorer (one label): ``cross(i, j) [K, K]`` = ``s(g_i[a],
    g_j[b])``, ``within(i) [K, K]`` = ``s(g_i[a], g_i[b])``. The distractor matrices are assembled
    from them as :func:`steb_list_credits` forms them from vectors. (STEB itself has only embedders.)"""
    pairs = list(itertools.combinations(range(n_groups), 2))
    plain, last, first = (np.empty(len(pairs)) for _ in range(3))
    for p, (i, j) in enumerate(pairs):
        c, w = cross(i, j), within(i)
        plain[p] = steb_align_and_score(c)
        last[p] = steb_align_and_score(np.concatenate([c[:-1, :-1], w[:-1, -1:]], axis=1))
        first[p] = steb_align_and_score(np.concatenate([w[1:, :1], c[1:, 1:]], axis=1), offset=1)
    return StebListCredits(tuple(pairs), plain, last, first)


def _steb_credits(scorer: TextScorer, groups: Sequence[Sequence[str]]) -> StebListCredits:
    if scorer.has_vectors:
        texts = [text for group in groups for text in group]
        vectors = scorer.embed(texts).reshape(len(groups), len(groups[0]), -1)
        return steb_list_credits(vectors)
    k = len(groups[0])
    left, right = [], []
    for i, j in itertools.combinations(range(len(groups)), 2):
        for a in range(k):
            left += [groups[i][a]] * k
            right += list(groups[j])
    for group in groups:
        for a in range(k):
            left += [group[a]] * k
            right += list(group)
    sims = _pair_similarities(scorer, left, right)
    n_pairs = len(groups) * (len(groups) - 1) // 2
    cross_block = sims[:n_pairs * k * k].reshape(n_pairs, k, k)
    within_block = sims[n_pairs * k * k:].reshape(len(groups), k, k)
    pair_index = {pair: p for p, pair in enumerate(itertools.combinations(range(len(groups)), 2))}
    return steb_list_credits_from_similarities(lambda i, j: cross_block[pair_index[i, j]],
                                               lambda i: within_block[i], len(groups))


def steb_scores(credits: StebListCredits, *, seed: int = 0,
                n_resamples: int = DEFAULT_RESAMPLES) -> list[Score]:
    """``accuracy_steb`` and ``distractor_accuracy_steb`` from per-pair credits.

    Values are STEB's: ``mean(plain)`` and the mean of the concatenated ``last + first`` lists (as
    ``OrderAlignmentTask.evaluate`` averages them). STEB reports no interval; ours resamples group
    pairs (the distractor interval of the per-pair mean of the two variants), seeded.
    """
    if not credits.pairs:
        return [Score("accuracy_steb", float("nan"), float("nan"), float("nan"), 0),
                Score("distractor_accuracy_steb", float("nan"), float("nan"), float("nan"), 0)]
    accuracy = mean_with_ci(credits.plain, "accuracy_steb", seed=seed, n_resamples=n_resamples)
    value = float(np.mean(np.concatenate([credits.last, credits.first])))
    low, high = bootstrap_ci((credits.last + credits.first) / 2.0, n_boot=n_resamples, seed=seed)
    return [accuracy, Score("distractor_accuracy_steb", value, low, high, len(credits.pairs))]


def evaluate_ordered_lists_steb(scorer: TextScorer, groups: Sequence[Sequence[str]], *, seed: int = 0,
                                n_resamples: int = DEFAULT_RESAMPLES) -> list[Score]:
    """STEB's order alignment (module docstring) on one unit's groups, all of one label: every
    unordered pair of groups, no sampling (``G (G - 1) / 2`` Hungarian problems of size K, three per
    pair). Returns ``accuracy_steb`` and ``distractor_accuracy_steb``; ``n`` = group pairs."""
    if len(groups) < 2 or any(len(group) < 2 for group in groups):
        raise TooFewInstances(f"order alignment needs at least 2 groups of at least 2 ordered texts, got "
                         f"{len(groups)} group(s)")
    if len({len(group) for group in groups}) > 1:
        raise ValueError(f"all groups need the same number of ordered texts, got lengths "
                         f"{sorted({len(group) for group in groups})}")
    return steb_scores(_steb_credits(scorer, groups), seed=seed, n_resamples=n_resamples)


def run_stel(scorer: TextScorer, payload: StelSet, context: TaskContext, *, seed: int,
             n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``) of :func:`evaluate_stel`."""
    return evaluate_stel(scorer, payload.instances, seed=seed, n_resamples=n_boot)


def run_ordered_lists(scorer: TextScorer, payload: OrderedLists, context: TaskContext, *, seed: int,
                      n_boot: int) -> list[Score]:
    """Task-table runner (``tasks.registry``): our :func:`evaluate_ordered_lists` (``accuracy``,
    ``distractor_accuracy``), then STEB's :func:`evaluate_ordered_lists_steb` (``accuracy_steb``,
    ``distractor_accuracy_steb``) on the same groups."""
    return (evaluate_ordered_lists(scorer, payload.lists, seed=seed, n_resamples=n_boot)
            + evaluate_ordered_lists_steb(scorer, payload.lists, seed=seed, n_resamples=n_boot))
