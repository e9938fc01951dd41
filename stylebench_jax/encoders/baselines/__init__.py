"""Non-neural baselines, resolved by the registry as ``baseline:<name>``.

``BASELINES[name](**options)`` builds one. STEL's surface similarities (``char3gram``, ``punctuation``,
``word_length``, ``uppercase``, ``levenshtein``) are ``PairSimilarity`` objects and take no options.
"""

from __future__ import annotations

from collections.abc import Callable

from stylebench_jax.encoders.baselines.stel_surface import STEL_SURFACE


def _no_options(cls):
    def factory(**options):
        del options  # e.g. data_root, which only corpus-fitted baselines use
        return cls()

    factory.__doc__ = cls.__doc__
    return factory


BASELINES: dict[str, Callable[..., object]] = {name: _no_options(cls) for name, cls in STEL_SURFACE.items()}

__all__ = ["BASELINES"]
