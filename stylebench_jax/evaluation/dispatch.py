"""Map a unit's task name and payload (schemas in ``data.units``) to its protocol in ``tasks/``.

``TaskDispatcher(task, scorer, payload, *, seed, n_boot) -> list[Score]`` (first = primary metric).
It also holds what several models can share for one unit: the probing targets (spaCy linguistic
features of the texts) are computed once per text list, not once per model, and the spaCy
pipeline is loaded once. Task modules are imported when first needed, so a STEL-only run does
not load the JAX kernels or spaCy.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from stylebench_jax.tasks.base import Score, TextScorer


def _texts_digest(texts: Sequence[str]) -> str:
    digest = hashlib.sha256()
    for text in texts:
        digest.update(len(text).to_bytes(8, "little"))
        digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class TaskDispatcher:
    """Runs one task protocol on one payload; ``mesh`` goes to the all-to-all pair kernel."""

    def __init__(self, *, mesh=None):
        self.mesh = mesh
        self._features: dict[str, tuple[np.ndarray, list[str]]] = {}
        self._nlp = None

    def __call__(self, task: str, scorer: TextScorer, payload: dict, *, seed: int,
                 n_boot: int) -> list[Score]:
        if task == "clustering":
            from stylebench_jax.tasks.clustering import evaluate_clustering

            return evaluate_clustering(scorer, payload["texts"], payload["labels"], seed=seed, n_boot=n_boot)
        if task == "pair_all":
            from stylebench_jax.tasks.pair_classification import evaluate_all_to_all

            return evaluate_all_to_all(scorer, payload["texts"], payload["labels"], seed=seed, n_boot=n_boot,
                                       mesh=self.mesh)
        if task == "pair_predefined":
            from stylebench_jax.tasks.pair_classification import evaluate_predefined_pairs

            pairs = list(zip(payload["a"], payload["b"], payload["labels"]))
            return evaluate_predefined_pairs(scorer, pairs, seed=seed, n_boot=n_boot)
        if task == "retrieval":
            from stylebench_jax.tasks.retrieval import evaluate_retrieval

            return evaluate_retrieval(scorer, payload["query_texts"], payload["query_labels"],
                                      payload["target_texts"], payload["target_labels"], seed=seed,
                                      n_boot=n_boot)
        if task == "order_quad":
            from stylebench_jax.tasks.order_alignment import evaluate_stel

            return evaluate_stel(scorer, payload["instances"], seed=seed, n_resamples=n_boot)
        if task == "order_list":
            from stylebench_jax.tasks.order_alignment import evaluate_ordered_lists

            return evaluate_ordered_lists(scorer, payload["lists"], seed=seed, n_resamples=n_boot)
        if task == "probing":
            return self._probing(scorer, payload["texts"], seed=seed, n_boot=n_boot)
        raise ValueError(f"no protocol for task {task!r}")

    def _probing(self, scorer: TextScorer, texts: Sequence[str], *, seed: int, n_boot: int) -> list[Score]:
        from stylebench_jax.tasks.probing import evaluate_probing

        if not scorer.has_vectors:  # let the task raise NotApplicable before any spaCy work
            return evaluate_probing(scorer, texts, seed=seed, n_boot=n_boot)
        features, names = self.linguistic_features(texts)
        return evaluate_probing(scorer, texts, features=features, feature_names=names, seed=seed,
                                n_boot=n_boot)

    def linguistic_features(self, texts: Sequence[str]) -> tuple[np.ndarray, list[str]]:
        """``([N, F] float64, names [F])`` for ``texts``, computed once per distinct text list."""
        from stylebench_jax.text.features import linguistic_features, load_pipeline

        key = _texts_digest(texts)
        if key not in self._features:
            if self._nlp is None:
                self._nlp = load_pipeline()
            self._features[key] = linguistic_features(list(texts), self._nlp)
        return self._features[key]
