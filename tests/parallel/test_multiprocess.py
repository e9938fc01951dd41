"""Commands on 2 local processes of one ``jax.distributed`` job (``launch/multiprocess_cpu.sh``, 2 fake
CPU devices each: a 4-device global mesh on 127.0.0.1) give the single-process answer: embed (1e-5),
search (the same top-k), eval --suite stel (byte-identical results.jsonl), train (the same losses on
the same global batch), prepare-pairs (the same pairs and chunks), data build (the same splits and
manifest, documents chunked and filtered across processes); a process killed with SIGKILL
makes the other exit non-zero with one clear line, and the run resumes.

The single-process references run in this pytest process on 4 of its 8 fake devices (the same global
mesh shape as the two processes together)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stylebench_jax.cli import main
from tests.data.pairs.pairs_corpus import write_corpus
from tests.helpers.tiny_models import WORDS, write_tiny_model
from tests.training.test_trainer import deterministic_lines, write_pairs

REPO = Path(__file__).resolve().parents[2]
LAUNCH = REPO / "launch" / "multiprocess_cpu.sh"
LOSSES = ("loss", "ce", "contrastive", "adversary", "grad_norm", "temperature", "learning_rate")


def environment(tmp_path: Path, cache: str) -> dict:
    env = dict(os.environ, PYTHONPATH=f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
               STYLEBENCH_CACHE=str(tmp_path / cache), STYLEBENCH_HEARTBEAT_TIMEOUT="20")
    # the collective timeout stays at its default (600 s): on a loaded machine one process may reach a
    # collective a minute after the other (compiling), which is not a failure
    env.pop("STYLEBENCH_DISTRIBUTED", None)
    return env


def launch(tmp_path: Path, args: list[str], cache: str = "cache-2p", **popen) -> subprocess.Popen:
    return subprocess.Popen(["bash", str(LAUNCH), "--devices", "2", "--log-dir", str(tmp_path / "logs"), "2",
                             *args], cwd=REPO, env=environment(tmp_path, cache), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **popen)


def config_text(model: Path, pairs: Path, steps: int) -> str:
    return f"""\
seed: 3
data:
  pairs: {pairs}
model:
  base: {model}
  max_length: 16
loss:
  contrastive: supcon
optim:
  learning_rate: 0.001
trainer:
  batch_size: 8
  steps: {steps}
  log_every: 1
  eval_every: 2
  keep_checkpoints: 2
"""


@pytest.fixture(scope="module")
def material(tmp_path_factory):
    root = tmp_path_factory.mktemp("multiprocess")
    # heads of 16: attention runs in the fused CPU kernel (kernels.cpu_attention), per process shard
    model = write_tiny_model(root / "tiny", "bert", seed=1, num_heads=2)
    rng = np.random.default_rng(0)
    texts = [" ".join(WORDS[i] for i in rng.integers(len(WORDS), size=rng.integers(1, 60)))
             for _ in range(23)]
    (root / "texts.txt").write_text("\n".join(texts) + "\n", encoding="utf-8")
    pool = rng.normal(size=(301, 16)).astype(np.float32)
    pool /= np.linalg.norm(pool, axis=1, keepdims=True)
    np.save(root / "pool.npy", pool)
    np.save(root / "queries.npy", pool[:17])
    groups = rng.integers(0, 20, 301)
    np.save(root / "groups.npy", groups)
    np.save(root / "query_groups.npy", groups[:17])
    pairs = write_pairs(root / "pairs")
    (root / "train.yaml").write_text(config_text(model, pairs, 4), encoding="utf-8")
    write_corpus(root / "corpus.jsonl")
    (root / "prepare.yaml").write_text(f"""\
seed: 0
sources:
  - jsonl: {root / "corpus.jsonl"}
mining:
  model: baseline:function_words
  neighbour_books: 3
pairs:
  positives_per_book: 5
  negatives_per_book: 10
output:
  dir: unset
  format: jsonl
""", encoding="utf-8")
    # a data build whose documents are chunked (stage 4) and filtered (stage 5) across processes
    (root / "build.yaml").write_text(f"""\
name: tiny
output: unset
author_salt: pepper
data_root: {root}
sources:
  - {{name: books, path: corpus.jsonl, format: jsonl, fields: {{text: text, author: group}},
     constants: {{language: en, genre: literature}}}}
structure: {{max_tokens: {{attribution: 120}}, chunk_tokens: [60, 90]}}
sampling: {{min_docs_per_author: 1}}
splits: {{proportions: {{dev: 0.5, test: 0.5}}}}
""", encoding="utf-8")
    return root, model


def commands(root: Path, model: Path, out: Path, data_root: Path, mesh: list[str]) -> list[list[str]]:
    search = ["--queries", root / "queries.npy", "--candidates", root / "pool.npy", "--k", "5",
              "--exclude-self", "--query-groups", root / "query_groups.npy", "--candidate-groups",
              root / "groups.npy", "--block-size", "8"]  # 10 blocks on 4 devices: streamed, padded, merged
    return [[str(a) for a in argv] for argv in (
        ["embed", "--model", model, "--input", root / "texts.txt", "--output", out / "embed.npy", "--quiet",
         *mesh],
        ["search", *search, "--output", out / "hits.jsonl", "--quiet", *mesh],
        # host-side baselines: the cells and files across processes (embedding is checked above)
        ["eval", "--models", "baseline:punctuation,baseline:uppercase", "--suite", "stel",
         "--output", out / "stel", "--data-root", data_root, "--n-boot", "50", "--quiet", *mesh],
        ["train", root / "train.yaml", "--output", out / "run", "--quiet", *mesh],
        ["prepare-pairs", root / "prepare.yaml", f"output.dir={out / 'pairs'}", "--quiet", *mesh],
        ["data", "build", root / "build.yaml", f"output={out / 'build'}", "--quiet"],
    )]


@pytest.mark.slow
def test_two_processes_give_the_single_process_answers(material, tmp_path, data_root, monkeypatch):
    root, model = material
    two, one = tmp_path / "two", tmp_path / "one"
    two.mkdir()
    spec = tmp_path / "commands.json"
    spec.write_text(json.dumps(commands(root, model, two, data_root, [])), encoding="utf-8")
    proc = launch(tmp_path, [sys.executable, str(REPO / "tests" / "parallel" / "mp_worker.py"), str(spec)])
    # the single-process references run meanwhile, on 4 of this process's 8 devices
    monkeypatch.setenv("STYLEBENCH_CACHE", str(tmp_path / "cache-1p"))
    one.mkdir()
    for argv in commands(root, model, one, data_root, ["--mesh", "data=4"]):
        assert main(argv) == 0, argv
    out, err = proc.communicate(timeout=900)
    assert proc.returncode == 0, err[-3000:]

    np.testing.assert_allclose(np.load(two / "embed.npy"), np.load(one / "embed.npy"), atol=1e-5)
    assert (two / "hits.jsonl").read_bytes() == (one / "hits.jsonl").read_bytes()
    results = (two / "stel" / "results.jsonl").read_bytes()
    assert results == (one / "stel" / "results.jsonl").read_bytes()
    assert len(results.splitlines()) == 2 * 7 * 3  # models x STEL components x metrics
    got, want = deterministic_lines(two / "run"), deterministic_lines(one / "run")
    assert [line["step"] for line in got] == [1, 2, 2, 3, 4, 4]  # train lines and eval lines
    for a, b in zip(got, want):
        for key in LOSSES:
            if key in b:
                assert a[key] == pytest.approx(b[key], rel=1e-5, abs=1e-6), (b["step"], key)
        if "eval" in b:
            assert a["eval"] == pytest.approx(b["eval"], abs=1e-6)
    for name in ("pairs.jsonl", "chunks.jsonl", "stats.json"):  # sentences split across processes
        assert (two / "pairs" / name).read_bytes() == (one / "pairs" / name).read_bytes(), name
    for name in ("splits/dev.jsonl", "splits/test.jsonl", "parquet/test.parquet"):  # chunked, filtered
        assert (two / "build" / name).read_bytes() == (one / "build" / name).read_bytes(), name
    manifests = [json.loads((d / "build" / "manifest.json").read_text()) for d in (two, one)]
    assert "output" not in manifests[0]["config"]  # two folders, one manifest: byte for byte below
    assert (two / "build" / "manifest.json").read_bytes() == (one / "build" / "manifest.json").read_bytes()
    stages = manifests[0]["stages"]
    assert manifests[0] == manifests[1] and stages["chunked"] > stages["structured"]
    # one process speaks: each summary line once
    assert out.count("suite stel: 14 cells (14 computed") == 1
    assert err.count("stylebench train: 4 steps (finished)") == 1


@pytest.mark.slow
def test_a_killed_process_stops_the_other_with_one_line_and_the_run_resumes(material, tmp_path):
    root, model = material
    config = tmp_path / "train.yaml"
    config.write_text(config_text(model, root / "pairs", 6), encoding="utf-8")
    run = tmp_path / "run"
    args = [sys.executable, "-m", "stylebench_jax.cli", "train", str(config), "--output", str(run), "--quiet"]
    proc = launch(tmp_path, args)
    metrics = run / "metrics.jsonl"
    deadline = time.time() + 600
    while time.time() < deadline and proc.poll() is None:  # past the checkpoint at step 2
        if metrics.exists() and metrics.read_text().count("\n") >= 4:
            break
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()[1][-3000:]
    shell = int((tmp_path / "logs" / "process-1.pid").read_text())
    children = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split()
    worker = int(children[0])  # the process itself (env execs it), child of the launcher's subshell
    os.kill(worker, signal.SIGKILL)
    killed = time.time()
    _, err = proc.communicate(timeout=120)
    assert time.time() - killed < 60
    assert proc.returncode != 0
    lines = [line for line in err.splitlines() if line.startswith("stylebench")]
    assert len(lines) == 1 and "process" in lines[0] and "re-run the same command to resume" in lines[0], err
    assert "Traceback" not in err
    saved = sorted(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())
    assert saved and saved[-1] >= 2

    resumed = launch(tmp_path, args)
    out, err = resumed.communicate(timeout=900)
    assert resumed.returncode == 0, err[-3000:]
    assert json.loads((run / "summary.json").read_text())["steps"] == 6
    steps = [line["step"] for line in deterministic_lines(run) if "eval" not in line]
    assert steps == list(range(1, 7))  # the lines after the checkpoint were rewritten by the resumed run


@pytest.mark.slow
def test_early_failures_end_every_process_at_once_with_one_line(material, tmp_path):
    """A user error seen by one process only, a mesh that leaves a process out and a coordinator port
    that is taken each ended in a ~5 minute hang (JAX's shutdown barrier, a collective, the start-up
    timeout) and a misleading or missing message; now every process leaves within seconds."""
    import socket

    root, model = material
    (tmp_path / "t0.txt").write_text("only process 0 finds its input\n", encoding="utf-8")
    one_sided = ["bash", "-c", f'exec "{sys.executable}" -m stylebench_jax.cli embed --model "{model}" '
                               f'--input "{tmp_path}/t$JAX_PROCESS_ID.txt" --output "{tmp_path}/e.npy" '
                               "--quiet"]
    start = time.time()
    proc = launch(tmp_path, one_sided)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode != 0 and time.time() - start < 120, err[-3000:]
    assert "t1.txt: file not found" in err and "Shutdown barrier" not in err

    # a run directory each process sees on its own disk (here: two paths) is refused before training;
    # it trained to the end and then failed to restore the best checkpoint
    own_disks = ["bash", "-c", f'exec "{sys.executable}" -m stylebench_jax.cli train "{root}/train.yaml" '
                               f'--output "{tmp_path}/run$JAX_PROCESS_ID" --quiet']
    proc = launch(tmp_path, own_disks)
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 2, err[-3000:]
    assert "run0: process 1 of 2 does not see the files process 0 writes there" in err
    assert not (tmp_path / "run0" / "checkpoints").exists()

    embed = [sys.executable, "-m", "stylebench_jax.cli", "embed", "--model", str(model), "--input",
             str(root / "texts.txt"), "--output", str(tmp_path / "e.npy"), "--quiet"]
    proc = launch(tmp_path, [*embed, "--mesh", "data=2"])
    _, err = proc.communicate(timeout=240)
    assert proc.returncode == 2, err[-3000:]
    assert "--mesh data=2: process 1 of 2 has no device in the mesh" in err and "Traceback" not in err

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        start = time.time()
        proc = subprocess.Popen(["bash", str(LAUNCH), "--devices", "2", "--port", str(port), "--log-dir",
                                 str(tmp_path / "logs"), "2", *embed], cwd=REPO,
                                env={**environment(tmp_path, "cache-2p"), "STYLEBENCH_INIT_TIMEOUT": "5"},
                                stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=240)
    assert proc.returncode != 0 and time.time() - start < 120, err[-3000:]
    assert f"port {port} is in use" in err and "Traceback" not in err
    assert not (tmp_path / "e.npy").exists()
