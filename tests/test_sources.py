"""Source digests: they follow the code they cover and nothing else."""

from stylebench_jax import sources


def test_source_digest_follows_the_sources_it_covers(tmp_path, monkeypatch):
    real = sources.source_digest()
    assert len(real) == 16 and real == sources.source_digest() != sources.source_digest("encoders")
    (tmp_path / "encoders").mkdir()
    (tmp_path / "tasks").mkdir()
    (tmp_path / "encoders" / "bert.py").write_text("a = 1\n")
    monkeypatch.setattr(sources, "PACKAGE_ROOT", tmp_path)
    seen = {}
    for label, path, text in [("start", "tasks/t.py", "x = 1\n"), ("task edit", "tasks/t.py", "x = 2\n"),
                              ("encoder edit", "encoders/bert.py", "a = 2\n")]:
        (tmp_path / path).write_text(text)
        sources.source_digest.cache_clear()
        seen[label] = (sources.source_digest(), sources.source_digest("encoders"))
    sources.source_digest.cache_clear()  # nothing cached: the next call reads the files again
    assert seen["start"][0] != seen["task edit"][0] != seen["encoder edit"][0]
    assert seen["start"][1] == seen["task edit"][1] != seen["encoder edit"][1]  # tasks are not covered
    (tmp_path / "tasks" / "notes.txt").write_text("not code")
    assert sources.source_digest() == seen["encoder edit"][0]
    sources.source_digest.cache_clear()  # the real package's digests again for later tests
