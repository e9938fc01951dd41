"""stylebench transfer end to end on a tiny corpus: excerpts, items, local backends, HTTP backends
against the fake server with quota exhaustion and resume, a killed run resumed without generating
anything twice, aggregates, report, and no API key in any file or log line; a refused config writes
nothing; the same command twice gives the same bytes (timings only in run_info.json)."""

import json
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
import yaml

from stylebench_jax.calibration import SimilarityMap, style_calibration_payload
from stylebench_jax.calibration.files import write_json
from stylebench_jax.cli import main
from stylebench_jax.config import InvalidField, config_from_dict
from stylebench_jax.errors import UserInputError
from stylebench_jax.similarity import StyleSettings, resolve_style_embedder
from stylebench_jax.transfer import local_backends
from stylebench_jax.transfer.config import TransferConfig
from stylebench_jax.transfer.pipeline import finished_in_order, run_transfer
from tests.transfer.fake_llm import FakeLLM

KEY = "sk-live-0a1b2c3d4e5f-TOPSECRET"
WORDS = {"austen": "civility fortune amiable sister letter morning ball cousin obliged evening".split(),
         "melville": "whale harpoon deck sea captain boat mast ocean rope wind".split()}


def _book(style, seed, n=60):
    rng = np.random.default_rng(seed)
    vocab = WORDS[style]
    sentences = []
    for i in range(n):
        words = [vocab[rng.integers(len(vocab))] for _ in range(int(rng.integers(6, 12)))]
        name = ["Harriet", "Ishmael", "Emma", "Ahab"][int(rng.integers(4))]
        sentences.append(f"The {' '.join(words)} and {name} went on{i}.")
    paragraphs = [" ".join(sentences[k:k + 5]) for k in range(0, n, 5)]
    return "\n\n".join(paragraphs)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    rows = [{"text": _book("austen", 1), "group": "emma"},
            {"text": _book("austen", 2), "group": "persuasion"},
            {"text": _book("austen", 3), "group": "sense"},
            {"text": _book("melville", 4), "group": "moby"}]
    path = root / "books.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    embedder = resolve_style_embedder("baseline:function_words")
    meta = {**StyleSettings().meta(), "n_samples": 100}
    payload = style_calibration_payload(SimilarityMap("logistic", coef=6.0, intercept=-4.0),
                                        {"brier": 0.2, "ece": 0.05}, meta,
                                        {"name": embedder.name, "identity": embedder.identity})
    write_json(root / "style_calibration.json", payload)
    return root


def _config(corpus, backends, **extra):
    return config_from_dict(TransferConfig, _config_data(corpus, backends, **extra))


def _config_data(corpus, backends, **extra) -> dict:
    return {"seed": 0, "sources": [{"jsonl": str(corpus / "books.jsonl"), "name": "tiny"}],
            "author_aliases": {"emma": "Austen", "persuasion": "Austen", "sense": "Austen",
                               "moby": "Melville"},
            "books": [{"book": "tiny/emma", "seed_book": "Austen, Emma", "status": "present"},
                      {"book": "tiny/moby", "seed_book": "Melville, Moby Dick", "status": "present"}],
            "excerpts": {"per_book": 2, "sentences": 15, "samples": 1},
            "backends": backends,
            "scoring": {"model": "baseline:function_words", "score_batch": 2,
                        "calibration": str(corpus / "style_calibration.json")}, **extra}


LOCAL = [{"name": "ceiling", "kind": "copy"}, {"name": "markov", "kind": "markov"},
         {"name": "shuffled", "kind": "shuffle"}]


def _trace(out: Path):
    rows = [json.loads(line) for line in (out / "trace.jsonl").read_text().splitlines()]
    return {r["unit"]: r for r in rows}  # the last line of a unit counts


def test_local_backends_excerpts_scores_and_report(corpus, tmp_path, cache_dir):
    out = tmp_path / "run"
    results = run_transfer(_config(corpus, LOCAL), out, progress=False, log=lambda m: None)
    excerpts = [json.loads(line) for line in (out / "excerpts.jsonl").read_text().splitlines()]
    assert len(excerpts) == 4 and all(e["n_sentences"] == 15 for e in excerpts)
    emma = sorted((e for e in excerpts if e["book"] == "tiny/emma"), key=lambda e: e["start"])
    assert emma[1]["start"] - emma[0]["start"] >= 15  # distinct, non-overlapping
    assert "\n\n" in emma[0]["text"]  # paragraph breaks kept
    trace = _trace(out)
    assert len(trace) == 12
    ceiling = trace["ceiling/tiny/emma#e0#s0"]
    assert ceiling["output"] == ceiling["excerpt_text"] and "copied_phrase" in ceiling["originality"]["flags"]
    assert "STYLE REFERENCE\n---\n" in ceiling["prompt"]["user"]
    assert f"Write an original short story about: {ceiling['topic']}\n" in ceiling["prompt"]["user"]
    assert ceiling["scores"]["score_calibrated"] == pytest.approx(
        1 / (1 + np.exp(-(6 * ceiling["scores"]["cosine"] - 4))))
    markov = trace["markov/tiny/emma#e0#s0"]
    assert markov["status"] == "ok" and 600 <= markov["words"] <= 2 * markov["target_words"]
    assert set(markov["generation"]["usage"]["training_books"]) == {"tiny/persuasion", "tiny/sense"}
    assert markov["originality"]["longest_common_words"] < 15
    skipped = trace["markov/tiny/moby#e0#s0"]
    assert skipped["status"] == "skipped" and "no other book by 'Melville'" in skipped["error"]
    shuffled = trace["shuffled/tiny/emma#e0#s0"]
    assert sorted(shuffled["output"].split()) == sorted(shuffled["excerpt_text"].split())
    assert shuffled["output"] != shuffled["excerpt_text"].replace("\n\n", " ")
    runs = results["runs"]
    assert runs["markov"]["n_ok"] == 2 and runs["markov"]["n_skipped"] == 2
    assert runs["ceiling"]["score_calibrated"]["mean_x100"] == pytest.approx(
        100 * runs["ceiling"]["score_calibrated"]["mean"])
    assert set(results["by_author"]["ceiling"]) == {"Austen", "Melville"}
    assert results["ordering"]["n_items"] == 2  # Melville has no Markov story
    md = (out / "transfer.md").read_text()
    assert "## Ordering of the local anchors" in md
    assert "| Austen, Emma | tiny/emma | Austen | present |" in md
    # the same command again: nothing new, the same results
    again = run_transfer(_config(corpus, LOCAL), out, progress=False, log=lambda m: None)
    assert again["runs"] == results["runs"]
    # nothing attempted again: the 2 Markov units without another book are not applicable every time
    assert len((out / "generations.jsonl").read_text().splitlines()) == 12
    assert len((out / "trace.jsonl").read_text().splitlines()) == 12
    # killed after journaling them but before their trace lines: traced on resume, not lost
    kept = [line for line in (out / "trace.jsonl").read_text().splitlines()
            if json.loads(line)["status"] != "skipped"]
    (out / "trace.jsonl").write_text("".join(line + "\n" for line in kept))
    resumed = run_transfer(_config(corpus, LOCAL), out, progress=False, log=lambda m: None)
    assert resumed["runs"] == results["runs"] and len(_trace(out)) == 12


def test_killed_run_resumes_without_generating_twice(corpus, tmp_path, cache_dir, monkeypatch):
    calls = []
    real = local_backends.CopyBackend.generate

    def flaky(self, request):
        calls.append(request.unit)
        if len(calls) == 3:
            raise KeyboardInterrupt  # killed mid-run
        return real(self, request)

    monkeypatch.setattr(local_backends.CopyBackend, "generate", flaky)
    out = tmp_path / "run"
    config = _config(corpus, [LOCAL[0]])
    with pytest.raises(KeyboardInterrupt):
        run_transfer(config, out, progress=False, log=lambda m: None)
    done = [json.loads(line)["unit"] for line in (out / "generations.jsonl").read_text().splitlines()]
    killed = calls[2]
    # the stories that arrived before and while the run was stopping are all journaled
    assert killed not in done and set(done) == set(calls) - {killed}
    with open(out / "generations.jsonl", "a") as handle:
        handle.write('{"unit": "ceiling/torn')  # a write cut by the kill
    run_transfer(config, out, progress=False, log=lambda m: None)
    generated = [json.loads(line)["unit"] for line in (out / "generations.jsonl").read_text().splitlines()]
    assert len(generated) == len(set(generated)) == 4
    assert {u for u in calls if calls.count(u) > 1} == {killed}  # only the killed call is made again
    assert all(r["status"] == "ok" for r in _trace(out).values()) and len(_trace(out)) == 4
    info = json.loads((out / "run_info.json").read_text())["invocations"]  # the killed run's timings kept
    assert [i["status"] for i in info] == ["stopped", "complete"]
    assert [i["n_backend_calls"] for i in info] == [len(done), 4 - len(done)]  # the killed one again
    with pytest.raises(UserInputError, match="another config"):
        run_transfer(_config(corpus, [LOCAL[0]], seed=1), out, progress=False, log=lambda m: None)


def test_http_backends_quota_resume_and_no_key_anywhere(corpus, tmp_path, cache_dir, capfd):
    logs = []
    with FakeLLM(["ok", "ok_echo", "echo_key", "echo_key", "echo_key", "echo_key", "quota"]) as openai, \
            FakeLLM(["429", "ok"], default="ok") as anthropic:
        backends = [{"name": "gpt", "kind": "openai", "model": "gpt-x", "api_key_env": "FAKE_OPENAI",
                     "base_url": openai.url + "/v1", "concurrency": 1, "retry_delays": [0.0, 0.0, 0.0]},
                    {"name": "claude", "kind": "anthropic", "model": "claude-x",
                     "api_key_env": "FAKE_ANTHROPIC", "base_url": anthropic.url, "concurrency": 2,
                     "retry_delays": [0.0, 0.0, 0.0]}]
        config = _config(corpus, backends)
        environ = {"FAKE_OPENAI": KEY, "FAKE_ANTHROPIC": KEY[::-1]}
        out = tmp_path / "run"
        results = run_transfer(config, out, progress=False, environ=environ, log=logs.append)
        runs = results["runs"]
        # gpt: item 1 ok, item 2 ok (its text echoed the key), item 3 failed after 4 attempts, item 4 hit
        # the quota
        assert (runs["gpt"]["n_ok"], runs["gpt"]["n_failed"], runs["gpt"]["n_skipped"]) == (2, 1, 1)
        assert runs["gpt"]["not_ok_reasons"] == {"generation_failed": 1, "quota_exhausted": 1}
        assert runs["claude"]["n_ok"] == 4 and any("quota_exhausted" in m for m in logs)
        first_requests = len(openai.requests)
        assert first_requests == 7
        # resume after the "top-up": only the failed and the skipped item are generated
        results = run_transfer(config, out, progress=False, environ=environ, log=logs.append)
        assert len(openai.requests) == first_requests + 2 and len(anthropic.requests) == 5
        assert results["runs"]["gpt"]["n_ok"] == 4 and results["runs"]["claude"]["n_ok"] == 4
    printed = capfd.readouterr()
    for secret in (KEY, KEY[::-1]):
        for path in out.rglob("*"):
            if path.is_file():
                assert secret.encode() not in path.read_bytes(), path
        assert secret not in printed.out + printed.err and all(secret not in m for m in logs)
    assert "[REDACTED]" in (out / "trace.jsonl").read_text()
    assert "FAKE_OPENAI" in (out / "config.json").read_text()  # the variable's name, never its value


def test_refused_config_writes_nothing_and_the_valid_one_then_runs(corpus, tmp_path, cache_dir, capsys):
    config = tmp_path / "x1.yaml"
    config.write_text(yaml.safe_dump(_config_data(corpus, [LOCAL[0]])), encoding="utf-8")
    out = tmp_path / "xf3"
    command = ["transfer", "--config", str(config), "--output", str(out), "--quiet"]
    assert main([*command, "excerpts.sentences=100000"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "excerpts.sentences=100000" in error and "tiny/emma" in error
    assert not out.exists()  # no directory, no config.json to refuse the valid config with
    assert main(command) == 0
    assert (out / "results.json").is_file()
    # a refused resume (too many excerpts, a damaged journal) leaves the existing run as it was
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    with pytest.raises(InvalidField, match="book 'tiny/emma'") as refused:
        run_transfer(_config(corpus, [LOCAL[0]], excerpts={"per_book": 4, "sentences": 15, "samples": 1}),
                     out, progress=False, log=lambda m: None)
    assert refused.value.field == "excerpts.per_book"
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    lines = (out / "generations.jsonl").read_text().splitlines()
    (out / "generations.jsonl").write_text("\n".join(["{broken", *lines[1:]]) + "\n")
    before["generations.jsonl"] = (out / "generations.jsonl").read_bytes()
    data = _config_data(corpus, [LOCAL[0]])
    data["data_root"] = json.loads((out / "config.json").read_text())["config"]["data_root"]  # the CLI's
    data["scoring"]["score_batch"] = 3  # may change between resumes: config.json would be rewritten
    with pytest.raises(UserInputError, match="damaged"):
        run_transfer(config_from_dict(TransferConfig, data), out, progress=False, log=lambda m: None)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_a_scoring_model_that_cannot_be_used_is_refused_before_the_books_naming_its_key(
        corpus, tmp_path, cache_dir, capsys, monkeypatch):
    """An unknown scoring.model (or a calibration fitted on another embedder) was refused after the
    books were read and cut into excerpts (24-32 s on the shared novels), without the config key."""
    from stylebench_jax.transfer import pipeline

    config = tmp_path / "x.yaml"
    config.write_text(yaml.safe_dump(_config_data(corpus, [LOCAL[0]])), encoding="utf-8")
    monkeypatch.setattr(pipeline, "load_reference_books", lambda *a: pytest.fail("read the books first"))
    command = ["transfer", "--config", str(config), "--output", str(tmp_path / "out"), "--quiet"]
    assert main([*command, "scoring.model=nosuch"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "scoring.model" in error and "unknown model 'nosuch'" in error
    assert main([*command, "scoring.model=baseline:char3gram"]) == 2  # pairwise only: no vectors
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "scoring.model" in error and "without vectors" in error
    assert main([*command, "scoring.model=minilm"]) == 2  # the calibration is function_words'
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "scoring.calibration" in error
    assert not (tmp_path / "out").exists()


DETERMINISTIC = ("config.json", "excerpts.jsonl", "generations.jsonl", "trace.jsonl", "results.json",
                 "transfer.md")


def test_same_command_twice_gives_the_same_bytes(corpus, tmp_path, cache_dir):
    config = _config(corpus, LOCAL, excerpts={"per_book": 2, "sentences": 15, "samples": 2})
    first, second = tmp_path / "first", tmp_path / "second"
    for out in (first, second):
        run_transfer(config, out, progress=False, log=lambda m: None)
    for name in DETERMINISTIC:
        assert (first / name).read_bytes() == (second / name).read_bytes(), name
    for name in ("generations.jsonl", "trace.jsonl", "results.json"):
        text = (first / name).read_text()
        assert not any(key in text for key in ("generate_s", "score_s", "elapsed_s", "timings")), name
    units = set(_trace(first))
    info = json.loads((first / "run_info.json").read_text())["invocations"]
    assert [i["status"] for i in info] == ["complete"] and set(info[0]["units"]) == units
    assert info[0]["n_backend_calls"] == 24 and info[0]["n_scored"] == 20  # 4 markov skips, unscored
    assert set(info[0]["stages_s"]) == {"prepare", "generate_and_score", "results_and_report"}
    # resume: every story is reused and the 4 not-applicable Markov units are not tried again, so
    # every output keeps its bytes (the journals too) and run_info.json adds an entry
    before = {name: (first / name).read_bytes() for name in DETERMINISTIC}
    run_transfer(config, first, progress=False, log=lambda m: None)
    info = json.loads((first / "run_info.json").read_text())["invocations"]
    assert [i["status"] for i in info] == ["complete", "complete"]
    assert (info[1]["n_backend_calls"], info[1]["n_scored"]) == (0, 0)
    for name in DETERMINISTIC:
        assert (first / name).read_bytes() == before[name], name


def test_finished_in_order_keeps_submission_order_with_one_worker():
    with ThreadPoolExecutor(max_workers=1) as pool:
        futures = [pool.submit(lambda i=i: i) for i in range(40)]
        time.sleep(0.05)  # all finished before the first wait: as_completed would yield them in set order
        assert [f.result() for f in finished_in_order(futures)] == list(range(40))


def test_a_resume_needs_the_same_calibration_content_and_resolved_model(corpus, tmp_path, cache_dir):
    """The fingerprint held the calibration's path and the backends' env-var names only: a refitted
    calibration at the same path, or another model behind model_env, resumed and mixed two runs."""
    import shutil

    calibration = tmp_path / "cal.json"
    shutil.copy(corpus / "style_calibration.json", calibration)
    data = _config_data(corpus, [LOCAL[0]])
    data["scoring"]["calibration"] = str(calibration)
    out = tmp_path / "run"
    run_transfer(config_from_dict(TransferConfig, data), out, progress=False, log=lambda m: None)
    payload = json.loads(calibration.read_text())
    payload["style_calibration"]["coef"] = 3.0
    calibration.write_text(json.dumps(payload))
    with pytest.raises(UserInputError, match="differs in calibration_sha256"):
        run_transfer(config_from_dict(TransferConfig, data), out, progress=False, log=lambda m: None)
    with FakeLLM(default="ok") as fake:
        backends = [{"name": "llm", "kind": "openai", "model_env": "FAKE_MODEL", "api_key_env": "FAKE_KEY",
                     "base_url": fake.url + "/v1", "retry_delays": [0.0]}]
        config = _config(corpus, backends)
        out = tmp_path / "llm"
        run_transfer(config, out, progress=False, environ={"FAKE_KEY": KEY, "FAKE_MODEL": "model-a"},
                     log=lambda m: None)
        with pytest.raises(UserInputError, match="differs in resolved_backends"):
            run_transfer(config, out, progress=False, environ={"FAKE_KEY": KEY, "FAKE_MODEL": "model-b"},
                         log=lambda m: None)


def test_paired_differences_use_each_pairs_common_items():
    """One backend failing every item used to empty every comparison (n_items 0, no table)."""
    from stylebench_jax.transfer.aggregate import paired

    rows = [{"status": "ok", "backend": b, "item": f"i{k}", "scores": {"cosine": v + 0.01 * k}}
            for b, v in (("a", 0.5), ("b", 0.3)) for k in range(4)]
    rows += [{"status": "failed", "backend": "c", "item": f"i{k}", "scores": {}} for k in range(4)]
    result = paired(rows, ["a", "b", "c"], "cosine")
    assert result["n_items"] == 0 and list(result["differences"]) == ["a - b"]
    assert result["differences"]["a - b"]["n_items"] == 4
    assert result["differences"]["a - b"]["mean"] == pytest.approx(0.2)


def test_a_run_begun_before_the_fingerprint_grew_still_resumes(corpus, tmp_path, cache_dir):
    out = tmp_path / "old"
    config = _config(corpus, [LOCAL[0]])
    run_transfer(config, out, progress=False, log=lambda m: None)
    record = json.loads((out / "config.json").read_text())
    for key in ("resolved_backends", "calibration_sha256"):  # what config.json held before 2026-11-28
        del record["fingerprint"][key]
    (out / "config.json").write_text(json.dumps(record))
    results = run_transfer(config, out, progress=False, log=lambda m: None)
    assert results["runs"]["ceiling"]["n_ok"] > 0
