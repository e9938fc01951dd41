"""Non-neural baselines, resolved by the registry as ``baseline:<name>``.

``BASELINES[name](**options)`` builds one; options that a baseline does not use are ignored.

- STEL's surface similarities (``char3gram``, ``punctuation``, ``word_length``, ``uppercase``,
  ``levenshtein``; ``stel_surface.py``) are ``PairSimilarity`` objects and take no options.
- ``function_words`` (``function_words.py``) is an ``Embedder`` with a fixed vocabulary.
- ``tfidf`` and ``stylometric`` are ``Embedder`` objects fitted on a background corpus drawn from the
  shared data folder; they need ``data_root`` (optional: ``seed``, ``dim`` for ``tfidf``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from stylebench_jax.encoders.baselines.stel_surface import STEL_SURFACE
from stylebench_jax.errors import UserInputError


def _surface(cls):
    def factory(**options):
        del options  # nothing to configure
        return cls()

    factory.__doc__ = cls.__doc__
    return factory


def _needs_data_root(name: str, options: dict) -> Path:
    data_root = options.get("data_root")
    if data_root is None:
        raise UserInputError(f"baseline:{name} is fitted on a background corpus from the shared data "
                             "folder; pass --data-root")
    return Path(data_root)


def function_words(**options):
    from stylebench_jax.encoders.baselines.function_words import FunctionWordEmbedder

    del options
    return FunctionWordEmbedder()


def tfidf(**options):
    from stylebench_jax.encoders.baselines.tfidf import DEFAULT_DIM, TfidfNgramEmbedder

    return TfidfNgramEmbedder(_needs_data_root("tfidf", options), dim=options.get("dim") or DEFAULT_DIM,
                              seed=options.get("seed") or 0)


def stylometric(**options):
    from stylebench_jax.encoders.baselines.stylometric import StylometricEmbedder

    return StylometricEmbedder(_needs_data_root("stylometric", options), seed=options.get("seed") or 0)


BASELINES: dict[str, Callable[..., object]] = {
    **{name: _surface(cls) for name, cls in STEL_SURFACE.items()},
    "function_words": function_words,
    "tfidf": tfidf,
    "stylometric": stylometric,
}

__all__ = ["BASELINES"]
