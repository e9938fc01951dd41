"""``stylebench raven`` end to end: corpus -> topics -> HITS and random datasets -> folds x methods ->
PAN metrics -> RAVEN's tables -> ``raven.json`` (+ report, written by the command).

Order of work (user errors come before any long computation): resolve every embedder, load the
corpus, check that it has enough topics for ``sampling.n_topics`` (corpora with topic labels), embed
(through the embedding cache), derive topics if asked, sample, then run the methods.

Resume: each (dataset, fold, method) result - the test probabilities and what was fitted - is
written atomically to ``DIR/folds/<dataset>/fold_<k>/<method>.json`` as soon as it is computed, with
a fingerprint of everything that determines it: the method's identity (options, embedder identity and
embedding-code digest), the digests of the fold's training documents and of its training and test
pairs (texts and labels), and a digest of the code that computes predictions (``raven/methods.py``,
``raven/ppm.py``, ``metrics/pan.py``). A later run reuses a stored result whose fingerprint matches
(``force`` recomputes). Metrics and tables are recomputed from the stored predictions on every run.
``metrics.overall``/``metrics.f05u`` are part of the calibrated methods' identity, since p1/p2
calibration maximises that overall on the training pairs.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np

from stylebench_jax.config import InvalidField, config_to_dict
from stylebench_jax.fileio import json_ready, write_text_atomic
from stylebench_jax.metrics.pan import OVERALL_PARTS, pan_metrics
from stylebench_jax.progress import progress_bar
from stylebench_jax.raven import analysis
from stylebench_jax.raven.config import RavenConfig
from stylebench_jax.raven.corpus import (
    NO_TOPIC,
    Corpus,
    bible_documents,
    built_documents,
    file_documents,
    filter_topics,
    reuters_documents,
    with_topics,
)
from stylebench_jax.raven.methods import (
    CalibratedTfidf,
    Calibration,
    EmbedderCosine,
    MethodResult,
    PPMMethod,
    TermCounts,
)
from stylebench_jax.raven.ppm import PPMTables
from stylebench_jax.raven.sampling import (
    SampledDataset,
    build_dataset,
    check_both_classes,
    group_topics,
    hits_select,
    most_similar_pairs,
    random_select,
    split_similarity,
    topic_folds,
)
from stylebench_jax.raven.topics import cosine_matrix, derive_topics, lda_vectors, nmf_vectors, topic_vectors
from stylebench_jax.sources import source_digest

PREDICTION_CODE = ("raven/methods.py", "raven/ppm.py", "metrics/pan.py")


@dataclasses.dataclass(frozen=True)
class RavenRequest:
    config: RavenConfig
    output_dir: Path
    data_root: Path
    cache_dir: Path | None = None
    use_cache: bool = True
    force: bool = False
    progress: bool = True


@dataclasses.dataclass
class RavenOutcome:
    report: dict[str, Any]  # the content of raven.json
    run_info: dict[str, Any]
    computed: int
    reused: int


# --------------------------------------------------------------------------- preparation


def resolve_embedders(config: RavenConfig, data_root: Path, progress: bool) -> dict[str, Any]:
    """Every embedder the config names (``methods.embedders``, the topic embedder, the one deriving
    topics), resolved once by name. Raises ``InvalidField`` naming the config key of a bad name."""
    from stylebench_jax.encoders.base import Embedder
    from stylebench_jax.encoders.registry import resolve_embedder
    from stylebench_jax.errors import UserInputError

    wanted = [(f"methods.embedders[{i}]", name) for i, name in enumerate(config.methods.embedders)]
    if config.sampling.representation == "embedding":
        wanted.append(("sampling.topic_embedder", config.sampling.topic_embedder))
    if config.corpus.derive_topics is not None:
        wanted.append(("corpus.derive_topics.embedder", config.corpus.derive_topics.embedder))
    options = {"progress": progress, "data_root": data_root}
    if config.batch_size is not None:
        options["batch_size"] = config.batch_size
    resolved: dict[str, Any] = {}
    for key, name in wanted:
        if name in resolved:
            continue
        try:
            embedder = resolve_embedder(name, **options)
        except UserInputError as error:
            raise InvalidField(key, str(error)) from None
        if not isinstance(embedder, Embedder):
            raise InvalidField(key, f"{name!r} is a pair similarity, not an embedder (no vectors to average "
                                    "or compare by cosine)")
        resolved[name] = embedder
    return resolved


def load_corpus(config: RavenConfig, data_root: Path) -> Corpus:
    """The configured corpus, checked for what every run needs: two authors, and a topic on every
    document unless topics are derived (``InvalidField`` naming the config key)."""
    spec = config.corpus
    if spec.name == "bible_8_versions":
        corpus = bible_documents(data_root, verses_per_passage=spec.bible.verses_per_passage,
                                 passages_per_book=spec.bible.passages_per_book, seed=spec.seed)
    elif spec.name == "reuters_c50":
        corpus = reuters_documents(data_root, articles_per_author=spec.reuters.articles_per_author,
                                   lead_words=spec.reuters.lead_words, seed=spec.seed)
    elif spec.name == "file":
        corpus = file_documents(spec.file.path, file_format=spec.file.resolved_format, text=spec.file.text,
                                author=spec.file.author, topic=spec.file.topic)
    else:
        corpus = built_documents(spec.built.path, spec.built.split_names)
    authors = {doc.author for doc in corpus.documents}
    if len(authors) < 2:
        raise InvalidField(f"corpus.{spec.name if spec.name in ('file', 'built') else 'name'}",
                           f"{corpus.name}: verification pairs need documents of at least two authors, "
                           f"found {len(authors)}")
    untopical = sum(doc.topic == NO_TOPIC for doc in corpus.documents)
    if untopical and spec.derive_topics is None and spec.name != "reuters_c50":
        raise InvalidField("corpus.derive_topics", f"{corpus.name}: {untopical} of {len(corpus.documents)} "
                                                   "documents have no topic; set derive_topics (e.g. "
                                                   "{n_topics: 60}) to cluster documents into topics")
    return corpus


def _eligible(config: RavenConfig, corpus: Corpus) -> Corpus:
    """Topics with enough documents (capped per topic); fails when fewer than m (or a sweep m) remain."""
    corpus = filter_topics(corpus, min_docs=config.corpus.min_docs_per_topic,
                           docs_per_topic=config.corpus.docs_per_topic, seed=config.corpus.seed)
    available = len({d.topic for d in corpus.documents})
    needed = max([config.sampling.n_topics, *config.sampling.sweep])
    if available < needed:
        key = "sampling.n_topics" if available < config.sampling.n_topics else "sampling.sweep"
        derived = config.corpus.derive_topics
        hint = (f"; corpus.derive_topics.n_topics {derived.n_topics} clusters leave few topics with that "
                "many documents" if derived is not None else "")
        raise InvalidField(key, f"{needed} topics needed but {corpus.name} has {available} "
                                f"topic{'s' if available != 1 else ''} with >= "
                                f"{config.corpus.min_docs_per_topic} documents{hint}")
    return corpus


# --------------------------------------------------------------------------- the run


class Embeddings:
    """Corpus vectors per embedder, computed once through the embedding cache."""

    def __init__(self, embedders: dict[str, Any], texts: list[str], cache, progress: bool):
        self.embedders, self.texts, self.cache, self.progress = embedders, texts, cache, progress
        self._vectors: dict[str, np.ndarray] = {}

    def __call__(self, name: str) -> np.ndarray:
        if name not in self._vectors:
            if self.progress:
                print(f"embedding {len(self.texts)} documents with {name}", file=sys.stderr)
            self._vectors[name] = np.asarray(self.cache.embed(self.embedders[name], self.texts), np.float64)
        return self._vectors[name]

    def normalised(self, name: str) -> np.ndarray:
        from stylebench_jax.raven.topics import l2_normalise

        return l2_normalise(self(name))


def run_raven(request: RavenRequest) -> RavenOutcome:
    """Run the whole protocol (module docstring) and return ``raven.json``'s content and run info."""
    from stylebench_jax.cache import EmbeddingCache, space_label

    config, started = request.config, time.perf_counter()
    timing: dict[str, float] = {}
    embedders = resolve_embedders(config, request.data_root, request.progress)
    corpus = load_corpus(config, request.data_root)
    derive = config.corpus.derive_topics
    if derive is None:
        corpus = _eligible(config, corpus)
    elif derive.n_topics > len(corpus.documents):  # found before the corpus is embedded
        raise InvalidField("corpus.derive_topics.n_topics", f"{corpus.name}: cannot derive {derive.n_topics} "
                                                            f"topics from {len(corpus.documents)} documents")
    timing["load_seconds"] = time.perf_counter() - started

    cache = EmbeddingCache(request.cache_dir, enabled=request.use_cache)
    mark = time.perf_counter()
    if derive is not None:
        vectors = Embeddings(embedders, corpus.texts, cache, request.progress)(derive.embedder)
        try:
            topics = derive_topics(corpus.texts, vectors, n_topics=derive.n_topics, seed=derive.seed)
        except ValueError as error:
            raise InvalidField("corpus.derive_topics.n_topics", f"{corpus.name}: {error}") from None
        corpus = _eligible(config, with_topics(corpus, topics, f"topics: k-means ({derive.n_topics} "
                                                               f"clusters) on {derive.embedder} embeddings"))
    texts = corpus.texts
    embeddings = Embeddings(embedders, texts, cache, request.progress)
    representation = _representation(config, texts, embeddings)
    timing["topics_seconds"] = time.perf_counter() - mark

    datasets = sample_datasets(config, corpus, representation)
    similarity = similarity_tables(config, corpus, representation, datasets)
    methods = build_methods(config, texts, embeddings, {n: space_label(e) for n, e in embedders.items()})

    mark = time.perf_counter()
    predictions, counts = run_methods(datasets, methods, texts, Path(request.output_dir) / "folds",
                                      force=request.force, progress=request.progress)
    timing["methods_seconds"] = time.perf_counter() - mark
    report = build_report(config, corpus, datasets, list(methods), predictions, similarity)
    timing["wall_seconds"] = time.perf_counter() - started
    run_info = {"timing": {k: round(v, 3) for k, v in timing.items()},
                "fold_results": counts, "cache": {"enabled": request.use_cache, "root": str(cache.root),
                                                  "hits": cache.hits, "misses": cache.misses},
                "embedders": {name: space_label(e) for name, e in embedders.items()}}
    return RavenOutcome(report, run_info, counts["computed"], counts["reused"])


def _representation(config: RavenConfig, texts: list[str], embeddings: Embeddings) -> np.ndarray:
    """``[N, D]`` per-document vectors the topic vectors are averaged from."""
    sampling = config.sampling
    if sampling.representation == "embedding":
        return embeddings(sampling.topic_embedder)
    make = nmf_vectors if sampling.representation == "nmf" else lda_vectors
    try:
        return make(texts, n_components=sampling.n_components)
    except ValueError as error:  # scikit-learn: "After pruning, no terms remain" (was a traceback)
        if "no terms remain" not in str(error):
            raise
        raise InvalidField("sampling.representation", f"{sampling.representation}: no word is in 10-50% of "
                           f"the {len(texts)} documents (RAVEN's min_df 0.1 / max_df 0.5), so there is no "
                           "vocabulary to fit topics on; use representation embedding") from None


def select_topics(config: RavenConfig, names: list[str], similarity: np.ndarray, m: int) -> list[tuple]:
    """``[(dataset name, kind, seed, selected topics, topic -> dataset topic)]`` for HITS and one
    random sample per seed, both with ``sampling.strategy``: cutting keeps the selected topics only;
    grouping merges every other topic into the selected topic it is most similar to, for the random
    samples too (RAVEN §7.2 describes grouping for HITS only; grouping the controls the same way keeps
    HITS and random datasets the same size, so their comparison is not one of dataset sizes)."""
    grouping = config.sampling.strategy == "grouping"

    def mapping(selected: list[int]) -> dict[str, str]:
        if grouping:
            return {names[t]: names[selected[g]] for t, g in enumerate(group_topics(similarity, selected))}
        return {names[t]: names[t] for t in selected}

    chosen = hits_select(similarity, m)
    out = [("hits", "hits", None, [names[t] for t in chosen], mapping(chosen))]
    for seed in config.sampling.random_seeds:
        picked = random_select(len(names), m, seed)  # sorted indices of the sorted names
        out.append((f"random_{seed}", "random", seed, [names[t] for t in picked], mapping(picked)))
    return out


def _corpus_topics(corpus: Corpus, representation: np.ndarray) -> tuple[list[str], np.ndarray]:
    names, vectors = topic_vectors(representation, [d.topic for d in corpus.documents])
    return names, cosine_matrix(vectors)


def sample_datasets(config: RavenConfig, corpus: Corpus, representation: np.ndarray) -> list[SampledDataset]:
    """The HITS and random datasets of ``select_topics`` with their folds and pairs. A fold whose
    training or test side has documents of one author only, or no same-author pair, is an
    ``InvalidField`` (``sampling.k_folds``) raised here, before any method runs."""
    sampling = config.sampling
    names, similarity = _corpus_topics(corpus, representation)
    doc_topics = [d.topic for d in corpus.documents]
    authors = [d.author for d in corpus.documents]
    datasets = []
    for name, kind, seed, topics, mapping in select_topics(config, names, similarity, sampling.n_topics):
        try:
            doc_topic = [mapping.get(t, "") for t in doc_topics]
            dataset = build_dataset(name, kind, seed, topics, doc_topic, authors, k=sampling.k_folds,
                                    fold_seed=sampling.fold_seed, pair_seed=sampling.pair_seed)
            check_both_classes(dataset)
        except ValueError as error:
            raise InvalidField("sampling.k_folds", f"{error}; every fold needs several authors and an author "
                                                   "with two documents on each side: use fewer folds, fewer "
                                                   "topics (sampling.n_topics) or a corpus whose topics hold "
                                                   "several authors") from None
        datasets.append(dataset)
    return datasets


def _split_similarities(representation: np.ndarray, doc_topic: Sequence[str], splits) -> tuple:
    """``([(mean, max)] per split, matrix, index)`` with topic vectors of the dataset's own topics
    (the groups, with grouping) averaged over its documents."""
    docs = [i for i, t in enumerate(doc_topic) if t]
    names, vectors = topic_vectors(representation[docs], [doc_topic[i] for i in docs])
    matrix, index = cosine_matrix(vectors), {name: i for i, name in enumerate(names)}
    return [split_similarity(matrix, index, train, test) for train, test in splits], matrix, index


def _random_top_pairs(parts, top: int = 5) -> list[dict]:
    """Table 6's random row over every random dataset, each pair's similarity from its own dataset's
    topic vectors (as the HITS row's): with grouping a group named after a selected topic holds
    different books in different samples, so a corpus-wide topic matrix would rate the random pairs on
    other vectors than the HITS pairs. A pair met in several samples is listed once, at its highest
    similarity (with cutting every sample rates it the same)."""
    merged: dict[frozenset, dict] = {}
    for matrix, index, splits in parts:
        for pair in most_similar_pairs(matrix, index, splits, top=top):
            key = frozenset((pair["train_topic"], pair["test_topic"]))
            if key not in merged or pair["similarity"] > merged[key]["similarity"]:
                merged[key] = pair
    ranked = sorted(merged.values(), key=lambda p: (-p["similarity"], p["train_topic"], p["test_topic"]))
    return ranked[:top]


def similarity_tables(config: RavenConfig, corpus: Corpus, representation: np.ndarray,
                      datasets: Sequence[SampledDataset]) -> dict:
    """Table 7 (train/test topic similarity per split) for m and each sweep m; Table 6 (top pairs)."""
    per_fold, top_pairs = {}, {"hits": [], "random": []}
    random_parts = []
    for dataset in datasets:
        splits = [(f.train_topics, f.test_topics) for f in dataset.folds]
        per_fold[dataset.name], matrix, index = _split_similarities(representation, dataset.doc_topic, splits)
        if dataset.kind == "hits":
            top_pairs["hits"] = most_similar_pairs(matrix, index, splits)
        else:
            random_parts.append((matrix, index, splits))
    top_pairs["random"] = _random_top_pairs(random_parts)
    names, corpus_matrix = _corpus_topics(corpus, representation)
    summary = analysis.similarity_summary(per_fold)
    summary["per_fold"] = {name: [{"mean": a, "max": b} for a, b in values]
                           for name, values in per_fold.items()}
    sweep = []
    doc_topics = [d.topic for d in corpus.documents]
    for m in sorted(set(config.sampling.sweep) | {config.sampling.n_topics}):
        folds_m = {}
        for name, _, _, topics, mapping in select_topics(config, names, corpus_matrix, m):
            tests = topic_folds(topics, config.sampling.k_folds, config.sampling.fold_seed, name)
            splits = [(tuple(sorted(set(topics) - set(test))), tuple(test)) for test in tests]
            folds_m[name] = _split_similarities(representation, [mapping.get(t, "") for t in doc_topics],
                                                splits)[0]
        entry = analysis.similarity_summary(folds_m)
        sweep.append({"n_topics": m, "hits": entry["hits"],
                      "random": {k: entry["random"][k] for k in ("mean", "max")}})
    return {**summary, "most_similar_pairs": top_pairs, "sweep": sweep}


# --------------------------------------------------------------------------- methods and resume


def build_methods(config: RavenConfig, texts: list[str], embeddings: Embeddings,
                  labels: dict[str, str]) -> dict[str, Any]:
    """Method name -> method object, in report order: char_ngram, ppm, topic_fit, then embedders."""
    m = config.methods
    calibration = Calibration(m.grid_step, config.metrics.overall, config.metrics.f05u)
    methods: dict[str, Any] = {}
    if m.char_ngram.enabled:
        char_counts = _once(lambda: TermCounts(texts, analyzer="char", n=m.char_ngram.n))
        methods["char_ngram"] = CalibratedTfidf(
            "char_ngram", analyzer="char", n=m.char_ngram.n, max_features=m.char_ngram.max_features,
            calibration=calibration, counts=char_counts)
    if m.ppm.enabled:
        methods["ppm"] = PPMMethod(_once(lambda: PPMTables(texts, order=m.ppm.order)), order=m.ppm.order,
                                   radius=m.ppm.radius, features=m.ppm.features)
    if m.topic_fit.enabled:
        word_counts = _once(lambda: TermCounts(texts, analyzer="word", n=1))
        methods["topic_fit"] = CalibratedTfidf("topic_fit", analyzer="word", n=1,
                                               max_features=m.topic_fit.max_features, calibration=calibration,
                                               mask_top_k=m.topic_fit.mask_top_k, counts=word_counts)
    for name in m.embedders:
        methods[name] = EmbedderCosine(name, labels[name], lambda name=name: embeddings.normalised(name),
                                       calibration)
    return methods


def _once(build):
    """``build()`` on the first call, the same object afterwards (corpus-wide tables are built only
    when a fold result actually has to be computed)."""
    made: list = []

    def get():
        if not made:
            made.append(build())
        return made[0]

    return get


def _digest(*parts: Any) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode("utf-8")).hexdigest()[:24]


def fold_fingerprint(identity: str, text_hashes: Sequence[str], fold) -> str:
    def pairs(p):
        return [[text_hashes[a], text_hashes[b], int(y)] for a, b, y in zip(p.first, p.second, p.labels)]

    return _digest(identity, source_digest(*PREDICTION_CODE), [text_hashes[i] for i in fold.train_docs],
                   pairs(fold.train_pairs), pairs(fold.test_pairs))


def result_path(folds_dir: Path, dataset: str, fold: int, method: str) -> Path:
    return Path(folds_dir) / dataset / f"fold_{fold:02d}" / f"{quote(method, safe='')}.json"


def _read_result(path: Path, fingerprint: str) -> np.ndarray | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("fingerprint") != fingerprint:
            return None
        return np.asarray(data["probs"], dtype=np.float64)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or unreadable: recomputed


def run_methods(datasets: Sequence[SampledDataset], methods: dict[str, Any], texts: list[str],
                folds_dir: Path, *, force: bool, progress: bool) -> tuple[dict, dict]:
    """``predictions[dataset][method] = [test probs per fold]``; stored results reused (module docstring)."""
    text_hashes = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).hexdigest()[:16] for t in texts]
    work = [(d, f, name) for d in datasets for f in d.folds for name in methods]
    for _, fold, name in work:  # settings a fold cannot satisfy fail before the first fit
        check = getattr(methods[name], "check", None)
        if check is not None:
            check(fold)
    predictions: dict[str, dict[str, list]] = {d.name: {name: [] for name in methods} for d in datasets}
    counts = {"computed": 0, "reused": 0, "seconds": {name: 0.0 for name in methods}}
    bar = progress_bar(work, desc="folds x methods", unit="fit", enabled=progress)
    for dataset, fold, name in bar:
        bar.set_postfix_str(f"{dataset.name} fold {fold.index} {name}", refresh=False)
        method = methods[name]
        fingerprint = fold_fingerprint(method.identity, text_hashes, fold)
        path = result_path(folds_dir, dataset.name, fold.index, name)
        probs = None if force else _read_result(path, fingerprint)
        if probs is not None and probs.size == len(fold.test_pairs):
            counts["reused"] += 1
        else:
            start = time.perf_counter()
            result: MethodResult = method.run(texts, fold)
            seconds = time.perf_counter() - start
            counts["seconds"][name] += seconds
            probs = np.asarray(result.probs, dtype=np.float64)
            write_text_atomic(path, json.dumps({
                "dataset": dataset.name, "fold": fold.index, "method": name, "identity": method.identity,
                "fingerprint": fingerprint, "fitted": result.fitted,  # seconds: run_info.json only
                "labels": fold.test_pairs.labels.tolist(), "probs": probs.tolist()}) + "\n")
            counts["computed"] += 1
        predictions[dataset.name][name].append(probs)
    counts["seconds"] = {k: round(v, 3) for k, v in counts["seconds"].items()}
    return predictions, counts


# --------------------------------------------------------------------------- tables


def metric_names(config: RavenConfig) -> list[str]:
    return [*OVERALL_PARTS[config.metrics.overall], "overall"]


def fold_scores(config: RavenConfig, datasets: Sequence[SampledDataset], predictions: dict) -> dict:
    """``scores[dataset][method][metric] = [k]`` PAN metrics of each fold's test pairs."""
    scores: dict = {}
    for dataset in datasets:
        scores[dataset.name] = {}
        for method, per_fold in predictions[dataset.name].items():
            rows = []
            for fold, probs in zip(dataset.folds, per_fold):
                try:
                    rows.append(pan_metrics(probs, fold.test_pairs.labels, overall=config.metrics.overall,
                                            f05u=config.metrics.f05u))
                except ValueError as error:
                    raise ValueError(f"{dataset.name} fold {fold.index} ({method}): {error}") from None
            scores[dataset.name][method] = {metric: [row[metric] for row in rows]
                                            for metric in (*OVERALL_PARTS["pan21"], "overall")}
    return scores


def dataset_summary(dataset: SampledDataset, authors: Sequence[str]) -> dict:
    def stats(fold):
        return {"test_topics": list(fold.test_topics), "train_pairs": len(fold.train_pairs),
                "test_pairs": len(fold.test_pairs),
                "train_positive": int(fold.train_pairs.labels.sum()),
                "test_positive": int(fold.test_pairs.labels.sum()),
                "train_authors": len({authors[i] for i in fold.train_docs}),
                "test_authors": len({authors[i] for i in fold.test_docs}),
                "train_documents": int(fold.train_docs.size), "test_documents": int(fold.test_docs.size)}

    return {"kind": dataset.kind, "seed": dataset.seed, "topics": list(dataset.topics),
            "documents": int(dataset.documents.size), "folds": [stats(f) for f in dataset.folds]}


def build_report(config: RavenConfig, corpus: Corpus, datasets: Sequence[SampledDataset], models: list[str],
                 predictions: dict, similarity: dict) -> dict:
    """The content of ``raven.json`` (no timings: the same inputs give the same bytes)."""
    scores = fold_scores(config, datasets, predictions)
    metrics = metric_names(config)
    authors = [d.author for d in corpus.documents]
    return {
        "protocol": "RAVEN/HITS (Sawatphol et al.): topic-heterogeneous sampling, cross-topic folds, PAN "
                    "metrics, topic-shortcut test, ranking stability",
        "config": config_to_dict(config),
        "corpus": corpus.stats(),
        "models": models,
        "metrics_reported": metrics,
        "topic_similarity": {key: similarity[key] for key in ("hits", "random", "hits_lower", "per_fold")},
        "topic_similarity_sweep": similarity["sweep"],
        "most_similar_pairs": similarity["most_similar_pairs"],
        "datasets": {d.name: dataset_summary(d, authors) for d in datasets},
        "scores": analysis.model_scores(scores, models, metrics),
        "shortcut": {"metric": "overall", "rows": analysis.shortcut_table(scores, models, "overall"),
                     "by_metric": {m: analysis.shortcut_table(scores, models, m) for m in metrics}},
        "stability": analysis.stability_table(scores, models, metrics)["rows"],
        "mean_rank": {"metric": "overall", "rows": analysis.mean_rank_table(scores, models, "overall")},
        "fold_scores": scores,
    }


def write_json(path: Path, data: dict) -> None:
    """``data`` as indented JSON, atomically; NaN and infinities (undefined values) become null."""
    write_text_atomic(path, json.dumps(json_ready(data), indent=1, allow_nan=False) + "\n")


