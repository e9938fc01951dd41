"""``run_transfer(config, output_dir)``: the Writing7 style-transfer benchmark (seed 003 §7.2).

For every reference excerpt and sample (an *item*: excerpt, seeded topic, prompt, seed, target
length) every backend writes a story (a *unit* = backend x item); each story is scored against its
excerpt with the calibrated style similarity (``similarity.score_pairs``) and checked for copying
(``transfer.originality``). Output directory::

    config.json         the resolved config (a resumed run must have the same one)
    excerpts.jsonl      the reference excerpts
    generations.jsonl   journal, one line per generation outcome, appended (and fsynced) as it happens
    trace.jsonl         the full trace, one line per unit: excerpt, topic, prompt, output, scores,
                        originality, backend, model, status (ok | failed | skipped + reason);
                        appended as units finish
    results.json        aggregates (``transfer.aggregate``)
    transfer.md/.html   the report (+ PNG figures)
    run_info.json       wall-clock timings only: one entry per invocation of the command, oldest
                        first: its start (UTC), status (complete | stopped), seconds per stage, and
                        per unit the seconds in the backend (generate_s) and in scoring (score_s)

Every file but ``run_info.json`` is a function of the config and the data, so the same command twice
gives the same bytes (with the local backends: a model behind an HTTP API may answer differently, and
with ``concurrency`` > 1 its journal lines follow the order the answers arrive in). Finished
generations are journaled in item order whenever they finish together (``finished_in_order``).

Checks first: everything that can refuse the config or the data (prompt files, books, excerpt sizes,
a different config or a damaged journal already in ``output_dir``, API keys, the scorer and its
calibration) is checked before the output directory is created, so a refused run writes nothing.

Resume: a run interrupted at any point (Ctrl-C, a kill, quota) is continued by the same command.
The journals are read back (a torn last line from a kill is dropped); a unit whose generation is in
``generations.jsonl`` with status ok is never generated again (its text is reused, scored if its
trace line is missing); failed and skipped units are attempted again, except those the backend
cannot serve (``not_applicable``: the same answer every time). When a trace holds several
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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from importlib import resources
from pathlib import Path

import numpy as np

from stylebench_jax.config import InvalidField, config_to_dict
from stylebench_jax.errors import UserInputError
from stylebench_jax.fileio import read_json_file, write_jsonl_atomic, write_text_atomic
from stylebench_jax.hashing import file_sha256
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
JOURNALS = ("generations.jsonl", "trace.jsonl")
RUN_INFO = "run_info.json"


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


def read_journal(path: Path, *, repair: bool = True) -> list[dict]:
    """Rows of a JSONL journal; a torn last line (a kill mid-write) is dropped and, with ``repair``,
    the file rewritten without it, so appending continues on a clean line (``repair=False``: only
    check the journal, before anything is written)."""
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
    if repair and (not text.endswith("\n") or len(good) != sum(1 for line in lines if line.strip())):
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


def scoring_settings(config: TransferConfig) -> tuple:
    """``(calibration or None, StyleSettings)`` of ``config.scoring``; cheap (two small files), so
    checked first; errors name the config's key."""
    import argparse

    from stylebench_jax.calibration.files import StyleCalibration
    from stylebench_jax.commands.style_args import style_settings

    s = config.scoring
    flags = ("chunk_size", "overlap", "max_tokens", "num_chunks", "max_chunks", "aggregate", "topk")
    try:
        calibration = StyleCalibration(s.calibration) if s.calibration is not None else None
    except UserInputError as error:
        raise InvalidField("scoring.calibration", str(error)) from None
    try:
        settings = style_settings(argparse.Namespace(**{k: getattr(s, k) for k in flags}), calibration)
    except UserInputError as error:
        raise InvalidField("scoring", str(error)) from None
    return calibration, settings


def build_scorer(config: TransferConfig, *, mesh=None, cache=None, progress: bool = False,
                 scoring: tuple | None = None) -> Scorer:
    """The embedder, settings and calibration of ``config.scoring`` (checked against each other);
    ``scoring``: :func:`scoring_settings`' result when already read."""
    from stylebench_jax.cache import EmbeddingCache
    from stylebench_jax.similarity import resolve_style_embedder

    s = config.scoring
    calibration, settings = scoring if scoring is not None else scoring_settings(config)
    try:
        embedder = resolve_style_embedder(s.model, max_length=s.max_length, batch_size=s.batch_size,
                                          mesh=mesh, progress=progress, data_root=config.data_root)
    except UserInputError as error:
        raise InvalidField("scoring.model", str(error)) from None
    if calibration is not None:
        try:
            calibration.check_compatible(settings.meta(), embedder.name, embedder.identity)
        except UserInputError as error:
            raise InvalidField("scoring.calibration", str(error)) from None
    return Scorer(embedder, settings, calibration, cache if cache is not None else EmbeddingCache(), mesh)


# --------------------------------------------------------------------------- checks, before any write


def _fingerprint(config: TransferConfig, backends: Sequence = (), calibration=None) -> dict:
    """What a resumed run must share with the run it continues: the config without its runtime keys,
    what the environment resolved (each HTTP backend's model and base URL: ``model_env`` and
    ``base_url_env`` can name another model on the next invocation) and the calibration file's
    content (a refitted file at the same path scores differently)."""
    data = config_to_dict(config)
    for backend in data["backends"]:
        for key in RUNTIME_KEYS:
            backend.pop(key, None)
    for key in RUNTIME_KEYS:
        data["scoring"].pop(key, None)
    data["resolved_backends"] = {b.name: {"model": b.model, "base_url": b.base_url}
                                 for b in backends if getattr(b, "base_url", None) is not None}
    data["calibration_sha256"] = file_sha256(calibration.path) if calibration is not None else None
    return data


ADDED_TO_FINGERPRINT = ("resolved_backends", "calibration_sha256")  # 2026-11-28


def _config_record(output_dir: Path, config: TransferConfig, backends: Sequence = (),
                   calibration=None) -> dict:
    """``config.json``'s content; ``UserInputError`` when ``output_dir`` holds a run with another
    fingerprint. Writes nothing: ``_write_inputs`` writes it once every check has passed."""
    previous = read_json_file(output_dir / "config.json")
    current = {"config": config_to_dict(config), "fingerprint": _fingerprint(config, backends, calibration)}
    old, new = (previous or {}).get("fingerprint") or {}, current["fingerprint"]
    # runs begun before these keys existed resume as they are (what they lack cannot be compared)
    new = {k: v for k, v in new.items() if k in old or k not in ADDED_TO_FINGERPRINT}
    if previous is not None and old != new:
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        raise UserInputError(f"{output_dir}: holds a run with another config (differs in "
                             f"{', '.join(changed)}); resume it with the same config or use a new output "
                             "directory")
    return current


def _check_journals(output_dir: Path) -> None:
    """Refuse a damaged journal of an earlier run now, before config.json or anything else is written
    (``TransferRun`` reads them again, dropping a torn last line)."""
    for name in JOURNALS:
        read_journal(output_dir / name, repair=False)


def _earlier_invocations(output_dir: Path) -> list[dict]:
    """The entries of an existing ``run_info.json``, kept so that a resumed run adds its timings to
    those of the runs before it."""
    path = output_dir / RUN_INFO
    info = read_json_file(path, default={"invocations": []})
    invocations = info.get("invocations") if isinstance(info, dict) else None
    if not isinstance(invocations, list):
        raise UserInputError(f"{path}: expected an object with a list \"invocations\" (the file holds only "
                             "timings: remove it to start its record afresh)")
    return invocations


def reference_excerpts(config: TransferConfig, references) -> list[Excerpt]:
    """``excerpts.per_book`` excerpts of every reference book, in config order (``InvalidField`` on
    ``excerpts.sentences`` or ``excerpts.per_book`` when a book is too short for them)."""
    return [e for book in references for e in book_excerpts(
        book.book, book.author, "\n\n".join(book.documents), per_book=config.excerpts.per_book,
        length=config.excerpts.sentences, seed=config.seed)]


@dataclasses.dataclass
class Plan:
    """A run, checked and built before anything is written (module docstring, "Checks first")."""

    topics: list[str]
    wanted: list
    references: list
    excerpts: list[Excerpt]
    items: list[Item]
    backends: list
    scorer: Scorer
    config_record: dict  # config.json's content
    invocations: list[dict]  # run_info.json's entries so far


def prepare(config: TransferConfig, output_dir: Path, *, mesh=None, cache=None, progress: bool = True,
            environ=None, sleep=None) -> Plan:
    """Every check that can refuse the config, the data or ``output_dir``, the cheap ones first; the
    scorer (it loads the embedder: seconds) before the books (tens of seconds); reads only, so a
    refused run leaves nothing behind."""
    scoring = scoring_settings(config)
    topics, system, template = load_prompt(config)
    scorer = build_scorer(config, mesh=mesh, cache=cache, progress=progress, scoring=scoring)
    references, all_books, wanted = load_reference_books(config, config.data_root)
    excerpts = reference_excerpts(config, references)
    items = build_items(config, excerpts, {b.book: b.seed_book for b in wanted}, topics, system, template)
    backends = build_backends(config, all_books, environ=environ, sleep=sleep)
    record = _config_record(output_dir, config, backends, scoring[0])
    _check_journals(output_dir)
    invocations = _earlier_invocations(output_dir)
    return Plan(topics, wanted, references, excerpts, items, backends, scorer, record, invocations)


def _write_inputs(output_dir: Path, plan: Plan) -> None:
    """The output directory, ``config.json`` and ``excerpts.jsonl``: the first writes of a run."""
    output_dir.mkdir(parents=True, exist_ok=True)
    write_text_atomic(output_dir / "config.json", json.dumps(plan.config_record, indent=1) + "\n")
    write_jsonl_atomic(output_dir / "excerpts.jsonl", [e.to_dict() for e in plan.excerpts])


# --------------------------------------------------------------------------- timings (run_info.json)


class Clock:
    """Wall-clock time of one invocation, by stage: it goes to ``run_info.json`` only, never into the
    files that must be the same bytes in every run."""

    def __init__(self):
        self.started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())  # UTC
        self._start = self._last = time.perf_counter()
        self.stages: dict[str, float] = {}

    def stage(self, name: str) -> None:
        """Close the stage ``name``: the seconds since the previous stage ended."""
        now = time.perf_counter()
        self.stages[name] = round(now - self._last, 3)
        self._last = now

    def entry(self, status: str, units: dict[str, dict[str, float]]) -> dict:
        """This invocation's ``run_info.json`` entry; ``units``: seconds per unit generated or scored."""
        return {"started": self.started_at, "status": status,
                "elapsed_s": round(time.perf_counter() - self._start, 3), "stages_s": dict(self.stages),
                "n_backend_calls": sum("generate_s" in t for t in units.values()),
                "n_scored": sum("score_s" in t for t in units.values()),
                "units": {unit: {k: round(v, 4) for k, v in t.items()} for unit, t in units.items()}}


def _write_run_info(output_dir: Path, invocations: list[dict]) -> None:
    write_text_atomic(output_dir / RUN_INFO, json.dumps({"invocations": invocations}, indent=1) + "\n")


# --------------------------------------------------------------------------- the run


def finished_in_order(futures: Sequence[Future]) -> Iterator[Future]:
    """``futures`` as they finish, those found finished together in submission order. With one worker
    (every local backend) that is the submission order whatever the thread timing, so the journals and
    the score batches are the same in every run (``as_completed`` yields the futures that are already
    finished when it starts in set order, which varies from run to run)."""
    position = {future: index for index, future in enumerate(futures)}
    pending = set(futures)
    while pending:
        done, pending = wait(pending, return_when=FIRST_COMPLETED)
        yield from sorted(done, key=position.__getitem__)


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
        journal = read_journal(self.generations.path)
        self.generated = {r["unit"]: r for r in journal if r["status"] == "ok"}
        # a unit the backend cannot serve (no other book to train a Markov chain on) gets the same
        # answer every time: recorded once, not attempted (and journaled) again on every resume
        self.not_applicable = {r["unit"]: r for r in journal
                               if r["status"] == "skipped" and r.get("reason") == "not_applicable"}
        self.traced = {}
        for row in read_journal(self.trace.path):
            self.traced[row["unit"]] = row
        # this invocation's seconds per unit ("generate_s", "score_s"), for run_info.json
        self.timings: dict[str, dict[str, float]] = {}

    def run(self) -> list[dict]:
        for backend in self.backends:
            units = {f"{backend.name}/{item.id}": item for item in self.items}
            # generated earlier but never scored (killed in between): score now, generate nothing
            unscored = [(units[u], self.generated[u]) for u in units
                        if u in self.generated and self.traced.get(u, {}).get("status") != "ok"]
            self._score_batch(backend, unscored)
            for u, item in units.items():  # journaled as not applicable, killed before its trace line
                if u not in self.generated and u in self.not_applicable and u not in self.traced:
                    self._trace_unscored(item, backend, self.not_applicable[u])
            todo = [item for u, item in units.items()
                    if u not in self.generated and u not in self.not_applicable]
            if todo:
                self._generate(backend, todo)
        return [self.traced[f"{b.name}/{item.id}"] for b in self.backends for item in self.items
                if f"{b.name}/{item.id}" in self.traced]

    def _generate(self, backend, todo: list[Item]) -> None:
        stop = threading.Event()
        stop_reason: list[str] = []

        def attempt(item: Item) -> tuple[str, dict]:
            request = GenerationRequest(f"{backend.name}/{item.id}", item.system, item.user, item.excerpt,
                                        item.seed, item.target_words)
            try:
                g = backend.generate(request)
            except NotApplicable as error:
                return "skipped", {"reason": "not_applicable", "error": str(error)}
            except GenerationFailed as error:
                return "failed", {"reason": "generation_failed", "error": str(error),
                                  "attempts": error.attempts, "retried_errors": error.retried_errors}
            except BackendStopped as error:
                if not stop.is_set():
                    stop_reason.append(error.reason)
                    stop.set()
                return "skipped", {"reason": error.reason, "error": str(error)}
            return "ok", {"output": g.text, "model": g.model, "attempts": g.attempts,
                          "finish_reason": g.finish_reason, "usage": g.usage,
                          "retried_errors": g.retried_errors}

        def task(item: Item) -> tuple[str, dict, float | None]:
            """``(status, journal fields, seconds in the backend or None when it was not called)``."""
            if stop.is_set():
                reason = stop_reason[0] if stop_reason else "stopped"
                return "skipped", {"reason": reason, "error": None}, None
            start = time.perf_counter()
            status, info = attempt(item)
            return status, info, time.perf_counter() - start

        batch: list[tuple[Item, dict]] = []
        recorded: set = set()

        def record(future) -> dict:
            recorded.add(future)
            item = futures[future]
            status, info, seconds = future.result()
            row = {**_unit_row(item, backend), "status": status, **info}
            self.generations.append(row)
            if seconds is not None:
                self.timings.setdefault(row["unit"], {})["generate_s"] = seconds
            if status == "ok":
                self.generated[row["unit"]] = row
            else:
                self._trace_unscored(item, backend, row)
            return row

        def journal_finished() -> None:
            for future in futures:
                if future not in recorded and future.done() and not future.cancelled() \
                        and future.exception() is None:
                    record(future)

        pool = ThreadPoolExecutor(max_workers=backend.concurrency)
        futures: dict = {}
        try:
            futures = {pool.submit(task, item): item for item in todo}
            for future in finished_in_order(list(futures)):
                row = record(future)
                if row["status"] == "ok":
                    batch.append((futures[future], row))
                    if len(batch) >= self.config.scoring.score_batch:
                        self._score_batch(backend, batch)
                        batch = []
            self._score_batch(backend, batch)
        except KeyboardInterrupt:
            stop.set()  # nothing new starts, and no request is tried again
            if getattr(backend, "halt", None) is not None:
                backend.halt.set()
            waiting = sum(1 for f in futures if f.running())
            if waiting:
                self.log(f"interrupted: waiting for {waiting} request(s) in flight (at most "
                         f"{getattr(backend.config, 'timeout_s', 0):g} s), to keep their stories; Ctrl-C "
                         "again leaves without them")
            raise
        finally:
            # Interrupted (Ctrl-C, an error): wait for the calls in flight and journal every story that
            # arrived, so no generation is lost; the next run scores them without generating again.
            try:
                pool.shutdown(wait=True, cancel_futures=True)
            finally:  # a second Ctrl-C during the wait: still journal what has arrived
                journal_finished()
        if stop.is_set():
            self.log(f"backend {backend.name}: stopped ({stop_reason[0]}); the items not generated are "
                     "recorded as skipped and will be generated when the run is resumed")

    def _trace_unscored(self, item: Item, backend, generation: dict) -> None:
        row = {**_unit_row(item, backend), "status": generation["status"], "reason": generation.get("reason"),
               "error": generation.get("error"), "prompt": {"system": item.system, "user": item.user},
               "excerpt_text": item.excerpt.text, "output": None, "scores": None, "originality": None,
               "generation": {k: generation.get(k) for k in ("attempts", "retried_errors")}}
        self.trace.append(row)
        self.traced[row["unit"]] = row

    def _score_batch(self, backend, batch: list[tuple[Item, dict]]) -> None:
        if not batch:
            return
        start = time.perf_counter()
        scores = self.scorer.score([item.excerpt.text for item, _ in batch], [g["output"] for _, g in batch])
        per_unit = (time.perf_counter() - start) / len(batch)  # scored together: the time shared equally
        for (item, g), score in zip(batch, scores):
            check = originality(item.excerpt.text, g["output"], self.config.originality.max_common_words)
            row = {**_unit_row(item, backend), "model": g.get("model") or backend.model, "status": "ok",
                   "prompt": {"system": item.system, "user": item.user}, "excerpt_text": item.excerpt.text,
                   "output": g["output"], "words": len(g["output"].split()), "scores": score,
                   "originality": check,
                   "generation": {k: g.get(k) for k in GENERATION_KEYS}}
            self.trace.append(row)
            self.traced[row["unit"]] = row
            self.timings.setdefault(row["unit"], {})["score_s"] = per_unit


def run_transfer(config: TransferConfig, output_dir: str | Path, *, mesh=None, cache=None,
                 progress: bool = True, environ=None, sleep=None,
                 log: Callable[[str], None] | None = None) -> dict:
    """Run (or resume) the benchmark into ``output_dir``; returns ``results.json``'s content. A config,
    data or output directory the run cannot use is refused before anything is written (``prepare``)."""
    from stylebench_jax.report.transfer import write_transfer_report
    from stylebench_jax.transfer.aggregate import aggregate

    log = log or (lambda message: print(f"stylebench transfer: {message}", file=sys.stderr))
    output_dir = Path(output_dir)
    clock = Clock()
    plan = prepare(config, output_dir, mesh=mesh, cache=cache, progress=progress, environ=environ,
                   sleep=sleep)
    clock.stage("prepare")
    _write_inputs(output_dir, plan)
    run = TransferRun(config, output_dir, plan.items, plan.backends, plan.scorer, log)
    status = "stopped"
    try:
        rows = run.run()
        clock.stage("generate_and_score")
        kinds = {b.name: b.kind for b in plan.backends}
        results = {"description": describe(config, plan.wanted, plan.references, plan.scorer, plan.topics),
                   **aggregate(rows, [b.name for b in plan.backends], kinds)}
        write_text_atomic(output_dir / "results.json", json.dumps(results, indent=1) + "\n")
        write_transfer_report(output_dir, results, rows)
        clock.stage("results_and_report")
        status = "complete"
    finally:
        # also when stopped (Ctrl-C, an error): the timings of the units done so far are kept
        _write_run_info(output_dir, [*plan.invocations, clock.entry(status, run.timings)])
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
