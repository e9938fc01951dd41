"""A.3 safety and quality filters: each rule has a configurable threshold and its own drop count.

A record is dropped by the *first* rule it fails, in this order (so the per-rule counts add up to
the drops): ``length:empty`` (L = 0), ``length:min`` / ``length:max`` (per task type),
``unique_token_ratio``, ``symbol_ratio``, ``symbol_run``, ``repeated_char_run``, ``alpha_ratio``,
``alpha_token_ratio``, ``single_letter_ratio``, ``single_letter_run``, ``script``, ``language_id``,
``toxicity``. Formulas (AuthBench A.3; ``w`` = the build tokenizer's content tokens, character
classes in ``textops``):

* unique-token ratio ``|unique(w)| / |w|`` < ``min_unique_token_ratio``;
* symbol ratio ``#symbols / #characters`` > ``max_symbol_ratio`` (whitespace is neither symbol nor
  excluded from the denominator); longest run of consecutive symbols > ``max_symbol_run``;
* longest run of one repeated non-space character > ``max_repeated_char_run``;
* alphabetic ratio ``#letters / #non-space characters`` < ``min_alpha_ratio``;
* alphabetic-token ratio (tokens holding a letter) < ``min_alpha_token_ratio``;
* single-letter density > ``max_single_letter_ratio`` or longest single-letter run >=
  ``max_single_letter_run`` (``textops.token_stats`` defines single-letter tokens);
* script match ``r_script`` = letters in the declared language's scripts / letters, evaluated only
  with at least ``min_script_letters`` letters; drop if < ``min_script_ratio``. A language without a
  known script set is not checked (counted as ``script:unknown_language`` in the manifest);
* language identification (optional hook ``module:function``, texts -> language codes): by
  default, as in A.3, only for texts whose script ratio is undefined (too few letters); drop when
  the predicted code differs from the declared language; ``apply: always`` checks every text;
* toxicity (optional hook, texts -> scores in [0, 1]): drop when score > threshold. None by default:
  no classifier weights can be fetched here, so a user plugs in their own.

Thresholds can be overridden per language (``filters.per_language``).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence

from stylebench_jax.config import InvalidField
from stylebench_jax.data.construct.config import FilterConfig, HookConfig, Thresholds
from stylebench_jax.data.construct.textops import char_stats, script_ratio, token_stats

RULES = ("length:empty", "length:min", "length:max", "unique_token_ratio", "symbol_ratio", "symbol_run",
         "repeated_char_run", "alpha_ratio", "alpha_token_ratio", "single_letter_ratio", "single_letter_run",
         "script", "language_id", "toxicity")


def resolve_hook(hook: HookConfig | None, where: str) -> Callable[[list[str]], Sequence] | None:
    """Import ``module:function`` of a hook; errors name the config key ``where``."""
    if hook is None:
        return None
    module_name, _, name = hook.function.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise InvalidField(f"{where}.function", f"cannot import {module_name!r} ({error})") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise InvalidField(f"{where}.function", f"{module_name!r} has no function {name!r}")
    return function


def rule_failed(text: str, tokens: list[str], word_ids: list, token_length: int, task_type: str,
                language: str, config: FilterConfig,
                counts: dict[str, int]) -> tuple[str | None, float | None]:
    """``(first failed rule or None, script ratio or None)`` for one text (hooks are applied by
    :func:`apply_hooks` on whole batches). ``counts`` gains ``script:unknown_language`` when
    the language has no known script set."""
    low, high = config.length.get(task_type, (1, None))
    if token_length == 0:
        return "length:empty", None
    if token_length < low:
        return "length:min", None
    if high is not None and token_length > high:
        return "length:max", None
    t: Thresholds = config.thresholds_for(language)
    tok = token_stats(tokens, word_ids)
    chars = char_stats(text)
    if t.min_unique_token_ratio is not None and tok["unique_ratio"] < t.min_unique_token_ratio:
        return "unique_token_ratio", None
    symbol_ratio = chars["symbols"] / chars["chars"] if chars["chars"] else 0.0
    if t.max_symbol_ratio is not None and symbol_ratio > t.max_symbol_ratio:
        return "symbol_ratio", None
    if t.max_symbol_run is not None and chars["symbol_run"] > t.max_symbol_run:
        return "symbol_run", None
    if t.max_repeated_char_run is not None and chars["repeated_char_run"] > t.max_repeated_char_run:
        return "repeated_char_run", None
    alpha = chars["letters"] / chars["non_space"] if chars["non_space"] else 0.0
    if t.min_alpha_ratio is not None and alpha < t.min_alpha_ratio:
        return "alpha_ratio", None
    if t.min_alpha_token_ratio is not None and tok["alpha_token_ratio"] < t.min_alpha_token_ratio:
        return "alpha_token_ratio", None
    if t.max_single_letter_ratio is not None and tok["single_ratio"] > t.max_single_letter_ratio:
        return "single_letter_ratio", None
    if t.max_single_letter_run is not None and tok["single_run"] >= t.max_single_letter_run:
        return "single_letter_run", None
    scripts = config.scripts_for(language)
    ratio = None
    if scripts is None:
        counts["script:unknown_language"] = counts.get("script:unknown_language", 0) + 1
    elif chars["letters"] >= t.min_script_letters:
        ratio = script_ratio(chars, scripts)
        if t.min_script_ratio is not None and ratio < t.min_script_ratio:
            return "script", ratio
    return None, ratio


def apply_hooks(texts: list[str], languages: list[str], script_ratios: list[float | None],
                config: FilterConfig, language_id, toxicity) -> list[str | None]:
    """Per text, ``"language_id"``, ``"toxicity"`` or None, from the optional hooks."""
    failed: list[str | None] = [None] * len(texts)
    if language_id is not None:
        check = [i for i, r in enumerate(script_ratios)
                 if config.language_id.apply == "always" or r is None]
        if check:
            predicted = list(language_id([texts[i] for i in check]))
            if len(predicted) != len(check):
                raise ValueError(f"language_id hook returned {len(predicted)} codes for {len(check)} texts")
            for i, code in zip(check, predicted):
                if code != languages[i]:
                    failed[i] = "language_id"
    if toxicity is not None:
        open_ = [i for i in range(len(texts)) if failed[i] is None]
        if open_:
            scores = list(toxicity([texts[i] for i in open_]))
            if len(scores) != len(open_):
                raise ValueError(f"toxicity hook returned {len(scores)} scores for {len(open_)} texts")
            for i, score in zip(open_, scores):
                if float(score) > config.toxicity.threshold:
                    failed[i] = "toxicity"
    return failed
