"""Bad input found by trying the CLI as a new user would (issue #8): one line, exit code 2, no
traceback, nothing written, and checked before any expensive work."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from stylebench_jax.cache import INCOMPLETE_GRACE
from stylebench_jax.cli import main
from stylebench_jax.encoders import registry as encoder_registry
from stylebench_jax.fileio import is_orphan, remove_orphans
from tests.helpers.tiny_models import write_tiny_model


@pytest.fixture()
def no_model_load(monkeypatch):
    """Fail the test if a command resolves a model: the error must come before any work."""
    def refuse(*args, **kwargs):
        raise AssertionError("a model was loaded before the bad input was reported")

    monkeypatch.setattr(encoder_registry, "resolve_embedder", refuse)


def one_line_error(capsys, *fragments):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err
    return err


@pytest.fixture()
def texts(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("a cat\nthe dog\n", encoding="utf-8")
    return path


def test_embed_output_problems_are_found_before_work(tmp_path, texts, cache_dir, capsys, no_model_load):
    (tmp_path / "adir.npy").mkdir()
    assert main(["embed", "--input", str(texts), "--output", str(tmp_path / "adir.npy")]) == 2
    one_line_error(capsys, "--output", "is a directory")
    (tmp_path / "afile").write_text("x")
    assert main(["embed", "--input", str(texts), "--output", str(tmp_path / "afile" / "o.npy")]) == 2
    one_line_error(capsys, "--output", "is a file, not a directory")
    assert main(["embed", "--input", str(texts), "--output", str(tmp_path / "missing" / "o.npy")]) == 2
    one_line_error(capsys, "--output", "does not exist")
    assert main(["embed", "--input", str(texts), "--output", str(tmp_path / "o.npy"),
                 "--cache-dir", str(tmp_path / "afile")]) == 2
    one_line_error(capsys, "--cache-dir", "is a file, not a directory")
    out = str(tmp_path / "o.npy")
    assert main(["embed", "--input", str(texts), "--output", out, "--max-length", "0"]) == 2
    one_line_error(capsys, "--max-length", "positive")
    assert main(["embed", "--input", str(tmp_path), "--output", str(tmp_path / "o.npy")]) == 2
    one_line_error(capsys, "expected a regular file, found a directory")
    assert main(["embed", "--input", "/dev/null", "--output", str(tmp_path / "o.npy")]) == 2
    one_line_error(capsys, "/dev/null: expected a regular file, found a special file (device, pipe or "
                           "socket)")
    assert main(["embed", "--input", str(texts), "--output", out, "--mesh", "data=0"]) == 2
    one_line_error(capsys, "--mesh data=0", "data=0 must be >= 1")
    assert main(["embed", "--input", str(texts), "--output", out, "--mesh", "data=64"]) == 2
    one_line_error(capsys, "--mesh data=64", "needs 64 devices")
    assert not (tmp_path / "o.npy").exists()


def test_score_names_what_an_at_path_is(tmp_path, capsys, no_model_load):
    (tmp_path / "adir").mkdir()
    base = ["score", "--model", "baseline:char3gram", "--no-cache"]
    assert main([*base, f"@{tmp_path / 'adir'}", "b"]) == 2
    one_line_error(capsys, f"{tmp_path / 'adir'}: is a directory, expected a file")
    assert main([*base, f"@{tmp_path / 'nope.txt'}", "b"]) == 2
    one_line_error(capsys, f"{tmp_path / 'nope.txt'}: no such file")
    assert main([*base, "  ", "b"]) == 2  # scored 0.54 before
    one_line_error(capsys, "text '  ': expected a non-empty text (or @FILE)")


def test_an_unwritable_output_place_is_refused_before_the_work(tmp_path, capsys, monkeypatch, no_model_load):
    """Was a 31-72 line PermissionError traceback after the work. The tests run as root, which
    writes through permission bits, so the kernel's answer for the locked folder is stood in for."""
    from stylebench_jax.commands import common

    locked = tmp_path / "locked"
    locked.mkdir()
    real = os.access
    monkeypatch.setattr(common.os, "access", lambda path, mode: Path(path) != locked and real(path, mode))
    (tmp_path / "p.jsonl").write_text('{"text1": "a b", "text2": "c d"}\n')
    base = ["score", "--model", "baseline:function_words", "--no-cache", "--pairs", str(tmp_path / "p.jsonl")]
    assert main([*base, "--output", str(locked / "s.jsonl")]) == 2
    one_line_error(capsys, f"directory {locked} is not writable")
    assert main(["eval", "--models", "baseline:function_words", "--suite", "stel", "--output",
                 str(locked / "run" / "inner")]) == 2
    one_line_error(capsys, f"directory {locked} is not writable")
    # raven, prepare-pairs and data build looked only at the folder itself: they failed when writing,
    # after minutes of embedding, with a traceback (under a file) or a line naming a temporary
    a_file = tmp_path / "p.jsonl"
    for where, text in ((locked / "out", f"directory {locked} is not writable"),
                        (a_file / "out", f"{a_file} is a file, not a directory")):
        assert main(["raven", "--config", "configs/raven/bible.yaml", "--output", str(where)]) == 2
        one_line_error(capsys, f"--output {where}: {text}")
        assert main(["prepare-pairs", "configs/pairs/novels_small.yaml", f"output.dir={where}"]) == 2
        one_line_error(capsys, f"output.dir {where}: {text}")
        assert main(["data", "build", "configs/data/authbench_en.yaml", f"output={where}"]) == 2
        one_line_error(capsys, f"{where}: {text}", "output")
    assert not any(locked.iterdir())


def test_a_write_refused_during_the_work_is_one_line(tmp_path, capsys, monkeypatch):
    """A place that turns unwritable (or a full disk) after the checks: one line naming the file."""
    from stylebench_jax import fileio

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied", str(tmp_path / "s.jsonl"))

    monkeypatch.setattr(fileio, "write_jsonl_atomic", refuse)
    (tmp_path / "p.jsonl").write_text('{"text1": "a b", "text2": "c d"}\n')
    code = main(["score", "--model", "baseline:function_words", "--no-cache",
                 "--pairs", str(tmp_path / "p.jsonl"), "--output", str(tmp_path / "s.jsonl")])
    assert code == 2
    one_line_error(capsys, f"{tmp_path / 's.jsonl'}: Permission denied")


def test_lone_surrogate_in_jsonl_is_a_clean_error(tmp_path, cache_dir, capsys, no_model_load):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"text": "fine"}\n{"text": "oops \\ud800 here"}\n', encoding="utf-8")
    assert main(["embed", "--input", str(path), "--output", str(tmp_path / "o.npy")]) == 2
    one_line_error(capsys, "bad.jsonl:2", "field 'text'", "lone surrogate U+D800 at character 6")


def test_config_json_disagreeing_with_weights_names_the_parameter(tmp_path, texts, cache_dir, capsys):
    folder = write_tiny_model(tmp_path / "m", "bert")
    config = json.loads((folder / "config.json").read_text())
    for key, value in (("hidden_size", 64), ("intermediate_size", 48), ("num_hidden_layers", 3)):
        bad = dict(config, **{key: value})
        (folder / "config.json").write_text(json.dumps(bad))
        assert main(["embed", "--model", str(folder), "--input", str(texts),
                     "--output", str(tmp_path / "o.npy"), "--no-cache"]) == 2
        one_line_error(capsys, str(folder))
    assert not (tmp_path / "o.npy").exists()


def test_eval_bad_seed_and_output(tmp_path, cache_dir, capsys, no_model_load, data_root):
    common = ["eval", "--models", "baseline:function_words", "--suite", "stel", "--data-root", str(data_root)]
    assert main([*common, "--output", str(tmp_path / "out"), "--seed", "-1"]) == 2
    one_line_error(capsys, "--seed", "non-negative")
    (tmp_path / "f").write_text("x")
    assert main([*common, "--output", str(tmp_path / "f")]) == 2
    one_line_error(capsys, "--output", "not a directory")
    assert main([*common, "--output", str(tmp_path / "f" / "such" / "dir")]) == 2
    one_line_error(capsys, "--output", f"{tmp_path / 'f'} is a file, not a directory")
    assert main([*common, "--output", str(tmp_path / "o"), "--cache-dir", str(tmp_path / "f")]) == 2
    one_line_error(capsys, "--cache-dir", "is a file")
    assert main([*common, "--output", str(tmp_path / "o"), "--datasets", "nope"]) == 2
    one_line_error(capsys, "--datasets: unknown dataset 'nope'")


def test_output_directories_get_their_parents_output_files_do_not(tmp_path, cache_dir, capsys, data_root):
    # README's command 1 writes --output runs/quick on a fresh checkout, where runs/ does not exist
    out = tmp_path / "runs" / "quick"
    assert main(["eval", "--models", "baseline:function_words", "--suite", "stel", "--data-root",
                 str(data_root), "--output", str(out), "--quiet"]) == 0
    assert (out / "results.jsonl").is_file()
    texts = tmp_path / "t.txt"
    texts.write_text("a\n", encoding="utf-8")
    assert main(["embed", "--model", "baseline:function_words", "--input", str(texts), "--output",
                 str(tmp_path / "nodir" / "e.npy")]) == 2
    one_line_error(capsys, "--output", "directory", "nodir does not exist (create it first)")


@pytest.fixture()
def pool(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(50, 8)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    np.save(tmp_path / "pool.npy", x)
    np.save(tmp_path / "q.npy", x[:5])
    return tmp_path / "q.npy", tmp_path / "pool.npy"


def test_search_refuses_to_overwrite_an_input(tmp_path, pool, capsys):
    queries, candidates = pool
    before = candidates.read_bytes()
    assert search(queries, candidates, candidates) == 2  # a .npy input can never be the .jsonl output
    one_line_error(capsys, "--output", "expected a .jsonl path")
    assert candidates.read_bytes() == before


def search(queries, candidates, output, *extra):
    return main(["search", "--queries", str(queries), "--candidates", str(candidates), "--k", "3",
                 "--output", str(output), "--quiet", *extra])


def test_search_empty_queries_and_zero_norm_query(tmp_path, pool, capsys):
    queries, candidates = pool
    np.save(tmp_path / "empty.npy", np.zeros((0, 8), np.float32))
    assert search(tmp_path / "empty.npy", candidates, tmp_path / "h.jsonl") == 2
    err = one_line_error(capsys, "empty.npy", "no query rows")
    assert "pool.npy" not in err
    zero = np.load(queries)
    zero[2] = 0
    np.save(tmp_path / "zero.npy", zero)
    assert search(tmp_path / "zero.npy", candidates, tmp_path / "h.jsonl", "--normalize") == 2
    one_line_error(capsys, "zero.npy", "row 2: all zeros")
    assert search(queries, candidates, tmp_path / "nodir" / "h.jsonl") == 2
    one_line_error(capsys, "--output", "does not exist")
    assert not (tmp_path / "h.jsonl").exists() and not (tmp_path / "nodir").exists()


def test_orphaned_temporaries_are_removed_by_the_next_write_and_cache_clean(tmp_path, cache_dir, capsys):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    host = os.uname().nodename.replace("~", "-")
    orphan = tmp_path / f".out.npy~{host}~{dead}~abc123.tmp"
    orphan.write_bytes(b"half")
    live = tmp_path / f".out.npy~{host}~{os.getpid()}~def456.tmp"
    live.write_bytes(b"being written")
    assert is_orphan(orphan) and not is_orphan(live)
    from stylebench_jax.fileio import save_npy_atomic

    save_npy_atomic(tmp_path / "out.npy", np.zeros(3))
    assert not orphan.exists() and live.exists()
    space = cache_dir / ("0" * 32)
    space.mkdir(parents=True)
    (space / f".x.vectors.npy~{host}~{dead}~q.tmp").write_bytes(b"x")
    np.save(space / "abc.vectors.npy", np.zeros((2, 4), np.float32))  # keys file never written
    old = time.time() - 2 * INCOMPLETE_GRACE
    os.utime(space / "abc.vectors.npy", (old, old))
    # A shard whose keys are still being written by a live process (between its two renames) stays.
    np.save(space / "fresh.vectors.npy", np.zeros((2, 4), np.float32))
    assert main(["cache", "clean"]) == 0
    out = capsys.readouterr().out
    assert "1 orphaned temporary file(s), 1 incomplete shard(s)" in out
    assert [p.name for p in space.iterdir()] == ["fresh.vectors.npy"]
    assert remove_orphans(tmp_path) == (0, 0)


@pytest.mark.slow
def test_ctrl_c_stops_embed_promptly(tmp_path, cache_dir):
    path = tmp_path / "many.txt"
    # Long texts cut at 256 tokens: every batch has one shape, so the interrupt lands between
    # forward passes (what is measured) and never during a compile of a new length (XLA cannot be
    # interrupted mid-compile; with mixed lengths that made the stop time depend on the load).
    # Batches of 16 (~1 s each here): the stop waits for the running batch and the queued one.
    lines = (f"sentence number {i} about cats and dogs and weather. " * 40 for i in range(1000))
    path.write_text("\n".join(lines), encoding="utf-8")
    # A suite started in the background (``cmd &`` without job control) hands its children SIGINT
    # ignored, and Python then never raises KeyboardInterrupt: the child restores what a terminal user has.
    run_cli = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
               "runpy.run_module('stylebench_jax.cli', run_name='__main__')")
    proc = subprocess.Popen([sys.executable, "-c", run_cli, "embed", "--input", str(path),
                             "--output", str(tmp_path / "o.npy"), "--no-cache", "--long-text", "truncate",
                             "--batch-size", "16"],
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    # Wait for the first progress line after a finished batch ("embed minilm: 100/1000 seq (10%)"): the
    # model is loaded, compiled and batches are queued. A fixed sleep raced the imports under load.
    seen = []
    while not any(line.startswith("embed minilm: ") and "%" in line for line in seen):
        line = proc.stderr.readline()
        assert line, "".join(seen)
        seen.append(line)
    assert proc.poll() is None, "".join(seen)
    start = time.perf_counter()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    elapsed = time.perf_counter() - start
    err = "".join(seen) + proc.stderr.read()
    assert proc.returncode == 130 and "interrupted" in err and "Traceback" not in err, err
    assert elapsed < 4.0, f"took {elapsed:.1f} s to stop\n{err}"
    assert not (tmp_path / "o.npy").exists()


@pytest.mark.parametrize("head_rows", [8192, 4])
def test_search_refuses_candidates_it_cannot_normalise_naming_the_row(tmp_path, pool, capsys, monkeypatch,
                                                                        head_rows):
    """A zero (or float32-underflowing) candidate scored 0.0 and was ranked; a huge finite value was
    called NaN; an off-unit row was not named. Each is now one line naming the row. A row in the
    pool's head is found before the search (an unnormalised pool was refused only after a whole
    scan); one past it by the scan (``head_rows`` 4)."""
    from stylebench_jax.commands import search as search_command

    monkeypatch.setattr(search_command, "HEAD_ROWS", head_rows)
    queries, candidates = pool
    x = np.load(candidates)
    for name, row, scale in (("zero", 7, 0.0), ("tiny", 9, 1e-21)):
        bad = x.astype(np.float64)
        bad[row] *= scale
        np.save(tmp_path / f"{name}.npy", bad)
        assert search(queries, tmp_path / f"{name}.npy", tmp_path / "h.jsonl", "--normalize") == 2
        one_line_error(capsys, f"{name}.npy", f"row {row}: all zeros or too small to normalise")
    big = x.copy()
    big[11] *= 1e20
    np.save(tmp_path / "big.npy", big)
    assert search(queries, tmp_path / "big.npy", tmp_path / "h.jsonl", "--normalize") == 2
    one_line_error(capsys, "big.npy", "row 11: NaN or infinity in the embedding, or values too large")
    off = x.copy()
    off[13] *= 1.5
    np.save(tmp_path / "off.npy", off)
    if head_rows > 13:  # found before any search
        from stylebench_jax.kernels import topk

        monkeypatch.setattr(topk, "topk_cosine", lambda *a, **k: pytest.fail("searched a bad pool"))
    assert search(queries, tmp_path / "off.npy", tmp_path / "h.jsonl") == 2
    err = one_line_error(capsys, "off.npy", "row 13: L2 norm 1.5, expected 1")
    assert ("norms range from" in err) == (head_rows <= 13)
    assert not (tmp_path / "h.jsonl").exists()


def test_search_normalises_large_or_tiny_query_rows_in_float64(tmp_path, pool):
    queries, candidates = pool
    q = np.load(queries).astype(np.float64)
    q[1] *= 3e19  # its float32 norm overflowed: all scores 0.0 and indices 0, 1, 2
    q[2] *= 1e-30  # its float32 norm underflowed: refused as all zeros
    np.save(tmp_path / "q.npy", q)
    assert search(tmp_path / "q.npy", candidates, tmp_path / "h.jsonl", "--normalize") == 0
    hits = [json.loads(line) for line in (tmp_path / "h.jsonl").read_text().splitlines()]
    assert hits[1]["indices"][0] == 1 and hits[2]["indices"][0] == 2
    assert hits[1]["scores"][0] == pytest.approx(1.0, abs=1e-6)


def test_flags_that_would_do_nothing_are_refused(tmp_path, capsys, no_model_load):
    base = ["score", "--no-cache"]
    assert main([*base, "--model", "baseline:function_words", "--max-length", "12", "a b", "c d"]) == 2
    one_line_error(capsys, "--max-length: an option of neural models; baseline:function_words has none")
    assert main([*base, "--model", "baseline:function_words", "--topk", "3", "a b", "c d"]) == 2
    one_line_error(capsys, "topk 3: the k of the topk_mean aggregate; the aggregate here is 'mean'")
    assert main([*base, "--calibration", str(tmp_path), "a b", "c d"]) == 2
    one_line_error(capsys, f"{tmp_path}: a directory; expected the style_calibration.json")
    (tmp_path / "t.txt").write_text("a b\n")
    assert main(["embed", "--input", str(tmp_path / "t.txt"), "--output", str(tmp_path / "o.npy"),
                 "--text-field", "body"]) == 2
    one_line_error(capsys, "--text-field body: only for a .jsonl input")
    (tmp_path / "p.jsonl").write_text('{"text1": "a b", "text2": "c d", "label": 1}\n')
    assert main(["calibrate", "--model", "minilm", "--pairs", str(tmp_path / "p.jsonl"), "--split", "train",
                 "--output", str(tmp_path / "cal")]) == 2
    one_line_error(capsys, "--split train: needs --pairs to be a prepare-pairs directory")
    with pytest.raises(SystemExit) as exit_info:  # argparse's own exit, from the subcommand's parser
        main(["embed", "--input", "x.txt", "--output", "y.npy", "--bogus"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        "stylebench embed: error: unrecognized arguments: --bogus")
