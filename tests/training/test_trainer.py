"""stylebench train end to end on a tiny random encoder: metrics, export, determinism, resume after
SIGKILL, SIGTERM, bad configs."""

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stylebench_jax.cli import main
from stylebench_jax.errors import UserInputError
from stylebench_jax.kernels import cpu_attention
from stylebench_jax.parallel import make_mesh
from stylebench_jax.training.trainer import training_attention
from tests.helpers.tiny_models import WORDS, tiny_config, write_tiny_model

REPO = Path(__file__).resolve().parents[2]


def _text(rng, book):
    # each "book" favours a few words, so same-book pairs are learnable
    favourite = [WORDS[(book * 3 + k) % len(WORDS)] for k in range(3)]
    words = [favourite[rng.integers(3)] if rng.random() < 0.6 else WORDS[rng.integers(len(WORDS))]
             for _ in range(rng.integers(6, 14))]
    return " ".join(words) + " ."


def write_pairs(folder: Path, seed=0, n_books=8, per_split=(48, 16)):
    rng = np.random.default_rng(seed)
    rows = []
    for split, n in zip(("train", "validation"), per_split):
        for i in range(n):
            b1 = int(rng.integers(n_books))
            same = i % 2 == 0
            b2 = b1 if same else int((b1 + 1 + rng.integers(n_books - 1)) % n_books)
            rows.append({"split": split, "label": int(same), "pair_type": "positive" if same else "negative",
                         "negative_type": "" if same else "random", "book1": f"b{b1}", "book2": f"b{b2}",
                         "author1": f"a{b1}", "author2": f"a{b2}", "topic1": b1 % 3, "topic2": b2 % 3,
                         "same_topic": b1 % 3 == b2 % 3, "chunk1": 2 * i, "chunk2": 2 * i + 1,
                         "text1": _text(rng, b1), "text2": _text(rng, b2)})
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("train")
    # two heads of 16: the fused CPU attention kernels' width, so these runs train through them
    model = write_tiny_model(root / "tiny", "bert", seed=1, num_heads=2)
    pairs = write_pairs(root / "pairs")
    config = root / "tiny.yaml"
    config.write_text(f"""\
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
  steps: 12
  log_every: 2
  eval_every: 4
  keep_checkpoints: 2
""", encoding="utf-8")
    return root, config


def deterministic_lines(run: Path):
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    for line in lines:
        line.pop("examples_per_s", None)
    return lines


def cli(*args):
    return subprocess.run([sys.executable, "-m", "stylebench_jax.cli", "train", *map(str, args), "--quiet"],
                          cwd=REPO, capture_output=True, text=True, timeout=600)


def test_train_logs_evaluates_exports_and_is_deterministic(setup, tmp_path, cache_dir):
    root, config = setup
    assert main(["train", str(config), "--output", str(tmp_path / "a"), "--quiet"]) == 0
    run = tmp_path / "a"
    lines = deterministic_lines(run)
    train_lines = [line for line in lines if "eval" not in line]
    evals = [line for line in lines if "eval" in line]
    assert [line["step"] for line in train_lines] == [2, 4, 6, 8, 10, 12]
    assert [line["step"] for line in evals] == [4, 8, 12]
    for line in train_lines:
        for key in ("loss", "ce", "contrastive", "adversary", "temperature", "grl_weight", "learning_rate"):
            assert np.isfinite(line[key]), key
    assert train_lines[0]["grl_weight"] < train_lines[-1]["grl_weight"] == pytest.approx(0.2)
    assert {"balanced_accuracy", "auroc_cosine", "accuracy_same_topic_negatives",
            "adversary_accuracy"} <= set(evals[-1]["eval"])
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 12 and summary["best_step"] in (4, 8, 12)
    missing = cpu_attention.missing_prerequisite()
    assert summary["attention"] == "fused-cpu" if missing is None else summary["attention"].startswith("xla")
    # The export is an ordinary model directory.
    out = tmp_path / "e.npy"
    texts = tmp_path / "t.txt"
    texts.write_text("the cat sat on the mat .\na dog ran fast\n")
    assert main(["embed", "--model", str(run / "export"), "--input", str(texts), "--output", str(out),
                 "--quiet"]) == 0
    vectors = np.load(out)
    assert vectors.shape == (2, 32) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    # Same config and seed: same metrics (wall-clock throughput aside) and the same exported weights.
    assert main(["train", str(config), "--output", str(tmp_path / "b"), "--quiet"]) == 0
    assert deterministic_lines(tmp_path / "b") == lines
    assert (tmp_path / "b" / "export" / "model.safetensors").read_bytes() == \
        (run / "export" / "model.safetensors").read_bytes()


@pytest.mark.slow
def test_sigkill_then_resume_equals_an_uninterrupted_run(setup, tmp_path, cache_dir):
    root, config = setup
    run = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "stylebench_jax.cli", "train", str(config), "--output",
                             str(run), "--quiet", "trainer.log_every=1"], cwd=REPO, stderr=subprocess.PIPE,
                            text=True)
    deadline = time.time() + 300
    metrics = run / "metrics.jsonl"
    while time.time() < deadline and proc.poll() is None:
        if metrics.exists() and sum(1 for _ in metrics.open()) >= 7:  # past the checkpoint at step 4
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    # log_every=1 changes which lines are written, so compare against a reference with the same setting
    reference1 = tmp_path / "ref1"
    assert cli(config, "--output", reference1, "trainer.log_every=1").returncode == 0
    resumed = cli(config, "--output", run, "trainer.log_every=1")
    assert resumed.returncode == 0, resumed.stderr
    got, want = deterministic_lines(run), deterministic_lines(reference1)
    assert [line["step"] for line in got] == [line["step"] for line in want]
    for a, b in zip(got, want):
        for key, value in b.items():
            if isinstance(value, float):
                assert a[key] == pytest.approx(value, abs=1e-6), (b["step"], key)
    assert (run / "export" / "model.safetensors").read_bytes() == \
        (reference1 / "export" / "model.safetensors").read_bytes()


def test_a_run_killed_while_saving_its_best_checkpoint_exports_that_checkpoint(setup, tmp_path, cache_dir,
                                                                                 monkeypatch):
    """checkpoints/<s> (whose bookkeeping names s the best) was written before best/<s>: a run killed
    between the two resumed with best/ still holding the earlier best, and exported that, unsaid."""
    from stylebench_jax.training import checkpoints

    root, config = setup
    reference = tmp_path / "reference"
    assert main(["train", str(config), "--output", str(reference), "--quiet"]) == 0
    best = json.loads((reference / "summary.json").read_text())["best_step"]
    original = checkpoints.RunCheckpoints.save

    def killed_at_best(self, step, state, extra, *, best=False, **kw):
        if best and step == best_step:
            original(self, step, state, extra)  # checkpoints/<step> only, then the "kill"
            raise KeyboardInterrupt
        return original(self, step, state, extra, best=best, **kw)

    best_step = best
    monkeypatch.setattr(checkpoints.RunCheckpoints, "save", killed_at_best)
    run = tmp_path / "run"
    assert main(["train", str(config), "--output", str(run), "--quiet"]) == 130
    monkeypatch.setattr(checkpoints.RunCheckpoints, "save", original)
    assert main(["train", str(config), "--output", str(run), "--quiet"]) == 0
    assert json.loads((run / "summary.json").read_text())["best_step"] == best
    assert sorted(p.name for p in (run / "best").iterdir() if p.name.isdigit()) == [str(best)]
    assert (run / "export" / "model.safetensors").read_bytes() == \
        (reference / "export" / "model.safetensors").read_bytes()


def test_resume_refuses_other_data_and_foreign_folders_and_restarts_a_run_without_checkpoint(
        setup, tmp_path, cache_dir, capsys, monkeypatch):
    """A rewritten pairs file at the same path was trained on silently; a config change was refused
    only after the teacher had trained; a model folder given as --output was overwritten; a run that
    died before its first checkpoint kept its metrics lines next to the new run's."""
    import shutil

    from stylebench_jax.training import checkpoints

    root, config = setup
    pairs = shutil.copytree(root / "pairs", tmp_path / "pairs")
    own = tmp_path / "own.yaml"
    own.write_text(config.read_text().replace(str(root / "pairs"), str(pairs)), encoding="utf-8")
    short = ["trainer.steps=4", "trainer.eval_every=4", "trainer.log_every=1"]
    # died before its first checkpoint: the next run starts afresh, metrics included
    original = checkpoints.RunCheckpoints.save

    def killed(self, *args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(checkpoints.RunCheckpoints, "save", killed)
    run = tmp_path / "run"
    assert main(["train", str(own), "--output", str(run), "--quiet", *short]) == 130
    monkeypatch.setattr(checkpoints.RunCheckpoints, "save", original)
    assert main(["train", str(own), "--output", str(run), "--quiet", *short]) == 0
    assert [line["step"] for line in deterministic_lines(run)] == [1, 2, 3, 4, 4]
    # the same data at another path (moved, or relative for absolute) resumes: the content is compared
    moved = tmp_path / "moved.yaml"
    moved.write_text(own.read_text().replace(str(pairs), str(shutil.copytree(pairs, tmp_path / "elsewhere"))),
                     encoding="utf-8")
    assert main(["train", str(moved), "--output", str(run), "--quiet", *short]) == 0
    capsys.readouterr()
    # a config change (a teacher to train first) is refused before the teacher trains
    assert main(["train", str(own), "--output", str(run), "--quiet", *short, "teacher.mode=auto",
                 "teacher.steps=50"]) == 2
    assert "differs in teacher" in capsys.readouterr().err and not (run / "teacher").exists()
    # the same path with other texts
    table = pairs / "pairs.jsonl"
    table.write_text(table.read_text().replace(' .', ' !', 1), encoding="utf-8")
    assert main(["train", str(own), "--output", str(run), "--quiet", *short]) == 2
    assert "holds a run trained on other data" in capsys.readouterr().err
    # a model folder as --output
    before = (root / "tiny" / "config.json").read_bytes()
    assert main(["train", str(own), "--output", str(root / "tiny"), "--quiet", *short]) == 2
    assert "holds files that are not a training run" in capsys.readouterr().err
    assert (root / "tiny" / "config.json").read_bytes() == before


def test_the_runs_own_teacher_is_trained_again_with_other_settings(setup, tmp_path, cache_dir):
    """A run stopped after its teacher but before its first checkpoint, started again with another
    teacher.steps, reused the old teacher's logits (done.json was keyed on the pairs alone)."""
    import shutil

    root, config = setup
    run = tmp_path / "d"
    short = ["teacher.mode=auto", "trainer.steps=4", "trainer.eval_every=4"]
    assert main(["train", str(config), "--output", str(run), "--quiet", *short, "teacher.steps=3"]) == 0
    first = np.load(run / "teacher" / "logits.npy")
    for name in ("checkpoints", "best", "export"):  # as if it had died before its first checkpoint
        shutil.rmtree(run / name)
    assert main(["train", str(config), "--output", str(run), "--quiet", *short, "teacher.steps=2"]) == 0
    assert json.loads((run / "teacher" / "done.json").read_text())["steps"] == 2
    assert not np.array_equal(np.load(run / "teacher" / "logits.npy"), first)


@pytest.mark.slow
def test_sigterm_saves_and_the_next_run_resumes(setup, tmp_path, cache_dir):
    """The first run trains with XLA's attention (model.attention=xla: the trainer's path on
    accelerators), the resumed one with the default: an execution-only key may change on resume."""
    root, config = setup
    run = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "stylebench_jax.cli", "train", str(config), "--output",
                             str(run), "--quiet", "trainer.log_every=1", "model.attention=xla"],
                            cwd=REPO, stderr=subprocess.PIPE, text=True)
    metrics = run / "metrics.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and not (metrics.exists() and metrics.read_text().count("\n") >= 2):
        time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    err = proc.communicate(timeout=120)[1]
    assert proc.returncode == 0 and "stopped by a signal" in err, err
    saved = sorted(int(p.name) for p in (run / "checkpoints").iterdir() if p.name.isdigit())
    assert saved and not (run / "export").exists()
    done = cli(config, "--output", run, "trainer.log_every=1")
    assert done.returncode == 0, done.stderr
    summary = json.loads((run / "summary.json").read_text())
    assert summary["steps"] == 12
    assert summary["attention"] == ("fused-cpu" if cpu_attention.missing_prerequisite() is None
                                    else summary["attention"])


@pytest.mark.parametrize("override, fragment", [
    ("trainer.batch_size=0", "trainer.batch_size: expected a value >= 1"),
    ("model.pooling=max", "model.pooling: expected one of attention, mean, cls"),
    ("data.pairs=/no/such/dir", "data.pairs: /no/such/dir: directory not found"),
    ("trainer.batchsize=4", "trainer.batchsize: unknown key"),
    ("model.attention=off", "model.attention: expected one of auto, fused, xla"),
    ("model.attention_dropout=1.0", "model.attention_dropout: expected a rate below 1, found 1.0"),
    ("model.dropout=1", "model.dropout: expected a rate below 1"),
    ("model.head_dropout=1.0", "model.head_dropout: expected a rate below 1"),
    # these used to train nothing (exit 0, base weights exported), drop updates, or fail later
    ("optim.accumulation=24", "optim.accumulation: 24 micro-steps per update do not divide the 12 steps"),
    ("optim.accumulation=5", "optim.accumulation: 5 micro-steps per update do not divide the 12 steps"),
    ("trainer.embed_chunk=3", "trainer.embed_chunk: 3 must divide the"),
    ("model.max_length=64", "model.max_length: 64 tokens is more than the"),
    ("optim.learning_rate=nan", "optim.learning_rate: expected a finite number"),
    ("teacher.learning_rate=-1", "teacher.learning_rate: expected a value >= 0.0"),
])
def test_bad_config_is_one_line_exit_2(setup, tmp_path, capsys, override, fragment):
    root, config = setup
    assert main(["train", str(config), override, "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and fragment in err and "Traceback" not in err, err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("split, use", [("validation", "checkpoint selection (balanced accuracy)"),
                                        ("test", "the held-out report (ROC-AUC)")])
def test_one_label_split_is_refused_before_training(setup, tmp_path, capsys, split, use):
    # prepare-pairs on few books can give a split of positives only: the run used to train, then die in
    # the held-out report's bootstrap with a traceback, leaving a half-written run
    root, config = setup
    pairs = tmp_path / "pairs"
    rows = [json.loads(line) for line in (root / "pairs" / "pairs.jsonl").read_text().splitlines()]
    validation = [r for r in rows if r["split"] == "validation"]
    extra = [{**r, "split": "test"} for r in validation]
    target = validation if split == "validation" else extra
    for row in target:
        row.update(label=1, pair_type="positive", negative_type="", book2=row["book1"],
                   author2=row["author1"])
    pairs.mkdir()
    (pairs / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows + extra), encoding="utf-8")
    assert main(["train", str(config), f"data.pairs={pairs}", "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"all 16 '{split}' pairs have label 1; {use} needs" in err and len(err.splitlines()) == 1, err
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("field, value, expected", [
    ("label", 2, "0 or 1"), ("text1", None, "a non-empty text"), ("topic2", None, "an integer topic")])
def test_bad_pair_values_are_refused_before_training(setup, tmp_path, capsys, field, value, expected):
    """Were JAX shape errors or TypeErrors (29-52 line tracebacks) after the run directory was made."""
    root, config = setup
    rows = [json.loads(line) for line in (root / "pairs" / "pairs.jsonl").read_text().splitlines()]
    rows[3][field] = value
    pairs = tmp_path / "pairs"
    pairs.mkdir()
    (pairs / "pairs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert main(["train", str(config), f"data.pairs={pairs}", "--output", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"'train' pair 4: field '{field}': expected {expected}, found {value!r}" in err, err
    assert len(err.splitlines()) == 1 and not (tmp_path / "x").exists()


def test_an_early_stopped_run_stays_finished(setup, tmp_path, cache_dir):
    """Re-running the command of a run that stopped early trained on past its stop."""
    root, config = setup
    args = ["train", str(config), "--output", str(tmp_path / "es"), "--quiet", "trainer.patience=1",
            "trainer.eval_every=2"]
    assert main(args) == 0
    summary = json.loads((tmp_path / "es" / "summary.json").read_text())
    assert summary["stopped"] == "early_stopping" and summary["steps"] < 12
    metrics = (tmp_path / "es" / "metrics.jsonl").read_text()
    assert main(args) == 0
    assert json.loads((tmp_path / "es" / "summary.json").read_text()) == summary
    assert (tmp_path / "es" / "metrics.jsonl").read_text() == metrics


def test_group_contrastive_training_and_teacher_distillation(setup, tmp_path, cache_dir):
    root, config = setup
    rng = np.random.default_rng(4)
    groups = tmp_path / "groups.jsonl"
    rows = [{"text": _text(rng, g), "group": f"author{g}", "topic": g % 2}
            for g in range(10) for _ in range(6)]
    groups.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    text = config.read_text().replace(f"  pairs: {root / 'pairs'}",
                                      f"  groups: {groups}\n  topic_field: topic\n  validation_fraction: 0.3")
    group_config = tmp_path / "groups.yaml"
    group_config.write_text(text, encoding="utf-8")
    # one validation group gives positives only: balanced accuracy NaN, an early stop at step 2
    assert main(["train", str(group_config), "--output", str(tmp_path / "g0"),
                 "data.validation_fraction=0.0"]) == 2
    assert not (tmp_path / "g0").exists()
    assert main(["train", str(group_config), "--output", str(tmp_path / "g"), "--quiet", "trainer.steps=4",
                 "trainer.eval_every=4", "data.per_group=4"]) == 0
    lines = deterministic_lines(tmp_path / "g")
    assert "ce" not in lines[0] and lines[0]["contrastive"] > 0  # no negatives to classify: SupCon only
    assert lines[-1]["eval"]["n_pairs"] > 0
    # Distillation: the cross-encoder teacher is trained first, its logits stored and reused.
    assert main(["train", str(config), "--output", str(tmp_path / "d"), "--quiet", "teacher.mode=auto",
                 "teacher.steps=3", "trainer.steps=4", "trainer.eval_every=4"]) == 0
    logits = np.load(tmp_path / "d" / "teacher" / "logits.npy")
    assert logits.shape == (48, 2) and np.isfinite(logits).all()
    assert deterministic_lines(tmp_path / "d")[0]["distillation"] > 0


def test_training_attention_decides_and_refuses_by_key():
    """auto: the kernels on a float32 CPU mesh without a model axis (when they can run here), XLA's
    attention otherwise; xla: XLA's; fused where they cannot run: an error naming the key."""
    import types

    def config(mode, dtype="float32"):
        return types.SimpleNamespace(model=types.SimpleNamespace(attention=mode, compute_dtype=dtype))

    base = types.SimpleNamespace(config=tiny_config("bert", num_heads=2))
    one, split = make_mesh("data=2"), make_mesh("data=4,model=2")
    missing = cpu_attention.missing_prerequisite()
    mesh, what = training_attention(config("auto"), base, one)
    assert (mesh, what) == ((one, "fused-cpu") if missing is None else (None, what))
    assert training_attention(config("xla"), base, one) == (None, "xla (asked for)")
    assert training_attention(config("auto"), base, split) == (None, "xla (the mesh has a model axis)")
    assert training_attention(config("auto", "bfloat16"), base, one)[0] is None
    with pytest.raises(UserInputError, match=r"^model.attention: fused, but .*model axis"):
        training_attention(config("fused"), base, split)
    with pytest.raises(UserInputError, match=r"^model.attention: fused, but .*bfloat16"):
        training_attention(config("fused", "bfloat16"), base, one)


def test_run_identity_ignores_execution_keys_and_fills_keys_added_later():
    """Resume compares configs without ``model.attention`` (how a step runs), and a run directory
    written before ``model.attention_dropout`` existed trained without it: it resumes with 0.0 only."""
    from stylebench_jax.config import config_to_dict
    from stylebench_jax.training.config import ModelConfig
    from stylebench_jax.training.trainer import _config_mismatch, _run_identity

    current = {"seed": 0, "model": config_to_dict(ModelConfig())}
    assert current["model"]["attention_dropout"] == 0.1
    older = {**current, "model": {k: v for k, v in current["model"].items()
                                  if k not in ("attention", "attention_dropout")}}
    assert _run_identity(older) != _run_identity(current)
    without = {**current, "model": {**current["model"], "attention_dropout": 0.0, "attention": "xla"}}
    assert _run_identity(older) == _run_identity(without)
    message = _config_mismatch(Path("run"), older, current)
    assert "differs in model.attention_dropout)" in message
    assert "pass model.attention_dropout=0.0 to resume" in message
    message = _config_mismatch(Path("run"), without, {**current, "seed": 1})
    assert "differs in model.attention_dropout, seed)" in message and "pass" not in message


def test_a_run_with_dropout_resumes_only_on_its_data_axis_size(setup, tmp_path, capsys, cache_dir):
    """Dropout keys follow the device index, so the same run on another data-axis size draws other
    masks (exports differed by up to 8.6e-3): such a resume is refused, not silently mixed."""
    root, config = setup
    args = ["train", str(config), "--output", str(tmp_path / "m"), "--quiet", "trainer.steps=4",
            "trainer.eval_every=4"]
    assert main([*args, "--mesh", "data=4"]) == 0
    assert main([*args, "--mesh", "data=2"]) == 2
    err = capsys.readouterr().err.strip()
    assert "was trained with 4 devices on the data axis, this mesh has 2" in err and "--mesh data=4" in err
    assert main([*args, "--mesh", "data=2", "model.dropout=0", "model.attention_dropout=0",
                 "model.head_dropout=0", "--output", str(tmp_path / "n")]) == 0
