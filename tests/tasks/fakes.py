"""Fake scorers shared by the task tests."""

import numpy as np


class FixedEmbedder:
    """Fake embedder: a fixed vector per text."""

    name, identity = "fixed", "fixed:v1"

    def __init__(self, vectors):
        self.vectors = {t: np.asarray(v, dtype=np.float32) for t, v in vectors.items()}
        self.dim = len(next(iter(self.vectors.values())))

    def embed(self, texts):
        return np.stack([self.vectors[t] for t in texts])
