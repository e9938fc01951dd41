"""`stylebench embed` end to end: output, caching (no forward pass on re-run), bad input."""

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

from stylebench_jax.cli import main
from stylebench_jax.encoders.neural import FlaxEncoderEmbedder

TEXTS = ["A man is eating food.", "r u a fan of them or something?", "", "Call me Ishmael.",
         "Это предложение на русском языке.", "x", "Tabs\tand spaces", "The end.", "One more line"]


@pytest.fixture()
def txt_input(tmp_path):
    path = tmp_path / "texts.txt"
    path.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    return path


def run_cli(*args):
    return main(["embed", "--quiet", *map(str, args)])


def test_embed_writes_float32_in_order_and_rerun_is_cached(tmp_path, txt_input, cache_dir, monkeypatch):
    out1, out2 = tmp_path / "a.npy", tmp_path / "b.npy"
    assert run_cli("--input", txt_input, "--output", out1, "--mesh", "data=4,model=2") == 0
    first = np.load(out1)
    assert first.dtype == np.float32 and first.shape == (len(TEXTS), 384)
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1, atol=1e-5)
    # Row order = input order: row i equals the solo embedding of text i.
    solo_path = tmp_path / "solo.txt"
    solo_path.write_text(TEXTS[3] + "\n", encoding="utf-8")
    assert run_cli("--input", solo_path, "--output", tmp_path / "solo.npy", "--no-cache") == 0
    np.testing.assert_allclose(np.load(tmp_path / "solo.npy")[0], first[3], atol=1e-5)

    def no_forward(self, sequences):
        raise AssertionError("encoder forward pass ran although every text was cached")

    monkeypatch.setattr(FlaxEncoderEmbedder, "encode_sequences", no_forward)
    assert run_cli("--input", txt_input, "--output", out2, "--mesh", "data=4,model=2") == 0
    assert out1.read_bytes() == out2.read_bytes()


def test_jsonl_text_field_and_no_cache(tmp_path, cache_dir):
    path = tmp_path / "docs.jsonl"
    path.write_text("".join(json.dumps({"id": i, "body": t}) + "\n" for i, t in enumerate(TEXTS[:3])),
                    encoding="utf-8")
    out = tmp_path / "e.npy"
    assert run_cli("--input", path, "--output", out, "--text-field", "body", "--no-cache") == 0
    assert np.load(out).shape == (3, 384)
    assert not cache_dir.exists()


BAD_INPUTS = {
    "missing": (None, "file not found"),
    "empty.txt": (b"", "file is empty"),
    "bad_utf8.txt": (b"fine line\nsecond \xff\xfe line\n", ":2:8: invalid UTF-8"),
    "not_json.jsonl": (b'{"text": "ok"}\n{text: nope}\n', ":2:2: invalid JSON"),
    "no_field.jsonl": (b'{"text": "ok"}\n{"body": "x"}\n',
                       ":2: missing key 'text'; the object has keys 'body' "
                       "(choose the field with --text-field)"),
    "not_string.jsonl": (b'{"text": 3}\n', ":1: field 'text': expected a string"),
}


@pytest.mark.parametrize("name", sorted(BAD_INPUTS))
def test_bad_input_one_line_error_exit_2_no_output(tmp_path, cache_dir, capsys, name):
    content, expected = BAD_INPUTS[name]
    path = tmp_path / name
    if content is not None:
        path.write_bytes(content)
    out = tmp_path / "out.npy"
    assert run_cli("--input", path, "--output", out) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and expected in err and str(path) in err
    assert not out.exists()


def test_unknown_model_and_dir_without_safetensors(tmp_path, txt_input, cache_dir, capsys):
    out = tmp_path / "out.npy"
    assert run_cli("--model", "no-such-model", "--input", txt_input, "--output", out) == 2
    assert "unknown model 'no-such-model'" in capsys.readouterr().err
    model_dir = tmp_path / "model"
    model_dir.mkdir()
    (model_dir / "config.json").write_text(json.dumps({
        "model_type": "bert", "vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1,
        "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 16}))
    (model_dir / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\na\n")
    (model_dir / "pytorch_model.bin").write_bytes(b"not really a pickle")
    assert run_cli("--model", model_dir, "--input", txt_input, "--output", out) == 2
    err = capsys.readouterr().err
    assert "pickled weights" in err and "arbitrary code" in err and len(err.strip().splitlines()) == 1
    (model_dir / "pytorch_model.bin").unlink()
    assert run_cli("--model", model_dir, "--input", txt_input, "--output", out) == 2
    assert "no model.safetensors" in capsys.readouterr().err
    assert not out.exists()


def test_console_script_exit_code_and_no_traceback(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "stylebench_jax.cli", "embed", "--input", str(tmp_path / "nope.txt"),
         "--output", str(tmp_path / "o.npy")], capture_output=True, text=True)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr and "nope.txt: file not found" in result.stderr


def test_cache_info_and_clear(tmp_path, txt_input, cache_dir, capsys):
    assert run_cli("--input", txt_input, "--output", tmp_path / "a.npy") == 0
    capsys.readouterr()
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["spaces"][0]["vectors"] == len(set(TEXTS))
    assert "weights=" in info["spaces"][0]["identity"]
    programs = cache_dir / "xla"
    programs.mkdir(exist_ok=True)
    (programs / "jit_f-0123").write_bytes(b"x" * 1000)
    (cache_dir / "mine.txt").write_text("not the cache's")
    assert main(["cache", "info", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["compiled_programs_bytes"] >= 1000
    assert main(["cache", "clear"]) == 0
    capsys.readouterr()
    assert main(["cache", "info", "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["spaces"] == [] and info["compiled_programs_bytes"] == 0 and not programs.exists()
    assert (cache_dir / "mine.txt").exists()  # nothing else is touched


def test_steb_long_text_on_a_decoder_is_a_flag_error(tmp_path, txt_input, cache_dir, capsys):
    from tests.helpers.fixtures import model_dir

    out = tmp_path / "a.npy"
    assert run_cli("--model", model_dir("qwen2"), "--long-text", "steb", "--input", txt_input,
                   "--output", out) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("stylebench embed: error: --long-text: 'steb' reproduces STEB's generic loader")
    assert "\n" not in err and not out.exists()


def test_fused_attention_flag(tmp_path, txt_input, cache_dir, capsys):
    """--fused-attention off gives XLA's attention (vectors within float32 rounding of the kernel's);
    on, where the kernel cannot run (bfloat16), is a one-line flag error before any embedding."""
    from stylebench_jax.kernels import cpu_attention

    out = tmp_path / "a.npy"
    assert run_cli("--input", txt_input, "--output", out, "--fused-attention", "off", "--no-cache") == 0
    if cpu_attention.missing_prerequisite() is None:
        fused = tmp_path / "b.npy"
        assert run_cli("--input", txt_input, "--output", fused, "--fused-attention", "on", "--no-cache") == 0
        np.testing.assert_allclose(np.load(fused), np.load(out), atol=1e-6, rtol=0)
    capsys.readouterr()
    bad = tmp_path / "c.npy"
    assert run_cli("--input", txt_input, "--output", bad, "--fused-attention", "on",
                   "--dtype", "bfloat16") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("stylebench embed: error: --fused-attention: the fused CPU attention kernel cannot "
                          "run: the kernel takes float32")
    assert "\n" not in err and not bad.exists()


IMPORT_PROBE = """\
import atexit, runpy, sys
heavy = ("sklearn", "scipy", "pandas", "spacy")
atexit.register(lambda: print("imported:", [name for name in heavy if name in sys.modules]))
sys.argv = ["stylebench", *sys.argv[1:]]
runpy.run_module("stylebench_jax.cli", run_name="__main__")
"""


def test_embedding_short_texts_imports_no_analysis_library(tmp_path, txt_input, cache_dir):
    """`stylebench embed` (chunking, the default) on texts that need no split imports neither the
    metrics' scikit-learn, SciPy and pandas nor the sentence splitter's spaCy (1-3 s each at start)."""
    result = subprocess.run([sys.executable, "-c", IMPORT_PROBE, "embed", "--input", str(txt_input),
                             "--output", str(tmp_path / "o.npy"), "--quiet"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "imported: []"
    assert np.load(tmp_path / "o.npy").shape == (len(TEXTS), 384)


def _fake_run(tmp_path):
    """A `stylebench train` run's layout: config.json, best/ and the exported model in export/."""
    from tests.helpers.fixtures import model_dir

    run = tmp_path / "run"
    (run / "best").mkdir(parents=True)
    (run / "config.json").write_text("{}")
    shutil.copytree(model_dir("bert"), run / "export")
    return run


def test_a_training_run_embeds_with_its_export(tmp_path, txt_input, cache_dir, capsys):
    run = _fake_run(tmp_path)
    assert run_cli("--model", run, "--input", txt_input, "--output", tmp_path / "run.npy") == 0
    assert run_cli("--model", run / "export", "--input", txt_input, "--output", tmp_path / "export.npy") == 0
    assert (tmp_path / "run.npy").read_bytes() == (tmp_path / "export.npy").read_bytes()
    assert main(["embed", "--model", str(run), "--plan-only"]) == 0
    assert "memory plan for run " in capsys.readouterr().out
    shutil.rmtree(run / "export")
    assert run_cli("--model", run, "--input", txt_input, "--output", tmp_path / "none.npy") == 2
    err = capsys.readouterr().err.strip()
    assert "a stylebench train run without export/ (not finished?)" in err and "\n" not in err


def test_max_length_range_named_for_the_model_before_planning(tmp_path, txt_input, cache_dir, capsys):
    out = tmp_path / "a.npy"
    for length in (600, 100000):  # 100000 used to be refused by the memory plan (TiB of activations)
        assert run_cli("--max-length", length, "--input", txt_input, "--output", out) == 2
        err = capsys.readouterr().err.strip()
        assert err == ("stylebench embed: error: --max-length: expected at most 512 tokens for minilm, "
                       f"got {length}")
    # the plan uses the length the model embeds with: sentence-transformers' max_seq_length, 256 for MiniLM
    assert main(["embed", "--model", "minilm", "--plan-only"]) == 0
    assert "batch 64 x 256 tokens" in capsys.readouterr().out
    assert not out.exists()


def test_neural_flags_with_a_baseline_are_refused(tmp_path, txt_input, cache_dir, capsys):
    out = tmp_path / "a.npy"
    assert run_cli("--model", "baseline:tfidf", "--prompt", "query: ", "--long-text", "truncate",
                   "--input", txt_input, "--output", out) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("stylebench embed: error: --long-text, --prompt: options of neural models; baseline:tfidf "
                   "has none (a baseline embeds its texts whole, with its own features)")
    assert not out.exists()
    assert run_cli("--model", "baseline:function_words", "--input", txt_input, "--output", out) == 0


def test_a_closed_pipe_on_stdout_ends_quietly(tmp_path):
    # `stylebench embed --plan-only | head -1`: the reader is gone before the plan is printed
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run([sys.executable, "-m", "stylebench_jax.cli", "embed", "--plan-only"],
                                stdout=write_end, stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == 141 and "Traceback" not in result.stderr, result.stderr
