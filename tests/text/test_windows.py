"""text/windows.py, text/normalize.py, text/gutenberg.py: window layout by hand, caps, standardisation,
Gutenberg markers."""

import numpy as np
import pytest

from stylebench_jax.text.gutenberg import clean_book, strip_gutenberg, strip_gutenberg_markers
from stylebench_jax.text.normalize import standardize_text
from stylebench_jax.text.windows import (
    Window,
    cap_windows,
    document_sentences,
    sentence_windows,
    text_windows,
    window_starts,
)


@pytest.mark.parametrize("n, expected", [
    (0, []), (1, [0]), (14, [0]), (15, [0, 10]), (24, [0, 10]), (25, [0, 10, 20]), (34, [0, 10, 20]),
    (35, [0, 10, 20, 30])])
def test_window_starts_by_hand(n, expected):
    # step 10; a window is made only when it adds a sentence beyond the previous one
    assert window_starts(n, 14, 4) == expected


def test_windows_cover_every_sentence_and_overlap_by_four():
    sentences = [f"Sentence number {i} is here." for i in range(37)]
    windows = sentence_windows(sentences, 14, 4, min_chars=0)
    assert [(w.start, w.end) for w in windows] == [(0, 14), (10, 24), (20, 34), (30, 37)]
    assert windows[1].text == " ".join(sentences[10:24])
    covered = sorted({i for w in windows for i in range(w.start, w.end)})
    assert covered == list(range(37))
    assert windows[0].overlaps(windows[1]) and not windows[0].overlaps(windows[2])


def test_short_windows_are_dropped():
    sentences = ["Short one."] * 14 + ["x" * 250]
    windows = sentence_windows(sentences, 14, 4, min_chars=200)
    assert [(w.start, w.end) for w in windows] == [(10, 15)]  # the first is 14 * 10 + 13 = 153 chars


def test_bad_sizes_raise():
    with pytest.raises(ValueError, match="overlap"):
        window_starts(10, 4, 4)
    with pytest.raises(ValueError, match="size"):
        window_starts(10, 0, 0)


def test_cap_even_and_seeded():
    windows = [Window(i, i + 1, str(i)) for i in range(10)]
    assert [w.start for w in cap_windows(windows, 4)] == [0, 2, 5, 7]
    drawn = cap_windows(windows, 4, np.random.default_rng(0))
    assert [w.start for w in drawn] == sorted(w.start for w in drawn) and len(set(drawn)) == 4
    assert drawn == cap_windows(windows, 4, np.random.default_rng(0))
    assert cap_windows(windows, None) == windows and cap_windows(windows, 10) == windows


def test_standardize_text():
    raw = "Cafe\u0301\r\nis\u00a0open.\t It\u200b is\n\n\n  CHAPTER II \n\nThe end."
    assert standardize_text(raw) == "Caf\u00e9 is open. It is\n\nCHAPTER II\n\nThe end."


def test_paragraphs_end_sentences():
    text = "CHAPTER I\n\nIt was a dark night. The wind blew.\n\nShe said nothing"
    assert document_sentences(text) == [
        "CHAPTER I", "It was a dark night.", "The wind blew.", "She said nothing"]
    assert document_sentences(text, min_sentence_chars=15) == ["It was a dark night.", "She said nothing"]


def test_text_windows_end_to_end():
    text = "\n".join(f"Line {i} of the story goes on and on." for i in range(30))
    windows = text_windows(text, 14, 4, min_chars=0)
    assert [(w.start, w.end) for w in windows] == [(0, 14), (10, 24), (20, 30)]
    assert windows[0].text.startswith("Line 0 of the story goes on and on. Line 1 of")


GUTENBERG = """The Project Gutenberg EBook of A Tale, by Someone

*** START OF THIS PROJECT GUTENBERG EBOOK A TALE ***
Produced by Jane Volunteer

It was the best of times.
Project Gutenberg volunteers helped here.
It was the worst of times.

End of the Project Gutenberg EBook of A Tale
license text
"""


def test_gutenberg_markers_and_lines():
    body = strip_gutenberg_markers(GUTENBERG)
    assert "START OF" not in body and "license" not in body and "best of times" in body
    cleaned = strip_gutenberg(GUTENBERG)
    assert [line for line in cleaned.splitlines() if line.strip()] == [
        "It was the best of times.", "It was the worst of times."]
    assert strip_gutenberg_markers("no markers here") == "no markers here"


def test_boilerplate_words_inside_a_book_are_prose_and_kept():
    middle = "\n".join(f"middle line {i:05d} of the story" for i in range(4_000))  # 1% > 5,000 chars
    prose = ("produced by those ruins on the castled Rhine, which have crumbled and\n"
             "transcribed from the Bible, and other good books, such passages\n"
             "unnoticed, said doctor Kysarcius--> he was of the Kysarcii of the Low\n")
    book = ("Produced by Jane Volunteer and the Online Distributed\nProofreading Team\n" + middle
            + "\n" + prose + middle + "\nEnd of the Project Gutenberg EBook of A Tale\n")
    cleaned = strip_gutenberg(book)
    assert prose in cleaned
    assert "Jane Volunteer" not in cleaned and "Distributed" not in cleaned and "EBook" not in cleaned


def test_clean_book_trims_two_percent_at_line_ends():
    text = "\n".join(f"line {i:03d}" for i in range(200))  # 1599 chars; 2% = 31 chars
    cleaned = clean_book(text)
    assert cleaned.splitlines()[0] == "line 004" and cleaned.splitlines()[-1] == "line 195"
