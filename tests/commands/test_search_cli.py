"""`stylebench search` end to end: JSONL hits equal brute force, exclusions, bad input -> exit 2."""

import json
import subprocess
import sys

import numpy as np
import pytest

from stylebench_jax.cli import main


def unit_rows(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


@pytest.fixture()
def pool(tmp_path):
    rng = np.random.default_rng(0)
    c = unit_rows(rng, (203, 16))
    c[50] = c[7]  # an exact duplicate: ties go to the lower index
    q = np.concatenate([c[:5], unit_rows(rng, (3, 16))])
    np.save(tmp_path / "c.npy", c)
    np.save(tmp_path / "q.npy", q)
    return tmp_path, q, c


def run_cli(*args):
    return main(["search", "--quiet", *map(str, args)])


def read_hits(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def brute_force(q, c, k, excluded=None):
    s = q.astype(np.float64) @ c.astype(np.float64).T
    if excluded is not None:
        s[excluded] = -np.inf
    order = np.argsort(-s, axis=1, kind="stable")[:, :k]
    return [[int(j) for j in row if s[i, j] > -np.inf] for i, row in enumerate(order)], s


@pytest.mark.parametrize("extra", [[], ["--mesh", "data=8", "--block-size", "8"],
                                   ["--bf16", "--mesh", "data=4,model=2"]])
def test_hits_equal_brute_force(pool, extra):
    tmp, q, c = pool
    out = tmp / "hits.jsonl"
    assert run_cli("--queries", tmp / "q.npy", "--candidates", tmp / "c.npy", "--k", 12, "--output", out,
                   *extra) == 0
    hits = read_hits(out)
    ref, s = brute_force(q, c, 12)
    assert [h["query"] for h in hits] == list(range(len(q)))
    for h, r, row in zip(hits, ref, s):
        assert h["indices"] == r
        np.testing.assert_allclose(h["scores"], row[r], atol=1e-6)
    assert hits[7 % len(hits)]["indices"]  # every line has hits


def test_fortran_ordered_queries_are_read(pool):
    tmp, q, c = pool
    np.save(tmp / "qf.npy", np.asfortranarray(q))
    assert run_cli("--queries", tmp / "qf.npy", "--candidates", tmp / "c.npy", "--k", 3, "--output",
                   tmp / "f.jsonl") == 0
    assert [h["indices"] for h in read_hits(tmp / "f.jsonl")] == brute_force(q, c, 3)[0]


def test_exclude_self_and_groups(pool):
    tmp, q, c = pool
    out = tmp / "hits.jsonl"
    assert run_cli("--queries", tmp / "q.npy", "--candidates", tmp / "c.npy", "--k", 5, "--output", out,
                   "--exclude-self") == 0
    excluded = np.zeros((len(q), len(c)), bool)
    excluded[np.arange(len(q)), np.arange(len(q))] = True
    assert [h["indices"] for h in read_hits(out)] == brute_force(q, c, 5, excluded)[0]
    qg, cg = np.arange(len(q)) % 3, np.arange(len(c)) % 3
    np.save(tmp / "qg.npy", qg)
    np.save(tmp / "cg.npy", cg)
    assert run_cli("--queries", tmp / "q.npy", "--candidates", tmp / "c.npy", "--k", 300, "--output", out,
                   "--query-groups", tmp / "qg.npy", "--candidate-groups", tmp / "cg.npy") == 0
    hits = read_hits(out)
    assert [h["indices"] for h in hits] == brute_force(q, c, 300, qg[:, None] == cg[None, :])[0]
    assert all(len(h["indices"]) == (cg != qg[h["query"]]).sum() for h in hits)


def test_normalize_flag(tmp_path):
    rng = np.random.default_rng(1)
    c, q = unit_rows(rng, (40, 8)), unit_rows(rng, (2, 8))
    np.save(tmp_path / "c.npy", c * 3)
    np.save(tmp_path / "q.npy", q)
    out = tmp_path / "hits.jsonl"
    args = ("--queries", tmp_path / "q.npy", "--candidates", tmp_path / "c.npy", "--k", 4, "--output", out)
    assert run_cli(*args) == 2 and not out.exists()
    assert run_cli(*args, "--normalize") == 0
    assert [h["indices"] for h in read_hits(out)] == brute_force(q, c, 4)[0]


def bad_inputs(tmp):
    rng = np.random.default_rng(2)
    good = unit_rows(rng, (10, 8))
    np.save(tmp / "good.npy", good)
    np.save(tmp / "flat.npy", good[0])
    np.save(tmp / "wide.npy", unit_rows(rng, (10, 9)))
    np.save(tmp / "ints.npy", np.ones((3, 8), np.int64))
    nan = good.copy()
    nan[6, 3] = np.nan
    np.save(tmp / "nan.npy", nan)
    (tmp / "junk.npy").write_bytes(b"not an npy file")
    np.save(tmp / "g_short.npy", np.zeros(3, np.int64))
    np.save(tmp / "g_float.npy", np.zeros(10, np.float32))
    return [
        (["--queries", "missing.npy"], "missing.npy: no such file"),
        (["--queries", "flat.npy"], "expected a 2-D array"),
        (["--candidates", "wide.npy"], "dimension 9"),
        (["--queries", "ints.npy"], "floating-point"),
        (["--queries", "nan.npy"], "nan.npy: row 6: NaN"),
        (["--candidates", "nan.npy"], "nan.npy: row 6: NaN"),
        (["--candidates", "junk.npy"], "not a readable .npy"),
        (["--k", "0"], "--k: expected a positive integer"),
        (["--query-groups", "g_short.npy", "--candidate-groups", "g_short.npy"], "shape (10,)"),
        (["--query-groups", "g_float.npy", "--candidate-groups", "g_float.npy"], "integer"),
        (["--query-groups", "g_short.npy"], "must be given together"),
        (["--mesh", "data=3,model=3"], "--mesh"),
        (["--output", "hits.npy"], "--output hits.npy: expected a .jsonl path"),
        (["--query-groups", "junk.npy", "--candidate-groups", "junk.npy"],
         "junk.npy: not a .npy file (no NumPy header); expected int query group labels [10]"),
    ]


def test_exclude_self_needs_no_more_queries_than_candidates(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    bad_inputs(tmp_path)
    np.save(tmp_path / "more.npy", unit_rows(np.random.default_rng(3), (11, 8)))
    base = ["search", "--candidates", "good.npy", "--output", "out.jsonl", "--exclude-self"]
    assert main([*base, "--queries", "more.npy", "--k", "3"]) == 2
    assert "--exclude-self: query i is candidate i, so the 11 queries in more.npy cannot outnumber the 10 " \
           "candidates in good.npy" in capsys.readouterr().err
    assert not (tmp_path / "out.jsonl").exists()
    # a --k past the pool lists every candidate but the query's own row
    assert main([*base, "--queries", "good.npy", "--k", "50", "--quiet"]) == 0
    assert all(len(json.loads(line)["indices"]) == 9 for line in (tmp_path / "out.jsonl").open())


@pytest.mark.parametrize("case", range(14))
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    change, message = bad_inputs(tmp_path)[case]
    args = {"--queries": "good.npy", "--candidates": "good.npy", "--k": "3", "--output": "out.jsonl"}
    extra = []
    for flag, value in zip(change[::2], change[1::2]):
        if flag in args:
            args[flag] = value
        else:
            extra += [flag, value]
    code = main(["search", *[x for kv in args.items() for x in kv], *extra])
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert message in err and "\n" not in err and "Traceback" not in err
    assert not (tmp_path / "out.jsonl").exists()


def test_console_entry_point(pool):
    tmp, q, c = pool
    out = tmp / "hits.jsonl"
    command = [sys.executable, "-m", "stylebench_jax.cli", "search", "--queries", str(tmp / "q.npy"),
               "--candidates", str(tmp / "c.npy"), "--k", "3", "--output", str(out)]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "8 queries x 203 candidates" in proc.stderr
    from stylebench_jax.kernels import native

    default = native.unavailable() is None  # the default float32 scan
    scan = "C++ scan" if default else "XLA scan"
    assert f"(float32, {scan})" in proc.stderr
    assert [h["indices"] for h in read_hits(out)] == brute_force(q, c, 3)[0]
