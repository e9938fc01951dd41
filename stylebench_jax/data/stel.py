"""STEL task instances: loader and validation for the public STEL TSV files.

Source: STEL, Wegmann & Nguyen (EMNLP 2021), "Does It Capture STEL? A Modular, Similarity-based
Linguistic Style Evaluation Framework", public data at github.com/nlpsoc/STEL (``Data/STEL/``, MIT; the
formal sample falls under Yahoo's terms of use). The shared copy lives in ``<data_root>/stel``.

Format (``<data_root>/stel/README.txt``): UTF-8, tab-separated, header row, fields may hold quoted
newlines, so the file is read with the ``csv`` module (``delimiter="\\t"``), never line by line. Columns::

    <unnamed index> | Anchor 1 | Anchor 2 | Alternative 1.1 | Alternative 1.2 | Correct Alternative | ID |
    # Votes out of 5 for Correct Alternative | style type

Anchor 1 / Anchor 2 are one content in two opposite styles; Alternative 1.1 / 1.2 another content pair
in unknown order. ``Correct Alternative`` is 1 when A1~S1 and A2~S2, 2 when A1~S2 and A2~S1. Votes are
crowd votes (of 5) for the correct answer on the dimension files, empty or ``-`` on the characteristic
files. Any deviation raises ``UserInputError`` naming ``file:line:column`` and the field.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from collections.abc import Iterable
from pathlib import Path

from stylebench_jax.data.readers import read_text
from stylebench_jax.errors import UserInputError, located

HEADER = ("", "Anchor 1", "Anchor 2", "Alternative 1.1", "Alternative 1.2", "Correct Alternative", "ID",
          "# Votes out of 5 for Correct Alternative", "style type")

# component -> file below <data_root>/stel (the four of the 2021 paper first, then later additions)
STEL_FILES = {
    "formality": "dimensions/quad_stel-dimension_formal-100_sample.tsv",
    "simplicity": "dimensions/quad_stel-dimension_simple-100_sample.tsv",
    "contraction": "characteristics/quad_questions_char_contraction.tsv",
    "nbr_substitution": "characteristics/quad_questions_char_substitution.tsv",
    "emotives": "characteristics/quad_questions_char_emotives.tsv",
    "em-subj-pronoun": "characteristics/quad_questions_em-subj-pronoun_100.tsv",
    "definite-abstract": "characteristics/quad_questions_definite-abstract_100.tsv",
}
PAPER_COMPONENTS = ("formality", "simplicity", "contraction", "nbr_substitution")

# STEL's CLASS_THRESH: dimension instances need at least 3 of 5 votes for the correct answer.
MIN_VOTES = 3


@dataclasses.dataclass(frozen=True)
class StelInstance:
    """One STEL quadruple. ``correct`` is 1 (order S1-S2) or 2 (order S2-S1); ``votes`` None if not given."""

    anchor1: str
    anchor2: str
    alt1: str
    alt2: str
    correct: int
    id: str
    votes: int | None
    style_type: str


def _records(path: Path) -> Iterable[tuple[int, list[str]]]:
    """``(first physical line number, fields)`` per CSV record; CSV errors name the record's line."""
    reader = csv.reader(io.StringIO(read_text(path), newline=""), delimiter="\t", strict=True)
    start = 1
    while True:
        try:
            fields = next(reader)
        except StopIteration:
            return
        except csv.Error as error:
            raise located(path, f"malformed TSV ({error}); expected tab-separated fields with "
                          "quotes closed", line=start) from None
        yield start, fields
        start = reader.line_num + 1


def _parse_votes(raw: str) -> int | None | bool:
    """Vote count 0..5 (``"4"`` or ``"4.0"``), None for ``""``/``"-"``, False if malformed."""
    raw = raw.strip()
    if raw in ("", "-"):
        return None
    try:
        value = float(raw)
    except ValueError:
        return False
    if not value.is_integer() or not 0 <= value <= 5:
        return False
    return int(value)


def _parse_row(path: Path, line: int, fields: list[str]) -> StelInstance:
    if len(fields) != len(HEADER):
        raise located(path, f"expected {len(HEADER)} tab-separated fields, found {len(fields)}", line=line)
    for column in range(1, 5):
        if not fields[column].strip():
            raise located(path, "empty text; expected a sentence", line=line, column=column + 1,
                          field=HEADER[column])
    correct = fields[5].strip()
    if correct not in ("1", "2"):
        raise located(path, f"expected 1 or 2, found {fields[5]!r}", line=line, column=6, field=HEADER[5])
    identifier = fields[6].strip()
    if not identifier:
        raise located(path, "empty ID", line=line, column=7, field=HEADER[6])
    votes = _parse_votes(fields[7])
    if votes is False:
        raise located(path, f"expected a vote count 0..5, '-' or nothing, found {fields[7]!r}",
                      line=line, column=8, field=HEADER[7])
    style_type = fields[8].strip()
    if not style_type:
        raise located(path, "empty style type", line=line, column=9, field=HEADER[8])
    return StelInstance(fields[1], fields[2], fields[3], fields[4], int(correct), identifier, votes,
                        style_type)


def read_stel_tsv(path: str | Path) -> list[StelInstance]:
    """All instances of one STEL TSV file, in file order (no vote filtering)."""
    path = Path(path)
    records = iter(_records(path))
    first = next(records, None)
    if first is None:
        raise located(path, f"empty file; expected the header {chr(9).join(HEADER)!r}", line=1)
    line, header = first
    if tuple(field.strip() for field in header) != HEADER:
        raise located(path, f"unexpected header {header!r}; expected {list(HEADER)!r}", line=line)
    instances = []
    seen: dict[str, int] = {}
    for row_line, fields in records:
        instance = _parse_row(path, row_line, fields)
        if instance.id in seen:
            raise located(path, f"duplicate ID {instance.id!r} (first on line {seen[instance.id]})",
                          line=row_line, column=7, field=HEADER[6])
        seen[instance.id] = row_line
        instances.append(instance)
    if not instances:
        raise located(path, "no task instances after the header", line=line + 1)
    return instances


def load_stel(data_root: str | Path, components: Iterable[str] | None = None, *,
              min_votes: int = MIN_VOTES) -> dict[str, list[StelInstance]]:
    """STEL instances per component (``style type``), read from ``<data_root>/stel``.

    Args:
      data_root: folder holding ``stel/`` (the shared ``data`` folder).
      components: names from ``STEL_FILES``; default all of them.
      min_votes: instances with a vote count below this are dropped (STEL's filter for the dimension
        files); instances without votes (characteristics) are kept.

    Returns:
      ``{component: [StelInstance, ...]}`` in the order asked for, instances in file order.
    """
    wanted = list(STEL_FILES) if components is None else list(components)
    unknown = [name for name in wanted if name not in STEL_FILES]
    if unknown:
        raise UserInputError(f"unknown STEL component(s) {unknown}; expected some of {list(STEL_FILES)}")
    result: dict[str, list[StelInstance]] = {}
    for component in wanted:
        path = Path(data_root) / "stel" / STEL_FILES[component]
        instances = read_stel_tsv(path)
        wrong = sorted({instance.style_type for instance in instances} - {component})
        if wrong:
            raise located(path, f"expected style type {component!r} only, found {wrong}", field=HEADER[8])
        result[component] = [instance for instance in instances
                             if instance.votes is None or instance.votes >= min_votes]
    return result


# ------------------------------------------------------------------------------ STEB's construction

# STEB (seed paper 000, App. C.1 and C.3) uses STEL as ordered lists of two texts (most style, least
# style) and aligns every pair with every other pair of the same style type, instead of STEL's
# predefined quadruples. Code: github.com/rrivera1849/STEB steb/loaders/stel.py (commit 4defec1):
# each row gives its anchor pair and its alternative pair, each ordered by the generation ID
# (``QQ_<anchor ids>_<alt ids>--<n>``); pairs are de-duplicated per style type. STEB parses the IDs of
# five style types; it skips em-subj-pronoun and has no rule for definite-abstract (no pairs).
STEB_STYLE_TYPES = ("formality", "simplicity", "contraction", "nbr_substitution", "emotives")
# STEB's groups of them (STEL_register / STEL_feature datasets).
STEB_GROUPS = {"formality": "register", "simplicity": "register", "contraction": "feature",
               "nbr_substitution": "feature", "emotives": "feature"}
# STEB's benchmark preset (steb/presets.py, commit 2a17f03) evaluates order alignment with episode size
# 1 and 100 episodes per class: its loader keeps the first 100 records of each label (in file order)
# and drops labels with fewer. The public files give 196 formality, 197 simplicity, 101 contraction,
# 100 nbr_substitution and 200 emotives pairs. STEB's Tab. 15 lists 392 texts (196 pairs) per
# STEL_register class, which the preset cannot produce; we follow the code (``per_style=None`` of
# :func:`steb_stel_lists` takes every pair).
STEB_PAIRS_PER_STYLE = 100

_PREFIXES = {"formality": ("i", "f"), "simplicity": ("s", "c", "x"), "nbr_substitution": ("leet", "norm")}


def _id_components(part: str, style_type: str) -> list[str]:
    """The two components of one half of a STEL ID (``i-454-f-454`` -> ``i-454``, ``f-454``)."""
    part = part.lower().strip()
    if style_type == "contraction":
        if "ction-" not in part or "wiki-" not in part:
            return []
        c, w = part.find("ction-"), part.find("wiki-")
        return [part[c:w].rstrip("-"), part[w:]] if c < w else [part[w:c].rstrip("-"), part[c:]]
    if style_type == "emotives":
        starts = sorted((index, prefix) for prefix in ("emote", "emoji") if (index := part.find(prefix)) >= 0)
        bounds = [index for index, _ in starts] + [len(part)]
        return [part[a:b].strip("-").strip("_") for a, b in zip(bounds, bounds[1:])]
    prefixes = _PREFIXES.get("nbr_substitution" if "substitution" in style_type else style_type)
    if prefixes is None:
        return []
    components: list[list[str]] = []
    for piece in (p.strip() for p in part.split("-")):
        if not piece:
            continue
        if piece.startswith(prefixes) or not components:  # a prefix opens a component (so does the
            components.append([piece])                      # first piece, whatever it is, as in STEB)
        else:
            components[-1].append(piece)
    return ["-".join(c) for c in components]


def _most_style_first(component: str, style_type: str) -> bool | None:
    """True if the ID component names the "most style" text (STEB's position 0), False for the
    other pole, None when the component matches neither prefix."""
    component = component.lower().strip()
    poles = {"formality": ("f-", ("i-",)), "simplicity": ("s-", ("x-", "c-")),
             "emotives": ("emote", ("emoji",))}
    if "substitution" in style_type:
        poles["nbr_substitution"] = ("leet-", ("norm-",))
        style_type = "nbr_substitution"
    if style_type == "contraction":
        if "ction-" in component:
            return True if re.search(r"ction-(.+)", component) else None
        return False if component.startswith("wiki-") else None
    if style_type not in poles:
        return None
    most, least = poles[style_type]
    if component.startswith(most):
        return True
    return False if component.startswith(least) else None


def _ordered_pair(first: str, second: str, id_part: str, style_type: str) -> tuple[str, str] | None:
    """``(most style, least style)`` of two texts whose ID components are ``id_part``'s two halves;
    as STEB, only the first component's pole decides (both must parse)."""
    components = _id_components(id_part, style_type)
    if len(components) != 2:
        return None
    poles = [_most_style_first(c, style_type) for c in components]
    if poles[0] is None or poles[1] is None:
        return None
    return (first, second) if poles[0] else (second, first)


def steb_ordered_pairs(instances: Iterable[StelInstance]) -> dict[str, list[tuple[str, str]]]:
    """STEB's STEL records: per style type, ``(most style, least style)`` text pairs in file order.

    Per instance: the anchor pair, then the alternative pair, each ordered by its half of the ID; texts
    stripped; a pair already seen for the style type is skipped; em-subj-pronoun is skipped and types
    without a parsing rule give nothing (as steb/loaders/stel.py). ``StelInstance.correct`` is not
    used (STEB trusts the ID; on the public files the two agree, tests/data/test_stel.py).
    """
    pairs: dict[str, list[tuple[str, str]]] = {}
    seen: dict[str, set[tuple[str, str]]] = {}
    for instance in instances:
        style_type = instance.style_type.strip().lower()
        if not style_type or "em-subj-pronoun" in style_type or "em_subj_pronoun" in style_type:
            continue
        match = re.match(r"QQ_([^_]+)_([^_]+)", instance.id.strip())
        texts = [t.strip() for t in (instance.anchor1, instance.anchor2, instance.alt1, instance.alt2)]
        if match is None or not all(texts):
            continue
        for (first, second), id_part in (((texts[0], texts[1]), match.group(1)),
                                         ((texts[2], texts[3]), match.group(2))):
            pair = _ordered_pair(first, second, id_part, style_type)
            if pair is None or not pair[0] or not pair[1] or pair in seen.setdefault(style_type, set()):
                continue
            seen[style_type].add(pair)
            pairs.setdefault(style_type, []).append(pair)
    return pairs


def steb_stel_lists(instances: Iterable[StelInstance],
                    per_style: int | None = STEB_PAIRS_PER_STYLE) -> dict[str, list[list[str]]]:
    """STEB's order-alignment lists per style type: the first ``per_style`` pairs of
    :func:`steb_ordered_pairs` (``None``: all); style types with fewer pairs are dropped, as STEB's
    loader drops labels with fewer records than ``episode_size * n_episodes_per_class``."""
    out = {}
    for style_type, pairs in steb_ordered_pairs(instances).items():
        if per_style is None:
            out[style_type] = [list(pair) for pair in pairs]
        elif len(pairs) >= per_style:
            out[style_type] = [list(pair) for pair in pairs[:per_style]]
    return out
