"""Markov chain, edition detection, originality checks and excerpt drawing on small hand-made texts;
the shipped configs load."""

from pathlib import Path

import numpy as np
import pytest

from stylebench_jax.transfer.excerpts import Excerpt, draw_starts
from stylebench_jax.transfer.generation import GenerationRequest, NotApplicable
from stylebench_jax.transfer.local_backends import MarkovBackend, ShuffleBackend, is_edition_of
from stylebench_jax.transfer.markov import MarkovChain
from stylebench_jax.transfer.originality import capitalised_names, longest_common_words, originality

BOOK = ("The sea was calm. The captain looked at the sea and said nothing. Then the crew sang a song.\n\n"
        "The wind rose at night. The captain said the wind was kind. The crew slept.")


def test_markov_chain_follows_only_observed_transitions_and_is_seeded():
    chain = MarkovChain.train([BOOK], order=2, max_words=1000, rng=np.random.default_rng(0))
    text = chain.generate(30, np.random.default_rng(5))
    assert text == chain.generate(30, np.random.default_rng(5))
    tokens = [t for t in text.replace("\n\n", " \u00b6 ").split()]
    source = BOOK.replace("\n\n", " \u00b6 ").split()
    trigrams = {tuple(source[i:i + 3]) for i in range(len(source) - 2)}
    # every generated trigram that does not straddle a restart exists in the training text
    seen = sum(tuple(tokens[i:i + 3]) in trigrams for i in range(len(tokens) - 2))
    assert seen >= 0.8 * (len(tokens) - 2)
    assert len([t for t in tokens if t != "\u00b6"]) >= 30 and text.rstrip()[-1] in ".!?"


def _excerpt(text, author="A", book="c/one"):
    sentences = tuple(s.strip() + "." for s in text.split(".") if s.strip())
    return Excerpt(book, author, 0, 0, sentences, (), len(sentences))


def test_markov_backend_uses_other_books_and_skips_lonely_authors():
    excerpt = _excerpt("The sea was calm. The captain looked at the sea and said nothing. Then the crew sang")
    other = "Other book text. It is new."
    books = {"A": [("c/one", BOOK), ("d/one", BOOK + " Extra words here."), ("c/two", other)],
             "B": [("c/solo", BOOK)]}
    backend = MarkovBackend("m", books, order=1, seed=0)
    request = GenerationRequest("m/x", "", "", excerpt, seed=3, target_words=20)
    # c/one is the excerpt's book, d/one another edition of it (holds the excerpt's 8-grams)
    assert [b for b, _ in backend.training_books(request)] == ["c/two"]
    assert backend.generate(request).usage["training_books"] == ["c/two"]
    lonely = GenerationRequest("m/y", "", "", _excerpt(BOOK, author="B", book="c/solo"), seed=3,
                               target_words=20)
    with pytest.raises(NotApplicable, match="no other book by 'B'"):
        backend.generate(lonely)
    assert is_edition_of(excerpt.text, BOOK) and not is_edition_of(excerpt.text, other)


def test_shuffle_never_returns_the_original_order():
    excerpt = _excerpt("One a. Two b")
    for seed in range(20):
        request = GenerationRequest("s/x", "", "", excerpt, seed, 10)
        assert ShuffleBackend("s").generate(request).text == "Two b. One a."


def test_originality_checks():
    assert longest_common_words("It was the best of times, it was", "said: it WAS the best of days") == 5
    assert longest_common_words("abc", "xyz") == 0
    excerpt = 'Mr. Gradgrind spoke to Louisa. "Now, Louisa," said he, in London. The Room, the room was cold.'
    # not Mr (honorific), Now / The (sentence-initial), Room (also written "room")
    assert capitalised_names(excerpt) == {"Gradgrind", "Louisa", "London"}
    check = originality(excerpt, "Louisa walked to the market. It was cold.", max_common_words=3)
    assert check["reused_names"] == ["Louisa"] and check["flags"] == ["reused_names"]
    assert originality(excerpt, excerpt, 8)["flags"] == ["copied_phrase", "reused_names"]
    # possessives name their owner on both sides; a title is no name
    excerpt = "It was late. Then Joe came in, and Gradgrind's hat fell, the Squire said."
    assert capitalised_names(excerpt) == {"Joe", "Gradgrind"}
    reused = originality(excerpt, "Joe\u2019s robot met Gradgrind at dawn.")["reused_names"]
    assert reused == ["Gradgrind", "Joe"]


def test_excerpt_starts_are_distinct_and_seeded():
    starts = draw_starts(100, 15, 5, np.random.default_rng(1))
    assert starts == draw_starts(100, 15, 5, np.random.default_rng(1))
    assert all(abs(a - b) >= 15 for i, a in enumerate(starts) for b in starts[i + 1:])
    assert all(0 <= s <= 85 for s in starts)
    with pytest.raises(ValueError, match="cannot hold"):
        draw_starts(40, 15, 3, np.random.default_rng(0))


def test_a_line_of_dialogue_keeps_its_opening_quote():
    """The splitter leaves an opening quote on the sentence before: excerpts began 'Biddy,"' and
    ended on a stray quote."""
    from stylebench_jax.transfer.excerpts import book_sentences

    text = ('He said nothing.\n\n"I know everything." "Till you are done, Biddy," said Joe. "Well!" '
            "She left. \u201cNow,\u201d she said. \u201cGo.\u201d And so.")
    sentences, opens = book_sentences(text)
    assert sentences == ["He said nothing.", '"I know everything."', '"Till you are done, Biddy," said Joe.',
                         '"Well!"', "She left.", "\u201cNow,\u201d she said.", "\u201cGo.\u201d", "And so."]
    assert opens == {0, 1}


def test_shipped_transfer_configs_load_and_say_how_to_run():
    from stylebench_jax.config import load_config
    from stylebench_jax.transfer.config import TransferConfig

    root = Path(__file__).resolve().parents[2] / "configs" / "transfer"
    paths = sorted(root.glob("*.yaml"))
    assert [p.name for p in paths] == ["writing7_llms.yaml", "writing7_local.yaml"]
    for path in paths:
        head = path.read_text(encoding="utf-8").splitlines()[:4]
        assert head[0].startswith("# Command:") and any(line.startswith("# Hardware:") for line in head)
        config = load_config(path, TransferConfig)
        assert [b.kind for b in config.backends[:3]] == ["copy", "markov", "shuffle"]
        assert config.excerpts.per_book == 5 and config.excerpts.sentences == 15
        assert all(b.api_key_env for b in config.backends if b.kind in ("openai", "anthropic"))


def test_ordering_text_explains_a_failed_order_with_this_runs_measurements():
    from stylebench_jax.report.transfer import ordering_text

    order = {"expected": ["copy", "markov", "shuffle"], "observed": ["copy", "shuffle", "markov"],
             "holds": False, "score": "score_calibrated", "n_items": 12,
             "means": {"copy": 0.9, "markov": 0.3, "shuffle": 0.8},
             "backends": {"copy": "ceiling", "markov": "mk", "shuffle": "sh"},
             "differences": {"ceiling - mk": {"mean": 0.6, "ci_low": 0.5, "ci_high": 0.7},
                             "ceiling - sh": {"mean": 0.1234, "ci_low": 0.05, "ci_high": 0.2},
                             "mk - sh": {"mean": -0.5, "ci_low": -0.6, "ci_high": -0.4}}}
    runs = {"ceiling": {"n_ok": 4}, "mk": {"n_ok": 3}, "sh": {"n_ok": 4}}
    text = ordering_text({"ordering": order, "runs": runs, "flags": {"sh": {"reused_names": 4}}})
    assert "observed copy > shuffle > markov" in text and "does not hold" in text
    assert "markov - shuffle -50.0 [-60.0, -40.0]: reversed" in text and "copy - markov 60.0" in text
    assert "costs 12.3 points against the copy (score_calibrated x100)" in text
    assert "shuffle 4 of 4, markov 0 of 3" in text
    above = {"mean": 0.1, "ci_low": 0.02, "ci_high": 0.2}
    holds = {**order, "observed": order["expected"], "holds": True,
             "differences": {**order["differences"], "mk - sh": above}}
    assert ordering_text({"ordering": holds}).endswith("The ordering holds.")
    # equal means, intervals [0, 0]: a tie, not an order (it was "copy > shuffle > markov, does not hold")
    tie = {**order, "means": {"copy": 0.881, "markov": 0.881, "shuffle": 0.881},
           "differences": {k: {"mean": 0.0, "ci_low": 0.0, "ci_high": 0.0} for k in order["differences"]}}
    text = ordering_text({"ordering": tie, "runs": runs, "flags": {}})
    assert text.endswith("The ordering is not established: the differences above are within noise or "
                         "rest on too few items.")
    assert "-0.0" not in text and "copy - markov 0.0 [0.0, 0.0]: within noise" in text
    # two items: their min and max are the "interval"; no pair is called holding or reversed
    few = ordering_text({"ordering": {**order, "n_items": 2}, "runs": runs, "flags": {}})
    assert "copy - markov 60.0 [50.0, 70.0]: no verdict (2 items; at least 10 needed)" in few
    assert "reversed" not in few and "does not hold" not in few


def test_calibration_diagrams_only_for_the_calibration_in_use(tmp_path):
    import json

    from stylebench_jax.report.transfer import _calibration_figures

    embedder = {"name": "minilm", "identity": "x"}
    selection = {"method_requested": "auto", "scores": {"logistic": {"brier": 0.2}}}
    calibration = tmp_path / "style_calibration.json"
    calibration.write_text(json.dumps({"embedder": embedder, "selection": selection}))
    reliability = {"confidence": [0.25, 0.75], "frequency": [0.2, 0.8], "count": [5, 5]}
    bins = {"naive": {"reliability": reliability, "ece": 0.1},
            "calibrated": {"reliability": reliability, "ece": 0.05}}
    report = {"similarity": {"embedder": embedder, "selection": selection, "fit": bins, "evaluation": {}}}
    (tmp_path / "calibration_report.json").write_text(json.dumps(report))
    results = {"description": {"scoring": {"calibration": {"path": str(calibration)}}}}
    assert list(_calibration_figures(results)) == ["calibration_reliability_fit.png"]
    # a report left beside another calibration (another embedder's map) is not shown as the one in use
    calibration.write_text(json.dumps({"embedder": {"name": "function_words", "identity": "y"},
                                       "selection": selection}))
    assert _calibration_figures(results) == {}


def test_paired_intervals_resample_excerpts_with_all_their_samples():
    import numpy as np

    from stylebench_jax.metrics import bootstrap_ci, bootstrap_weights
    from stylebench_jax.transfer.aggregate import paired

    rng = np.random.default_rng(0)

    def rows(samples):
        out = []
        for e in range(8):
            for s in range(samples):
                item = f"x#e{e}#s{s}"
                for backend, shift in (("a", 0.1), ("b", 0.0)):
                    out.append({"status": "ok", "backend": backend, "item": item, "excerpt": f"x#e{e}",
                                "scores": {"cosine": float(rng.random()) + shift}})
        return out

    # one story per excerpt: the plain bootstrap over items, bit for bit
    one = rows(1)
    diff = np.array([r["scores"]["cosine"] for r in one if r["backend"] == "a"]) - np.array(
        [r["scores"]["cosine"] for r in one if r["backend"] == "b"])
    got = paired(one, ["a", "b"], "cosine")["differences"]["a - b"]
    assert (got["ci_low"], got["ci_high"]) == bootstrap_ci(diff, seed=0)
    # three samples per excerpt: excerpts are resampled whole (a manual cluster bootstrap)
    three = rows(3)
    a = np.array([r["scores"]["cosine"] for r in three if r["backend"] == "a"])
    b = np.array([r["scores"]["cosine"] for r in three if r["backend"] == "b"])
    per_excerpt = (a - b).reshape(8, 3).sum(axis=1)
    reps = np.concatenate([w @ per_excerpt / (w.sum(axis=1) * 3) for w in bootstrap_weights(8, 1000, 0)])
    got = paired(three, ["a", "b"], "cosine")["differences"]["a - b"]
    assert got["n_items"] == 24
    expected = tuple(np.percentile(reps, [2.5, 97.5]))
    assert (got["ci_low"], got["ci_high"]) == pytest.approx(expected, abs=1e-12)
