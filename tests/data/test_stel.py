"""data/stel.py: the public STEL files load as documented; malformed files fail with file:line:column."""

import pytest

from stylebench_jax.data.stel import HEADER, PAPER_COMPONENTS, STEL_FILES, load_stel, read_stel_tsv
from stylebench_jax.errors import UserInputError

ROW = ["7", "A one", "A two", "S one", "S two", "1", "QQ_x", "4", "formality"]


def write_tsv(path, rows, header=HEADER):
    lines = ["\t".join(header)] + ["\t".join(row) for row in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_public_files_load_with_documented_counts(data_root):
    stel = load_stel(data_root)
    assert list(stel) == list(STEL_FILES)
    sizes = {name: len(instances) for name, instances in stel.items()}
    assert sizes == {"formality": 100, "simplicity": 100, "contraction": 100, "nbr_substitution": 100,
                     "emotives": 200, "em-subj-pronoun": 100, "definite-abstract": 100}
    # README: formal sample CA 1:50/2:50, votes 5:54 4:30 3:16; characteristics carry no votes
    formality = stel["formality"]
    assert sum(x.correct == 1 for x in formality) == 50
    assert sorted({x.votes for x in formality}) == [3, 4, 5]
    assert sum(x.votes == 5 for x in formality) == 54
    assert all(x.votes is None for x in stel["contraction"] + stel["definite-abstract"])
    assert formality[0].id == "QQ_i-454-f-454_f-2482-i-2482--1" and formality[0].correct == 2
    # quoted newlines stay inside their field (em-subj-pronoun texts end with a newline)
    assert stel["em-subj-pronoun"][0].anchor1.endswith("as a writer.\n")


def test_paper_components_and_vote_filter(tmp_path):
    rows = [ROW, ["8", "B1", "B2", "T1", "T2", "2", "QQ_y", "2", "formality"]]
    root = tmp_path / "data"
    (root / "stel" / "dimensions").mkdir(parents=True)
    write_tsv(root / "stel" / STEL_FILES["formality"], rows)
    kept = load_stel(root, ["formality"])["formality"]
    assert [x.id for x in kept] == ["QQ_x"]  # 2 votes < 3: dropped as in STEL's CLASS_THRESH filter
    assert len(load_stel(root, ["formality"], min_votes=0)["formality"]) == 2
    assert PAPER_COMPONENTS == ("formality", "simplicity", "contraction", "nbr_substitution")
    with pytest.raises(UserInputError, match="unknown STEL component"):
        load_stel(root, ["sarcasm"])


@pytest.mark.parametrize("row, where, expected", [
    (ROW[:5] + ["3"] + ROW[6:], ":3:6:", "Correct Alternative"),
    (ROW[:7] + ["many"] + ROW[8:], ":3:8:", "Votes"),
    (ROW[:2] + ["  "] + ROW[3:], ":3:3:", "Anchor 2"),
    (ROW[:8], ":3:", "expected 9 tab-separated fields, found 8"),
    (ROW[:6] + [""] + ROW[7:], ":3:7:", "empty ID"),
])
def test_malformed_row_names_file_line_column(tmp_path, row, where, expected):
    # header = line 1, first row = line 2, bad row = line 3; column = 1-based field number
    path = write_tsv(tmp_path / "bad.tsv", [ROW, row])
    with pytest.raises(UserInputError) as info:
        read_stel_tsv(path)
    message = str(info.value)
    assert message.startswith(f"{path}{where}"), message
    assert expected in message


def test_line_numbers_count_quoted_newlines(tmp_path):
    multiline = ["1", '"first line\nsecond line"', "A two", "S one", "S two", "1", "QQ_a", "", "formality"]
    bad = ROW[:5] + ["x"] + ROW[6:]
    path = write_tsv(tmp_path / "multi.tsv", [multiline, bad])
    with pytest.raises(UserInputError, match=r"multi\.tsv:4:6: field 'Correct Alternative'"):
        read_stel_tsv(path)
    path = write_tsv(tmp_path / "ok.tsv", [multiline])
    assert read_stel_tsv(path)[0].anchor1 == "first line\nsecond line"


def test_file_level_errors(tmp_path):
    with pytest.raises(UserInputError, match=r"missing\.tsv: file not found"):
        read_stel_tsv(tmp_path / "missing.tsv")
    empty = tmp_path / "empty.tsv"
    empty.write_text("", encoding="utf-8")
    with pytest.raises(UserInputError, match=r"empty\.tsv:1: empty file"):
        read_stel_tsv(empty)
    header = write_tsv(tmp_path / "header.tsv", [ROW], header=["", "Anchor 1", "Anchor 2"])
    with pytest.raises(UserInputError, match=r"header\.tsv:1: unexpected header"):
        read_stel_tsv(header)
    only_header = write_tsv(tmp_path / "only.tsv", [])
    with pytest.raises(UserInputError, match=r"only\.tsv:2: no task instances"):
        read_stel_tsv(only_header)
    dup = write_tsv(tmp_path / "dup.tsv", [ROW, ROW])
    with pytest.raises(UserInputError,
                       match=r"dup\.tsv:3:7: field 'ID': duplicate ID 'QQ_x' \(first on line 2\)"):
        read_stel_tsv(dup)
    unclosed = tmp_path / "unclosed.tsv"
    unclosed.write_text("\t".join(HEADER) + "\n" + "\t".join(ROW) + '\n9\t"never closed\tx\n',
                        encoding="utf-8")
    with pytest.raises(UserInputError, match=r"unclosed\.tsv:3: malformed TSV"):
        read_stel_tsv(unclosed)
    latin = tmp_path / "latin.tsv"
    row = "\t".join(ROW).replace("A one", "caf\xe9")  # "7\tcaf" is 5 bytes: the bad byte is column 6
    latin.write_bytes(("\t".join(HEADER) + "\n").encode() + row.encode("latin-1"))
    with pytest.raises(UserInputError, match=r"latin\.tsv:2:6: invalid UTF-8 \(byte e9 "):
        read_stel_tsv(latin)


def test_a_byte_order_mark_is_dropped_as_by_every_other_reader(tmp_path):
    plain = write_tsv(tmp_path / "plain.tsv", [ROW])
    marked = tmp_path / "marked.tsv"
    marked.write_bytes(b"\xef\xbb\xbf" + plain.read_bytes())
    assert read_stel_tsv(marked) == read_stel_tsv(plain)


# ------------------------------------------------------------------------------ STEB's construction

def test_steb_pairs_equal_stebs_loader_on_the_public_files(data_root):
    from stylebench_jax.data.stel import STEB_PAIRS_PER_STYLE, steb_ordered_pairs, steb_stel_lists
    from tests.reference.steb_reference import load_stel_records, select_records

    records = load_stel_records(str(data_root / "stel"))
    expected: dict[str, list[tuple[str, str]]] = {}
    for record in records:
        expected.setdefault(record["label"], []).append(tuple(record["text"]))
    every = [x for instances in load_stel(data_root, min_votes=0).values() for x in instances]
    ours = steb_ordered_pairs(every)
    assert ours == expected  # same pairs, same order, per style type
    assert {k: len(v) for k, v in ours.items()} == {"formality": 196, "simplicity": 197, "contraction": 101,
                                                    "nbr_substitution": 100, "emotives": 200}
    # STEB's benchmark preset: order alignment, episode size 1, 100 episodes per class
    assert STEB_PAIRS_PER_STYLE == 100
    selected = select_records(records, 1, STEB_PAIRS_PER_STYLE)
    assert steb_stel_lists(every) == {label: [list(t) for t in texts] for label, texts in selected.items()}
    assert {k: len(v) for k, v in steb_stel_lists(every, per_style=None).items()} == \
        {k: len(v) for k, v in ours.items()}


def test_steb_pair_order_agrees_with_the_correct_alternative(data_root):
    # STEB orders each pair by its half of the ID and ignores "Correct Alternative"; on the public
    # files both say the same: the anchors' most-style text pairs with the matching alternative.
    from stylebench_jax.data.stel import _ordered_pair

    for component, instances in load_stel(data_root, min_votes=0).items():
        for x in instances:
            halves = x.id.strip()[3:].split("_")
            anchors = _ordered_pair(x.anchor1, x.anchor2, halves[0], component)
            alternatives = _ordered_pair(x.alt1, x.alt2, halves[1], component)
            if anchors is None or alternatives is None:
                assert component in ("em-subj-pronoun", "definite-abstract")
                continue
            a1_is_most = anchors[0] == x.anchor1
            s1_is_most = alternatives[0] == x.alt1
            assert (a1_is_most == s1_is_most) == (x.correct == 1), x.id


def test_steb_units_are_ordered_lists_of_the_five_style_types(data_root):
    from stylebench_jax.data.registry import load_units

    units = load_units("stel", data_root)
    lists = {u.subset: u.payload.lists for u in units if u.task == "order_list"}
    assert list(lists) == ["formality", "simplicity", "contraction", "nbr_substitution", "emotives"]
    assert all(len(v) == 100 and all(len(pair) == 2 for pair in v) for v in lists.values())
    assert [u.subset for u in units if u.task == "order_quad"] == list(STEL_FILES)
