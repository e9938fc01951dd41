"""``run_transfer(config, output_dir)``: the Writing7 style-transfer benchmark (seed 003 §7.2).

For every reference excerpt and sample (an *item*: excerpt, seeded topic, prompt, seed, target
length) every backend writes a story (a *unit* = backend x item); each story is scored against its
excerpt with the calibrated style similarity (``similarity.score_pairs``) and checked for copying
(``transfer.originality``). Output directory::

    config.json         the resolved config (a resumed run must have the same one)
    excerpts.jsonl      the reference excerpts
    generations.jsonl   journal, one line per generation outcome, appended (and fsynced) as it happens
    trace.jsonl         the full trace, one line per unit: excerpt, topic, prompt, output, scores,
                        originality, backend, model, timings, status (ok | failed | skipped + reason);
                        appended as units finish
    results.json        aggregates (``transfer.aggregate``)
    transfer.md/.html   the report (+ PNG figures)

Resume: a run interrupted at any point (Ctrl-C, a kill, quota) is continued by the same command.
The journals are read back (a torn last line from a kill is dropped); a unit whose generation is in
``generations.jsonl`` with status ok is never generated again (its text is reused, scored if its
trace line is missing); failed and skipped units are attempted again. When a trace holds several
lines for a unit, the last one counts. Secrets: every line is passed through ``generation.redact``
with every HTTP backend's key before it is written, whatever produced it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from importlib import resources
from pathlib import Path

import numpy as np

from stylebench_jax.config import config_to_dict
from stylebench_jax.errors import UserInputError
from stylebench_jax.fileio import read_json_file, write_jsonl_atomic, write_text_atomic
from stylebench_jax.transfer.config import HTTP_KINDS, TransferConfig
from stylebench_jax.transfer.excerpts import Excerpt, book_excerpts, load_reference_books
from stylebench_jax.transfer.generation import (
    BackendStopped,
    GenerationFailed,
    GenerationRequest,
    NotApplicable,
    redact,
)
from stylebench_jax.transfer.originality import originality

RESOURCE_FILES = {"topics": "writing7_transfer_topics.txt", "system": "writing7_transfer_system.txt",
                  "user": "writing7_transfer_user.txt"}
PLACEHOLDERS = re.compile(r"\{(excerpt|topic|min_words|max_words)\}")
GENERATION_KEYS = ("attempts", "finish_reason", "usage", "retried_errors")
RUNTIME_KEYS = ("concurrency", "timeout_s", "score_batch", "batch_size")  # may change between resumes


# --------------------------------------------------------------------------- items


@dataclasses.dataclass(frozen=True)
class Item:
    id: str
    excerpt: Excerpt
    sample: int
    topic: str
    topic_index: int
    seed: int
    target_words: int
    system: str
    user: str
    seed_book: str


def _read_resource(path: Path | None, name: str) -> tuple[str, str]:
    if path is None:
        file = RESOURCE_FILES[name]
        return resources.files("stylebench_jax.resources").joinpath(file).read_text("utf-8"), \
            f"stylebench_jax/resources/{file}"
    from stylebench_jax.data.readers import read_text

    return read_text(path), str(path)


def load_prompt(config: TransferConfig) -> tuple[list[str], str, str]:
    """``(topics, system prompt, user template)`` from the data files (module docstring of config)."""
    text, source = _read_resource(config.prompt.topics, "topics")
    topics = [line.strip() for line in text.splitlines() if line.strip()]
    if not topics:
        raise UserInputError(f"{source}: no topics (one per line)")
    system, _ = _read_resource(config.prompt.system, "system")
    user, source = _read_resource(config.prompt.user, "user")
    missing = [p for p in ("{excerpt}", "{topic}") if p not in user]
    if missing:
        raise UserInputError(f"{source}: the user prompt template lacks {', '.join(missing)}")
    return topics, system.strip(), user.rstrip("\n")


def fill(template: str, values: dict[str, str]) -> str:
    """One pass over the template's placeholders: text inserted for one is never re-scanned."""
    return PLACEHOLDERS.sub(lambda m: values[m.group(1)], template)


def build_items(config: TransferConfig, excerpts: list[Excerpt], labels: dict[str, str], topics: list[str],
                system: str, template: str) -> list[Item]:
    """One item per excerpt and sample; topic, seed and target length from
    ``default_rng([seed, crc32(item id)])`` (the authors draw a topic per sample at random)."""
    items = []
    p = config.prompt
    for excerpt in excerpts:
        for sample in range(config.excerpts.samples):
            item_id = f"{excerpt.id}#s{sample}"
            rng = np.random.default_rng([config.seed, zlib.crc32(item_id.encode("utf-8"))])
            topic_index = int(rng.integers(len(topics)))
            seed = int(rng.integers(2 ** 31 - 1))
            target = int(rng.integers(p.min_words, p.max_words + 1))
            user = fill(template, {"excerpt": excerpt.text, "topic": topics[topic_index],
                                   "min_words": str(p.min_words), "max_words": str(p.max_words)})
            items.append(Item(item_id, excerpt, sample, topics[topic_index], topic_index, seed, target,
                              system, user, labels.get(excerpt.book, "")))
    return items


# --------------------------------------------------------------------------- journals


def read_journal(path: Path) -> list[dict]:
    """Rows of a JSONL journal; a torn last line (a kill mid-write) is dropped and the file rewritten
    without it, so appending continues on a clean line."""
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    rows, good = [], []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
            good.append(line)
        except json.JSONDecodeError:
            if number < len(lines) - 1:  # not the last line: real corruption, not a torn write
                raise UserInputError(f"{path}:{number}: not valid JSON; the journal is damaged") from None
    if not text.endswith("\n") or len(good) != sum(1 for line in lines if line.strip()):
        write_text_atomic(path, "".join(line + "\n" for line in good))
    return rows


class Journal:
    """Append-only JSONL writer: each row redacted, written, flushed and fsynced."""

    def __init__(self, path: Path, secrets: tuple[str, ...]):
        self.path = path
        self.secrets = secrets + tuple(json.dumps(s)[1:-1] for s in secrets)
        self._lock = threading.Lock()

    def append(self, row: dict) -> None:
        line = redact(json.dumps(row, ensure_ascii=False), self.secrets)
        with self._lock, open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())


# --------------------------------------------------------------------------- backends and scoring


def build_backends(config: TransferConfig, all_books, environ=None, sleep=None) -> list:
    """Backend objects in config order (HTTP keys checked here, before any work)."""
    from stylebench_jax.transfer.http_backends import HTTP_BACKENDS
    from stylebench_jax.transfer.local_backends import CopyBackend, MarkovBackend, ShuffleBackend

    by_author: dict[str, list[tuple[str, str]]] = {}
    for book in all_books.values():
        by_author.setdefault(book.author, []).append((book.book, "\n\n".join(book.documents)))
    out = []
    for b in config.backends:
        if b.kind in HTTP_KINDS:
            out.append(HTTP_BACKENDS[b.kind](b, environ=environ, sleep=sleep))
        elif b.kind == "copy":
            out.append(CopyBackend(b.name))
        elif b.kind == "shuffle":
            out.append(ShuffleBackend(b.name))
        else:
            out.append(MarkovBackend(b.name, by_author, order=b.order, max_words=b.max_words,
                                     seed=config.seed))
    return out


@dataclasses.dataclass
class Scorer:
    embedder: object
    settings: object
    calibration: object | None
    cache: object
    mesh: object = None

    def score(self, excerpts: list[str], outputs: list[str]) -> list[dict]:
        from stylebench_jax.similarity import score_pairs

        return score_pairs(self.embedder, excerpts, outputs, self.settings, embed_fn=self.cache.embed,
                           calibration=self.calibration, mesh=self.mesh)


def build_scorer(config: TransferConfig, *, mesh=None, cache=None, progress: bool = False) -> Scorer:
    """The embedder, settings and calibration of ``config.scoring`` (checked against each other)."""
    import argparse

    from stylebench_jax.cache import EmbeddingCache
    from stylebench_jax.calibration.files import StyleCalibration
    from stylebench_jax.commands.style_args import style_settings
    from stylebench_jax.similarity import resolve_style_embedder

    s = config.scoring
    calibration = StyleCalibration(s.calibration) if s.calibration is not None else None
    flags = ("chunk_size", "overlap", "max_tokens", "num_chunks", "max_chunks", "aggregate", "topk")
    settings = style_settings(argparse.Namespace(**{k: getattr(s, k) for k in flags}), calibration)
    embedder = resolve_style_embedder(s.model, max_length=s.max_length, batch_size=s.batch_size, mesh=mesh,
                                      progress=progress, data_root=config.data_root)
    if calibration is not None:
        calibration.check_compatible(settings.meta(), embedder.name, embedder.identity)
    return Scorer(embedder, settings, calibration, cache if cache is not None else EmbeddingCache(), mesh)


# --------------------------------------------------------------------------- the run


def _fingerprint(config: TransferConfig) -> dict:
    data = config_to_dict(config)
    for backend in data["backends"]:
        for key in RUNTIME_KEYS:
            backend.pop(key, None)
    for key in RUNTIME_KEYS:
        data["scoring"].pop(key, None)
    return data


def _check_config(output_dir: Path, config: TransferConfig) -> None:
    path = output_dir / "config.json"
    previous = read_json_file(path)
    current = {"config": config_to_dict(config), "fingerprint": _fingerprint(config)}
    if previous is not None and previous.get("fingerprint") != current["fingerprint"]:
        old, new = previous.get("fingerprint") or {}, current["fingerprint"]
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise UserInputError(f"{output_dir}: holds a run with another config (differs in "
                             f"{', '.join(changed)}); resume it with the same config or use a new output "
                             "directory")
    write_text_atomic(path, json.dumps(current, indent=1) + "\n")


def _unit_row(item: Item, backend) -> dict:
    e = item.excerpt
    return {"unit": f"{backend.name}/{item.id}", "backend": backend.name, "backend_kind": backend.kind,
            "model": backend.model, "item": item.id, "excerpt": e.id, "book": e.book,
            "seed_book": item.seed_book, "author": e.author, "excerpt_index": e.index, "sample": item.sample,
            "topic": item.topic, "topic_index": item.topic_index, "seed": item.seed,
            "target_words": item.target_words}


class TransferRun:
    def __init__(self, config: TransferConfig, output_dir: Path, items: list[Item], backends: list,
                 scorer: Scorer, log: Callable[[str], None]):
        self.config, self.output_dir, self.items, self.backends = config, output_dir, items, backends
        self.scorer, self.log = scorer, log
        secrets = tuple(s for b in backends for s in b.secrets)
        self.generations = Journal(output_dir / "generations.jsonl", secrets)
        self.trace = Journal(output_dir / "trace.jsonl", secrets)
        self.generated = {r["unit"]: r for r in read_journal(self.generations.path) if r["status"] == "ok"}
        self.traced = {}
        for row in read_journal(self.trace.path):
            self.traced[row["unit"]] = row

    def run(self) -> list[dict]:
        for backend in self.backends:
            units = {f"{backend.name}/{item.id}": item for item in self.items}
            # generated earlier but never scored (killed in between): score now, generate nothing
            unscored = [(units[u], self.generated[u]) for u in units
                        if u in self.generated and self.traced.get(u, {}).get("status") != "ok"]
            self._score_batch(backend, unscored)
            todo = [item for u, item in units.items() if u not in self.generated]
            if todo:
                self._generate(backend, todo)
        return [self.traced[f"{b.name}/{item.id}"] for b in self.backends for item in self.items
                if f"{b.name}/{item.id}" in self.traced]

    def _generate(self, backend, todo: list[Item]) -> None:
        stop = threading.Event()
        stop_reason: list[str] = []

        def task(item: Item) -> tuple[str, dict]:
            if stop.is_set():
                return "skipped", {"reason": stop_reason[0] if stop_reason else "stopped", "error": None}
            request = GenerationRequest(f"{backend.name}/{item.id}", item.system, item.user, item.excerpt,
                                        item.seed, item.target_words)
            start = time.perf_counter()
            try:
                g = backend.generate(request)
            except NotApplicable as error:
                return "skipped", {"reason": "not_applicable", "error": str(error)}
            except GenerationFailed as error:
                return "failed", {"reason": "generation_failed", "error": str(error),
                                  "attempts": error.attempts, "retried_errors": error.retried_errors,
                                  "generate_s": time.perf_counter() - start}
            except BackendStopped as error:
                if not stop.is_set():
                    stop_reason.append(error.reason)
                    stop.set()
                return "skipped", {"reason": error.reason, "error": str(error)}
            return "ok", {"output": g.text, "model": g.model, "attempts": g.attempts,
                          "finish_reason": g.finish_reason, "usage": g.usage,
                          "retried_errors": g.retried_errors, "generate_s": time.perf_counter() - start}

        batch: list[tuple[Item, dict]] = []
        recorded: set = set()

        def record(future) -> dict:
            recorded.add(future)
            item = futures[future]
            status, info = future.result()
            row = {**_unit_row(item, backend), "status": status, **info}
            self.generations.append(row)
            if status == "ok":
                self.generated[row["unit"]] = row
            else:
                self._trace_unscored(item, backend, row)
            return row

        pool = ThreadPoolExecutor(max_workers=backend.concurrency)
        futures: dict = {}
        try:
            futures = {pool.submit(task, item): item for item in todo}
            for future in as_completed(futures):
                row = record(future)
                if row["status"] == "ok":
                    batch.append((futures[future], row))
                    if len(batch) >= self.config.scoring.score_batch:
                        self._score_batch(backend, batch)
                        batch = []
            self._score_batch(backend, batch)
        finally:
            # Interrupted (Ctrl-C, an error): wait for the calls in flight and journal every story that
            # arrived, so no generation is lost; the next run scores them without generating again.
            pool.shutdown(wait=True, cancel_futures=True)
            for future in futures:
                if future not in recorded and future.done() and not future.cancelled() \
                        and future.exception() is None:
                    record(future)
        if stop.is_set():
            self.log(f"backend {backend.name}: stopped ({stop_reason[0]}); the items not generated are "
                     "recorded as skipped and will be generated when the run is resumed")

    def _trace_unscored(self, item: Item, backend, generation: dict) -> None:
        row = {**_unit_row(item, backend), "status": generation["status"], "reason": generation.get("reason"),
               "error": generation.get("error"), "prompt": {"system": item.system, "user": item.user},
               "excerpt_text": item.excerpt.text, "output": None, "scores": None, "originality": None,
               "generation": {k: generation.get(k) for k in ("attempts", "retried_errors", "generate_s")}}
        self.trace.append(row)
        self.traced[row["unit"]] = row

    def _score_batch(self, backend, batch: list[tuple[Item, dict]]) -> None:
        if not batch:
            return
        start = time.perf_counter()
        scores = self.scorer.score([item.excerpt.text for item, _ in batch], [g["output"] for _, g in batch])
        per_unit = (time.perf_counter() - start) / len(batch)
        for (item, g), score in zip(batch, scores):
            check = originality(item.excerpt.text, g["output"], self.config.originality.max_common_words)
            row = {**_unit_row(item, backend), "model": g.get("model") or backend.model, "status": "ok",
                   "prompt": {"system": item.system, "user": item.user}, "excerpt_text": item.excerpt.text,
                   "output": g["output"], "words": len(g["output"].split()), "scores": score,
                   "originality": check,
                   "generation": {k: g.get(k) for k in GENERATION_KEYS},
                   "timings": {"generate_s": g.get("generate_s"), "score_s": per_unit}}
            self.trace.append(row)
            self.traced[row["unit"]] = row


def run_transfer(config: TransferConfig, output_dir: str | Path, *, mesh=None, cache=None,
                 progress: bool = True, environ=None, sleep=None,
                 log: Callable[[str], None] | None = None) -> dict:
    """Run (or resume) the benchmark into ``output_dir``; returns ``results.json``'s content."""
    from stylebench_jax.report.transfer import write_transfer_report
    from stylebench_jax.transfer.aggregate import aggregate

    log = log or (lambda message: print(f"stylebench transfer: {message}", file=sys.stderr))
    output_dir = Path(output_dir)
    started = time.perf_counter()
    topics, system, template = load_prompt(config)
    data_root = config.data_root
    references, all_books, wanted = load_reference_books(config, data_root)
    backends = build_backends(config, all_books, environ=environ, sleep=sleep)
    scorer = build_scorer(config, mesh=mesh, cache=cache, progress=progress)
    output_dir.mkdir(parents=True, exist_ok=True)
    _check_config(output_dir, config)
    excerpts = [e for book in references for e in book_excerpts(
        book.book, book.author, "\n\n".join(book.documents), per_book=config.excerpts.per_book,
        length=config.excerpts.sentences, seed=config.seed)]
    write_jsonl_atomic(output_dir / "excerpts.jsonl", [e.to_dict() for e in excerpts])
    labels = {b.book: b.seed_book for b in wanted}
    items = build_items(config, excerpts, labels, topics, system, template)
    run = TransferRun(config, output_dir, items, backends, scorer, log)
    rows = run.run()
    kinds = {b.name: b.kind for b in backends}
    results = {"description": describe(config, wanted, references, scorer, topics),
               **aggregate(rows, [b.name for b in backends], kinds),
               "elapsed_s_this_run": time.perf_counter() - started}
    write_text_atomic(output_dir / "results.json", json.dumps(results, indent=1) + "\n")
    write_transfer_report(output_dir, results, rows)
    return results


def describe(config: TransferConfig, wanted, references, scorer: Scorer, topics: list[str]) -> dict:
    calibration = scorer.calibration
    return {"books": [{"seed_book": w.seed_book, "book": w.book, "author": r.author, "status": w.status,
                       "note": w.note} for w, r in zip(wanted, references)],
            "topics": topics, "excerpts": config_to_dict(config.excerpts),
            "prompt": config_to_dict(config.prompt),
            "backends": [{k: v for k, v in config_to_dict(b).items() if v is not None}
                         for b in config.backends],
            "scoring": {"embedder": {"name": scorer.embedder.name, "identity": scorer.embedder.identity},
                        "settings": scorer.settings.meta(),
                        "calibration": None if calibration is None else {
                            "path": str(calibration.path), **calibration.data["style_calibration"]}},
            "originality": config_to_dict(config.originality), "seed": config.seed}
