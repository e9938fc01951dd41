"""Shared readers: every malformation is a UserInputError located at file:line[:column]."""

import gzip

import numpy as np
import pytest

from stylebench_jax.data.readers import read_jsonl, read_lines, read_table, read_text
from stylebench_jax.data.sampling import (
    balanced_indices,
    balanced_pairs,
    disjoint_lists,
    excerpt,
    sample,
    unique_labelled,
    unit_rng,
)
from stylebench_jax.errors import UserInputError


def write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_table_reads_quoted_newlines_tabs_and_gzip(tmp_path):
    content = b'a\tb\n1\t"x\ny"\n2\t"tab\there ""q"""\n'
    plain = write(tmp_path / "t.tsv", content)
    packed = write(tmp_path / "t.tsv.gz", gzip.compress(content))
    for path in (plain, packed):
        rows = read_table(path, columns=("a", "b"), multiline=True)
        assert [(r.line, r["a"], r["b"]) for r in rows] == [(2, "1", "x\ny"), (4, "2", 'tab\there "q"')]


def test_table_drops_bom_and_keeps_extra_columns(tmp_path):
    path = write(tmp_path / "t.csv", "\ufeffa,b,c\n1,2,3\n".encode())
    (row,) = read_table(path, delimiter=",", columns=("a", "c"))
    assert (row["a"], row["c"], row.integer("b")) == ("1", "3", 2)


@pytest.mark.parametrize("content, where, fragment", [
    (b"a\tb\n1\t2\n3\n", ":3:2:", "expected 2 tab-separated fields (a, b), found 1"),
    (b"a\tb\n1\t2\t9\n", ":2:3:", "found 3"),
    (b"a\tb\n1\t2\n\n3\t4\n", ":3:", "blank line"),
    (b"a\tc\n1\t2\n", ":1:", "missing column(s) 'b'"),
    (b"", ":1:", "empty file"),
    (b'a\tb\n1\t"open\n', ":", "malformed tab-separated record"),
    (b'a\tb\n1\t"x"y\n', ":2:", "malformed tab-separated record"),
    (b"a\tb\n1\tok\n2\tbad \xff byte\n", ":3:7:", "invalid UTF-8 (byte ff"),
])
def test_table_errors_are_located(tmp_path, content, where, fragment):
    path = write(tmp_path / "bad.tsv", content)
    with pytest.raises(UserInputError) as info:
        read_table(path, columns=("a", "b"))
    message = str(info.value)
    assert message.startswith(f"{path}{where}"), message
    assert fragment in message
    assert "\n" not in message


def test_an_unclosed_quote_is_located_where_it_opens_and_cannot_swallow_rows(tmp_path):
    rows = "".join(f"{i}\tline {i}\n" for i in range(2, 20))
    # a quote opened on line 3 closes on line 8 and is followed by text: the parser stops on line 8
    broken = rows.replace("line 3", '"line 3').replace("line 8\n", 'line 8"x\n')
    path = write(tmp_path / "quote.tsv", ("a\tb\n" + broken).encode())
    with pytest.raises(UserInputError, match=r"quote\.tsv:3: malformed tab-separated record "
                                             r"\(.*; the parser stopped on line 8\)"):
        read_table(path, columns=("a", "b"))
    # a stray quote closed at a field's end swallows lines 3-8 into one text unless the file may
    # hold multi-line fields
    swallowed = rows.replace("line 3", '"line 3').replace("line 8\n", 'line 8"\n')
    path = write(tmp_path / "swallow.tsv", ("a\tb\n" + swallowed).encode())
    with pytest.raises(UserInputError, match=r"swallow\.tsv:3:2: field 'b' spans lines 3-8; this file has "
                                             r"one record per line"):
        read_table(path, columns=("a", "b"))
    rows = read_table(path, columns=("a", "b"), multiline=True)
    assert len(rows) == 18 - 5 and rows[1]["b"].startswith("line 3\n4\tline 4")


def test_typed_fields_name_line_column_and_field(tmp_path):
    path = write(tmp_path / "t.tsv", b"name\tn\tx\tkind\nok\t3\t1.5\tA\nok\tthree\tnan\tC\n")
    first, second = read_table(path, columns=("name", "n", "x", "kind"))
    assert (first.integer("n", minimum=1), first.number("x"), first.choice("kind", "AB")) == (3, 1.5, "A")
    with pytest.raises(UserInputError, match=r"t\.tsv:3:2: field 'n': expected an integer, found 'three'"):
        second.integer("n")
    with pytest.raises(UserInputError, match=r":3:3: field 'x': expected a finite number"):
        second.number("x")
    with pytest.raises(UserInputError, match=r":3:4: field 'kind': expected one of A, B; found 'C'"):
        second.choice("kind", ("A", "B"))
    with pytest.raises(UserInputError, match=r":2:2: field 'n': expected an integer >= 4, found 3"):
        first.integer("n", minimum=4)


def test_gzip_and_missing_file_errors(tmp_path):
    with pytest.raises(UserInputError, match="not a valid gzip file"):
        read_text(write(tmp_path / "x.tsv.gz", b"not gzip at all"))
    with pytest.raises(UserInputError, match="file not found"):
        read_text(tmp_path / "absent.tsv")


def test_jsonl(tmp_path):
    good = write(tmp_path / "g.jsonl", b'{"a": 1, "b": "x"}\n{"a": 2, "b": null}\n')
    rows = read_jsonl(good, keys=("a", "b"))
    assert [r.integer("a") for r in rows] == [1, 2] and rows[1].optional_text("b") is None
    cases = [(b'{"a": 1}\n{"a": 2,, }\n', r":2:9: invalid JSON"),
             (b'{"a": 1}\n[1]\n', r":2: expected a JSON object"),
             (b'{"b": 1}\n', r":1: missing key 'a'"), (b'{"a": 1}\n\n{"a": 2}\n', r":2: blank line")]
    for k, (content, pattern) in enumerate(cases):
        with pytest.raises(UserInputError, match=pattern):
            read_jsonl(write(tmp_path / f"b{k}.jsonl", content), keys=("a",))


def test_lines(tmp_path):
    assert read_lines(write(tmp_path / "a.txt", b"x\r\ny\n")) == ["x", "y"]
    with pytest.raises(UserInputError, match=r"b\.txt:2:1: empty line"):
        read_lines(write(tmp_path / "b.txt", b"x\n\ny\n"))


def test_unit_rng_is_stable_and_key_dependent():
    a = unit_rng(0, "bible", "all").integers(0, 10**9, size=4)
    assert np.array_equal(a, unit_rng(0, "bible", "all").integers(0, 10**9, size=4))
    assert not np.array_equal(a, unit_rng(0, "bible", "other").integers(0, 10**9, size=4))
    assert not np.array_equal(a, unit_rng(1, "bible", "all").integers(0, 10**9, size=4))


def test_sampling_helpers():
    rng = np.random.default_rng(0)
    assert sample(list("abcdef"), None, rng) == list("abcdef")
    picked = sample(list(range(100)), 10, rng)
    assert len(picked) == 10 and picked == sorted(picked)
    labels = ["x"] * 5 + ["y"] * 3 + ["z"] * 1
    chosen = balanced_indices(labels, 3, rng)
    assert sorted(labels[i] for i in chosen) == ["x"] * 3 + ["y"] * 3
    with pytest.raises(ValueError):
        balanced_indices(labels, 4, rng)
    texts, kept = unique_labelled(["a", "b", "a", "c", "c"], ["1", "1", "1", "1", "2"])
    assert (texts, kept) == (["a", "b"], ["1", "1"])
    assert disjoint_lists([["a", "b"], ["b", "c"], ["d", "d"], ["e", "f"]]) == [["a", "b"], ["e", "f"]]


def test_balanced_pairs_respects_groups_and_balance():
    labels = ["A", "A", "A", "B", "B", "C"]
    groups = [0, 0, 1, 2, 3, 4]  # items 0 and 1 are volumes of one work
    first, second, same = balanced_pairs(labels, 10, np.random.default_rng(0), groups=groups)
    positives = {(i, j) for i, j, s in zip(first, second, same) if s}
    assert positives == {(0, 2), (1, 2), (3, 4)}
    assert same.count(0) == same.count(1) == 3
    for i, j, s in zip(first, second, same):
        assert i != j and (labels[i] == labels[j]) == bool(s)


def test_excerpt_length_and_bounds():
    text = "\n".join(" ".join(f"w{line}_{k}" for k in range(10)) for line in range(1000))
    rng = np.random.default_rng(3)
    for lo, hi in ((0.0, 0.5), (0.5, 1.0), (0.99, 1.0)):
        piece = excerpt(text, 120, rng, lo=lo, hi=hi)
        words = piece.split()
        assert len(words) == 120 and piece in text
        assert words[0].endswith("_0")  # starts at a line start
    assert excerpt("a b c", 10, rng) == "a b c"
