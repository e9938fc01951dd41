"""Topic representations (RAVEN §4 step 1, §7.3) and topics derived by clustering (§9).

Reference: ``hits/utils/topic_vector.py`` of github.com/jitkapat/hits_authorship (commit 70aa982):
document vectors are L2-normalised (``sklearn.preprocessing.normalize``), a topic's vector is the
mean of its documents' vectors (Eq. 1), and topics are compared by cosine similarity. The document
vectors come from any Embedder (RAVEN: all-MiniLM-L6-v2 through sentence-transformers; here through
our Flax encoder and the embedding cache), from TF-IDF + NMF or from binary bag-of-words + LDA with
RAVEN's defaults (``max_df=0.5, min_df=0.1, max_features=5000, n_components=50``, NMF
``init='random', max_iter=2000``; both ``random_state=0``), fitted on the documents of the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def l2_normalise(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), float64."""
    vectors = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


def topic_vectors(doc_vectors: np.ndarray, doc_topics: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """``(topics sorted, [T, D] float64)``: mean of the L2-normalised vectors of each topic's documents."""
    normalised = l2_normalise(doc_vectors)
    labels = np.asarray(doc_topics)
    topics = sorted(set(doc_topics))
    return topics, np.stack([normalised[labels == topic].mean(axis=0) for topic in topics])


def cosine_matrix(vectors: np.ndarray) -> np.ndarray:
    """``[T, T]`` cosine similarities of the rows of ``vectors`` (float64)."""
    unit = l2_normalise(vectors)
    return unit @ unit.T


def nmf_vectors(texts: Sequence[str], *, n_components: int = 50, seed: int = 0) -> np.ndarray:
    """RAVEN's ``nmf_transform``: TF-IDF (max_df 0.5, min_df 0.1, 5,000 features) -> NMF."""
    from sklearn.decomposition import NMF
    from sklearn.feature_extraction.text import TfidfVectorizer

    tfidf = TfidfVectorizer(max_df=0.5, min_df=0.1, max_features=5000).fit_transform(texts)
    model = NMF(n_components=min(n_components, tfidf.shape[1]), init="random", max_iter=2000,
                random_state=seed)
    return model.fit_transform(tfidf)


def lda_vectors(texts: Sequence[str], *, n_components: int = 50, seed: int = 0) -> np.ndarray:
    """RAVEN's ``lda_transform``: binary bag of words (max_df 0.5, min_df 0.1, 5,000 features) -> LDA."""
    from sklearn.decomposition import LatentDirichletAllocation
    from sklearn.feature_extraction.text import CountVectorizer

    counts = CountVectorizer(max_df=0.5, min_df=0.1, max_features=5000, binary=True).fit_transform(texts)
    return LatentDirichletAllocation(n_components=n_components, random_state=seed).fit_transform(counts)


def derive_topics(texts: Sequence[str], doc_vectors: np.ndarray, *, n_topics: int, seed: int) -> list[str]:
    """Topic label per document: k-means (scikit-learn, ``n_init=10``, ``random_state=seed``) on the
    L2-normalised ``doc_vectors`` (spherical k-means up to the centroid norm). Each cluster is named
    ``T07 (oil, crude, opec)`` by its three highest mean TF-IDF words (English stop words removed),
    numbered by decreasing size (ties: first document). Clusters k-means leaves empty (fewer distinct
    vectors than ``n_topics``) are not numbered; texts without a non-stop-word give names without words
    (``T07``). ``ValueError`` when ``n_topics`` exceeds the number of distinct vectors."""
    import warnings

    from sklearn.cluster import KMeans
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectors = l2_normalise(doc_vectors)
    distinct = len(np.unique(np.round(vectors, 12), axis=0))
    if n_topics > distinct:
        raise ValueError(f"cannot derive {n_topics} topics from {len(texts)} documents with {distinct} "
                         "distinct embeddings")
    kmeans = KMeans(n_clusters=n_topics, n_init=10, random_state=seed)
    with warnings.catch_warnings():  # near-identical vectors: fewer clusters is reported by the names
        warnings.simplefilter("ignore", ConvergenceWarning)
        clusters = kmeans.fit_predict(vectors)
    tfidf = TfidfVectorizer(stop_words="english", max_features=20000)
    try:
        weights = tfidf.fit_transform(texts)
        vocabulary = np.asarray(tfidf.get_feature_names_out())
    except ValueError:  # empty vocabulary: every word a stop word (or no word at all)
        weights, vocabulary = None, None
    present = np.unique(clusters)
    sizes = np.bincount(clusters, minlength=n_topics)
    first = {int(c): int(np.flatnonzero(clusters == c)[0]) for c in present}
    order = sorted(first, key=lambda c: (-sizes[c], first[c]))
    names = {}
    for rank, cluster in enumerate(order):
        if weights is None:
            names[cluster] = f"T{rank:02d}"
            continue
        mean = np.asarray(weights[clusters == cluster].mean(axis=0)).ravel()
        top = vocabulary[np.argsort(-mean, kind="stable")[:3]]
        names[cluster] = f"T{rank:02d} ({', '.join(top)})"
    return [names[int(c)] for c in clusters]
