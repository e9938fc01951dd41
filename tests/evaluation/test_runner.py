"""Cells, resume, --force, determinism and NotApplicable bookkeeping of the evaluation runner."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from stylebench_jax.evaluation import runner as runner_module
from stylebench_jax.evaluation.cells import CellKey, payload_digest, read_cell
from stylebench_jax.evaluation.results import RESULT_FIELDS, result_rows, skipped_rows, write_result_files
from stylebench_jax.evaluation.runner import EvalSettings, ModelEntry, run_cells
from stylebench_jax.tasks.base import NotApplicable, Score


@dataclasses.dataclass(frozen=True)
class Unit:
    dataset: str
    subset: str
    task: str
    payload: dict


class CharHistogram:
    """Tiny real embedder: relative frequencies of a-z (26 dims)."""

    name = "chars"
    identity = "test-char-histogram/v1"
    dim = 26

    def __init__(self):
        self.calls = 0

    def embed(self, texts):
        self.calls += 1
        out = np.zeros((len(texts), 26), np.float32)
        for i, text in enumerate(texts):
            for ch in text.lower():
                if "a" <= ch <= "z":
                    out[i, ord(ch) - 97] += 1
        return out / np.maximum(out.sum(1, keepdims=True), 1)


class LengthSimilarity:
    """Similarity-only model: 1 - |len(a) - len(b)| / max(len)."""

    name = "length"

    def similarity(self, a, b):
        return np.array([1 - abs(len(x) - len(y)) / max(len(x), len(y), 1) for x, y in zip(a, b)])


class CountingTasks:
    """A task runner doing real (small) computations and counting how often each cell is run."""

    def __init__(self):
        self.calls: list[tuple[str, str]] = []

    def __call__(self, task, scorer, payload, *, seed, n_boot):
        self.calls.append((scorer.name, task))
        texts = payload["texts"]
        if task == "needs_vectors":
            vectors = scorer.embed(texts)
            value = float(np.mean(vectors @ vectors.T))
            return [Score("mean_cos", value, value - 0.1, value + 0.1, len(texts)),
                    Score("seed_echo", float(seed), float(seed), float(seed), n_boot)]
        sims = scorer.similarity(texts[:-1], texts[1:])
        value = float(np.mean(sims))
        rng = np.random.default_rng(seed)
        boots = [np.mean(rng.choice(sims, len(sims))) for _ in range(n_boot)]
        return [Score("mean_sim", value, float(np.quantile(boots, 0.025)), float(np.quantile(boots, 0.975)),
                      len(sims))]


UNITS = [
    Unit("toy", "a", "needs_vectors", {"texts": ["The cat sat.", "A dog ran!", "zzz quiet"]}),
    Unit("toy", "a", "pairs", {"texts": ["The cat sat.", "A dog ran!", "zzz quiet", "Hello there"]}),
    Unit("other", "b", "pairs", {"texts": ["short", "a much longer text here", "mid size"]}),
]


def models():
    return [ModelEntry("chars", CharHistogram()), ModelEntry("baseline:length", LengthSimilarity())]


def run(tmp_path, tasks=None, **settings):
    tasks = tasks or CountingTasks()
    outcome = run_cells(models(), UNITS, tmp_path / "cells", task_runner=tasks,
                        settings=EvalSettings(progress=False, n_boot=50, **settings))
    return outcome, tasks


def test_rows_schema_order_and_primary(tmp_path):
    outcome, tasks = run(tmp_path)
    rows = result_rows(outcome.cells)
    assert len(tasks.calls) == 6
    for row in rows:
        assert tuple(row) == RESULT_FIELDS
        assert isinstance(row["n"], int) and row["ci_low"] <= row["value"] <= row["ci_high"]
    keys = [(r["model"], r["dataset"], r["subset"], r["task"]) for r in rows]
    assert keys == sorted(keys)
    chars_toy = [r for r in rows if r["model"] == "chars" and r["task"] == "needs_vectors"]
    assert [(r["metric"], r["primary"]) for r in chars_toy] == [("mean_cos", True), ("seed_echo", False)]
    assert {r["model"] for r in rows} == {"chars", "baseline:length"}
    # by hand: "short" vs "a much longer text here" (5 vs 23 chars), then vs "mid size" (23 vs 8)
    other = next(r for r in rows if r["model"] == "baseline:length" and r["dataset"] == "other")
    assert other["value"] == pytest.approx(np.mean([1 - 18 / 23, 1 - 15 / 23]))


def test_not_applicable_is_recorded_not_scored(tmp_path):
    outcome, _ = run(tmp_path)
    skipped = skipped_rows(outcome.cells)
    assert skipped == [{"model": "baseline:length", "dataset": "toy", "subset": "a", "task": "needs_vectors",
                        "reason": "length gives only pairwise similarities, not vectors"}]
    rows = result_rows(outcome.cells)
    assert not [r for r in rows if r["model"] == "baseline:length" and r["task"] == "needs_vectors"]
    stored = read_cell(tmp_path / "cells", CellKey("baseline:length", "toy", "a", "needs_vectors"))
    assert stored.status == "not_applicable" and stored.scores == ()


def test_resume_skips_computed_cells_and_force_recomputes(tmp_path):
    first, _ = run(tmp_path)
    second, tasks = run(tmp_path)
    assert tasks.calls == []
    assert len(second.reused) == 6 and second.computed == []
    assert result_rows(second.cells) == result_rows(first.cells)
    forced, tasks = run(tmp_path, force=True)
    assert len(tasks.calls) == 6 and len(forced.computed) == 6


def test_resume_recomputes_only_missing_and_stale_cells(tmp_path):
    run(tmp_path)
    (tmp_path / "cells" / CellKey("chars", "other", "b", "pairs").relative_path()).unlink()
    _, tasks = run(tmp_path)
    assert tasks.calls == [("chars", "pairs")]
    _, tasks = run(tmp_path, seed=1)  # seed is part of every fingerprint: all cells are stale
    assert len(tasks.calls) == 6


def test_cells_from_other_code_are_recomputed(tmp_path, monkeypatch):
    run(tmp_path)
    _, tasks = run(tmp_path)
    assert tasks.calls == []
    monkeypatch.setattr(runner_module, "code_digest", lambda: "0" * 16)  # e.g. a fixed task
    _, tasks = run(tmp_path)
    assert len(tasks.calls) == 6


def test_same_run_twice_gives_identical_results_file(tmp_path):
    texts = []
    for name in ("one", "two"):
        outcome, _ = run(tmp_path / name)
        results, skipped = write_result_files(tmp_path / name, outcome.cells)
        texts.append((results.read_bytes(), skipped.read_bytes()))
    assert texts[0] == texts[1]
    assert b"seconds" not in texts[0][0]
    assert [json.loads(line)["model"] for line in texts[0][0].decode().splitlines()][0] == "baseline:length"


def test_cell_paths_escape_model_names(tmp_path):
    key = CellKey("../weird/model:x", "ds", "", "pairs")
    assert ".." not in key.relative_path().parts and len(key.relative_path().parts) == 4


def test_failing_task_names_its_cell_and_keeps_finished_cells(tmp_path):
    class Broken(CountingTasks):
        def __call__(self, task, scorer, payload, *, seed, n_boot):
            if payload["texts"][0] == "short":
                raise ZeroDivisionError("boom")
            return super().__call__(task, scorer, payload, seed=seed, n_boot=n_boot)

    with pytest.raises(ZeroDivisionError) as info:
        run(tmp_path, tasks=Broken())
    assert any("other:b / pairs" in note for note in info.value.__notes__)
    assert read_cell(tmp_path / "cells", CellKey("chars", "toy", "a", "pairs")) is not None


def test_not_applicable_from_task_keeps_message(tmp_path):
    def refuse(task, scorer, payload, *, seed, n_boot):
        raise NotApplicable("needs labels with at least two classes")

    outcome = run_cells(models()[:1], UNITS[:1], tmp_path, task_runner=refuse,
                        settings=EvalSettings(progress=False))
    assert skipped_rows(outcome.cells)[0]["reason"] == "needs labels with at least two classes"


def test_too_small_data_is_one_line_naming_the_cell(tmp_path):
    """A truncated dataset (3 texts for 3 clusters) ended in a ValueError traceback."""
    from stylebench_jax.errors import UserInputError
    from stylebench_jax.tasks.clustering import cluster_embeddings

    def tiny(task, scorer, payload, *, seed, n_boot):
        return cluster_embeddings(np.eye(3), ["a", "b", "c"], seed=seed, n_boot=n_boot)

    with pytest.raises(UserInputError, match=r"cell chars / toy:a / needs_vectors: clustering 3 texts into 3 "
                                             r"clusters needs more texts than labels \(is the dataset"):
        run_cells(models()[:1], UNITS[:1], tmp_path, task_runner=tiny, settings=EvalSettings(progress=False))


def test_a_model_that_returns_nan_is_one_line_naming_the_cell_and_text(tmp_path):
    """NaN vectors sorted as the lowest score in one metric and the highest in another, silently."""
    from stylebench_jax.errors import UserInputError
    from stylebench_jax.tasks.base import TextScorer

    class Broken(CharHistogram):
        def embed(self, texts):
            vectors = super().embed(texts)
            vectors[1, 0] = np.nan
            return vectors

    def embed_task(task, scorer, payload, *, seed, n_boot):
        scorer.embed(["a", "b", "c"])
        return [Score("x", 0.0, 0.0, 0.0, 1)]

    model = dataclasses.replace(models()[0], model=Broken())
    with pytest.raises(UserInputError, match=r"cell chars / toy:a / needs_vectors: chars returned NaN or "
                                             r"infinity for text 1"):
        run_cells([model], UNITS[:1], tmp_path, task_runner=embed_task, settings=EvalSettings(progress=False))
    assert TextScorer(CharHistogram()).embed(["a"]).shape[0] == 1


def test_same_texts_are_embedded_once_per_model(tmp_path):
    embedder = CharHistogram()
    units = [Unit("toy", subset, "needs_vectors", UNITS[0].payload) for subset in ("a", "b")]
    outcome = run_cells([ModelEntry("chars", embedder)], units, tmp_path, task_runner=CountingTasks(),
                        settings=EvalSettings(progress=False))
    assert embedder.calls == 1
    first, second = outcome.timings
    assert first.embed_seconds > 0 and second.embed_seconds == 0.0  # second cell hit the recent-vectors memo


def test_payload_digest_tracks_content():
    base = {"texts": ["a", "b"], "labels": np.array([0, 1])}
    assert payload_digest(base) == payload_digest({"labels": np.array([0, 1]), "texts": ["a", "b"]})
    assert payload_digest(base) != payload_digest({"texts": ["a", "b"], "labels": np.array([1, 0])})
    assert payload_digest({"texts": ["ab", ""]}) != payload_digest({"texts": ["a", "b"]})


# ----------------------------------------------------------------------------- real data, real tasks

@pytest.fixture(scope="module")
def stel_formality(data_root):
    from stylebench_jax.data.registry import load_units

    return next(u for u in load_units("stel", data_root) if u.subset == "formality")


def test_real_stel_unit_through_task_table_matches_task(tmp_path, stel_formality):
    from stylebench_jax.encoders.registry import resolve_embedder
    from stylebench_jax.tasks.base import TextScorer
    from stylebench_jax.tasks.order_alignment import evaluate_stel

    model = resolve_embedder("baseline:char3gram")
    settings = EvalSettings(progress=False, n_boot=200, seed=3)
    outcome = run_cells([ModelEntry("baseline:char3gram", model)], [stel_formality], tmp_path,
                        settings=settings)
    rows = result_rows(outcome.cells)
    direct = evaluate_stel(TextScorer(model), stel_formality.payload.instances, seed=3, n_resamples=200)
    assert [(r["metric"], r["value"], r["ci_low"], r["ci_high"], r["n"]) for r in rows] == \
        [(s.metric, s.value, s.ci_low, s.ci_high, s.n) for s in direct]
    assert rows[0]["metric"] == "accuracy" and rows[0]["primary"] and rows[0]["n"] == 100


def test_real_clustering_unit_similarity_baseline_is_not_applicable(tmp_path, data_root):
    from stylebench_jax.data.registry import load_units
    from stylebench_jax.data.units import LabelledTexts
    from stylebench_jax.encoders.registry import resolve_embedder

    unit = next(u for u in load_units("cds_samples", data_root, size="quick") if u.task == "clustering")
    step = len(unit.payload.texts) // 60  # 60 texts spread over every style
    small = Unit(unit.dataset, unit.subset, unit.task, LabelledTexts(unit.payload.texts[::step][:60],
                                                                     unit.payload.labels[::step][:60]))
    entries = [ModelEntry("baseline:levenshtein", resolve_embedder("baseline:levenshtein")),
               ModelEntry("chars", CharHistogram())]
    outcome = run_cells(entries, [small], tmp_path, settings=EvalSettings(progress=False, n_boot=50))
    skipped = skipped_rows(outcome.cells)
    assert [(s["model"], s["task"]) for s in skipped] == [("baseline:levenshtein", "clustering")]
    assert "only pairwise similarities" in skipped[0]["reason"]
    rows = result_rows(outcome.cells)
    assert [r["metric"] for r in rows] == ["v_measure", "ami"] and rows[0]["n"] == 60


class BarEmbedder(CharHistogram):
    """Opens its own progress bar per call, as the neural encoder does (nested in the cell bar)."""

    def embed(self, texts):
        from stylebench_jax.progress import progress_bar

        with progress_bar(total=len(texts), desc="embed chars", unit="seq") as bar:
            vectors = super().embed(texts)
            bar.update(len(texts))
        return vectors


def test_progress_in_a_log_is_a_few_plain_lines(tmp_path, capsys):
    entries = [ModelEntry("chars", BarEmbedder()), ModelEntry("baseline:length", LengthSimilarity())]
    run_cells(entries, UNITS, tmp_path / "cells", task_runner=CountingTasks(),
              settings=EvalSettings(progress=True, n_boot=50))
    err = capsys.readouterr().err  # not a terminal: the log mode
    assert "\r" not in err and "\x1b" not in err
    lines = err.splitlines()
    assert len(lines) == 7 and all(line.startswith("eval: ") for line in lines)  # start, 5 steps, done
    assert lines[0] == "eval: 0/6 cell" and lines[-1].startswith("eval: done, 6/6 cell in ")
