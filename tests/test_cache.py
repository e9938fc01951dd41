"""The embedding cache: content addressing, identity separation, crash safety."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from stylebench_jax import cache as cache_module
from stylebench_jax.cache import EmbeddingCache


class HashEmbedder:
    """Deterministic fake: vector = function of the text's bytes; counts calls."""

    def __init__(self, identity="fake/v1", dim=16):
        self._identity, self.dim, self.name, self.calls = identity, dim, "fake", []

    @property
    def identity(self):
        return self._identity

    def embed(self, texts):
        self.calls.append(list(texts))
        return np.stack([vector_of(t, self.dim) for t in texts]) if texts else np.zeros((0, self.dim))


def vector_of(text, dim=16):
    seed = int.from_bytes(text.encode("utf-8")[:8].ljust(8, b"\0"), "little") ^ len(text)
    return np.random.default_rng(seed).standard_normal(dim).astype(np.float32)


def test_hits_misses_and_duplicates(tmp_path):
    cache, model = EmbeddingCache(tmp_path), HashEmbedder()
    first = cache.embed(model, ["a", "b", "a", "c"])
    assert model.calls == [["a", "b", "c"]]
    np.testing.assert_array_equal(first[0], first[2])
    second = EmbeddingCache(tmp_path).embed(model, ["c", "d", "a"])
    assert model.calls[-1] == ["d"]
    np.testing.assert_array_equal(second[[0, 2]], first[[3, 0]])
    np.testing.assert_array_equal(second[1], vector_of("d"))


def test_identity_separates_spaces(tmp_path):
    cache = EmbeddingCache(tmp_path)
    a, b = HashEmbedder("m/weights=1"), HashEmbedder("m/weights=2")
    cache.embed(a, ["x"])
    cache.embed(b, ["x"])
    assert len(a.calls) == len(b.calls) == 1
    assert len(cache.info()) == 2


def test_embedding_code_change_separates_spaces(tmp_path, monkeypatch):
    """Vectors computed by an older encoder or chunker are not served to a newer one."""
    cache = EmbeddingCache(tmp_path)
    model = HashEmbedder()
    cache.embed(model, ["x"])
    cache.embed(model, ["x"])
    assert len(model.calls) == 1
    monkeypatch.setattr(cache_module, "source_digest", lambda *parts: "f" * 16)
    cache.embed(model, ["x"])
    assert len(model.calls) == 2 and len(cache.info()) == 2
    assert "code=ffffffffffffffff" in (cache.space(model) / "identity.txt").read_text()


def test_disabled_cache_never_touches_disk(tmp_path):
    model = HashEmbedder()
    EmbeddingCache(tmp_path / "c", enabled=False).embed(model, ["x"])
    EmbeddingCache(tmp_path / "c", enabled=False).embed(model, ["x"])
    assert len(model.calls) == 2 and not (tmp_path / "c").exists()


def test_crash_between_vectors_and_keys_leaves_readable_cache(tmp_path, monkeypatch):
    model = HashEmbedder()
    EmbeddingCache(tmp_path).embed(model, ["kept"])
    real_save = cache_module.save_npy_atomic

    def crash_on_keys(path, array, **options):
        if str(path).endswith(".keys.npy"):
            raise KeyboardInterrupt("killed")
        real_save(path, array, **options)

    monkeypatch.setattr(cache_module, "save_npy_atomic", crash_on_keys)
    with pytest.raises(KeyboardInterrupt):
        EmbeddingCache(tmp_path).embed(model, ["lost", "kept"])
    monkeypatch.setattr(cache_module, "save_npy_atomic", real_save)
    # Leftovers a killed writer can leave: an orphan vectors file and a half-written temp file.
    space = EmbeddingCache(tmp_path).space(model)
    (space / ".junk.keys.npy.1234.tmp").write_bytes(b"\x93NUMPY partial")
    fresh = HashEmbedder()
    got = EmbeddingCache(tmp_path).embed(fresh, ["kept", "lost"])
    assert fresh.calls == [["lost"]]
    np.testing.assert_array_equal(got, np.stack([vector_of("kept"), vector_of("lost")]))


def test_sigkill_during_writes_never_yields_a_wrong_vector(tmp_path):
    """A writer killed with SIGKILL at an arbitrary moment leaves only complete, correct entries."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {os.path.dirname(__file__)!r})
        from test_cache import HashEmbedder
        from stylebench_jax.cache import EmbeddingCache
        cache, model = EmbeddingCache({str(tmp_path)!r}), HashEmbedder(dim=4096)
        print("ready", flush=True)
        for batch in range(10**6):
            cache.embed(model, [f"text {{batch}} {{i}}" for i in range(64)])
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ready"
    time.sleep(1.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    cache, model = EmbeddingCache(tmp_path), HashEmbedder(dim=4096)
    index = cache._load_index(cache.space(model))
    assert len(index) >= 64  # it did write something before dying
    texts = [f"text {b} {i}" for b in range(len(index) // 64 + 2) for i in range(64)]
    got = cache.embed(model, texts)
    np.testing.assert_array_equal(got, np.stack([vector_of(t, 4096) for t in texts]))


def test_the_attention_kernels_sources_are_part_of_the_embedding_code():
    from stylebench_jax.sources import PACKAGE_ROOT

    for part in cache_module.EMBEDDING_CODE:
        assert (PACKAGE_ROOT / part).exists(), part
    assert "kernels/cpu_attention.cc" in cache_module.EMBEDDING_CODE
    source = (PACKAGE_ROOT / "kernels/cpu_attention.cc").read_text()
    included = {line.split('"')[1] for line in source.splitlines()
                if line.startswith('#include "') and not line.startswith('#include "xla/')}
    assert {f"kernels/{name}" for name in included} <= set(cache_module.EMBEDDING_CODE)


def test_a_killed_run_keeps_the_blocks_it_finished(tmp_path, monkeypatch):
    """Missing texts are embedded and stored block by block: the run dies in block 3, the rerun
    embeds only what was not stored (before, nothing was stored until the end)."""
    monkeypatch.setattr(cache_module, "STORE_EVERY", 4)
    texts = [f"text {i}" for i in range(10)]

    class Dies(HashEmbedder):
        def embed(self, texts):
            if len(self.calls) == 2:
                raise KeyboardInterrupt
            return super().embed(texts)

    dying = Dies()
    with pytest.raises(KeyboardInterrupt):
        EmbeddingCache(tmp_path).embed(dying, texts)
    assert dying.calls == [texts[:4], texts[4:8]]
    model = HashEmbedder()
    out = EmbeddingCache(tmp_path).embed(model, texts)
    assert model.calls == [texts[8:]]
    np.testing.assert_array_equal(out, np.stack([vector_of(t) for t in texts]))


def _one_shard(cache, model):
    space = cache.space(model)
    (vectors,) = space.glob("*.vectors.npy")
    return space, vectors


@pytest.mark.parametrize("damage", ["flip", "width", "dtype", "empty", "empty keys", "truncated"])
def test_a_damaged_shard_is_reported_and_recomputed_never_served(tmp_path, capsys, damage):
    """Flipped bytes were served as vectors (max diff 5e37); a header of another width crashed every
    later run; '>f4' gave NaN vectors; an empty file (np.load: EOFError) ended every later embed,
    `cache info` and `cache clean` in a traceback; a shard that no longer read was skipped unsaid."""
    model = HashEmbedder()
    texts = [f"text {i}" for i in range(20)]
    EmbeddingCache(tmp_path).embed(model, texts)
    space, vectors = _one_shard(EmbeddingCache(tmp_path), model)
    raw = bytearray(vectors.read_bytes())
    target = vectors
    if damage == "flip":
        raw[-40:-30] = bytes(10)
    elif damage == "width":
        raw[:128] = raw[:128].replace(b"(20, 16)", b"(20,  8)")
    elif damage == "dtype":
        raw[:128] = raw[:128].replace(b"<f4", b">f4")
    elif damage == "truncated":
        raw = raw[:200]
    else:
        raw = b""
        target = vectors if damage == "empty" else vectors.with_name(vectors.name.replace("vectors", "keys"))
    target.write_bytes(bytes(raw))
    # info reads keys and headers only: a checksum or a width it cannot know counts as before
    assert EmbeddingCache(tmp_path).info()[0]["vectors"] == (20 if damage in ("flip", "width") else 0)
    fresh = HashEmbedder()
    got = EmbeddingCache(tmp_path).embed(fresh, texts)
    np.testing.assert_array_equal(got, np.stack([vector_of(t) for t in texts]))
    assert fresh.calls == [texts]
    err = capsys.readouterr().err
    what = "does not match its checksum" if damage == "flip" else "does not read as a whole shard"
    assert err.count(f"{vectors} {what}") == 1, err
    # the recomputed shard replaced the damaged one: the next run embeds nothing
    again = HashEmbedder()
    EmbeddingCache(tmp_path).embed(again, texts)
    assert again.calls == []


def test_clean_removes_damaged_shards_and_keys_without_vectors(tmp_path, monkeypatch):
    model = HashEmbedder()
    cache = EmbeddingCache(tmp_path)
    cache.embed(model, ["a", "b"])
    cache.embed(model, ["c"])
    space = cache.space(model)
    first, second = sorted(space.glob("*.vectors.npy"))
    raw = bytearray(first.read_bytes())
    raw[-4:] = b"\x00\x00\x80\x7f"
    first.write_bytes(bytes(raw))
    second.unlink()  # its keys file is left alone
    monkeypatch.setattr(cache_module, "INCOMPLETE_GRACE", 0)
    stats = EmbeddingCache(tmp_path).clean()
    assert (stats["damaged_shards"], stats["incomplete_shards"]) == (1, 1)
    assert not list(space.glob("*.npy")) and not list(space.glob("*.sha256"))


def test_a_cache_that_cannot_be_written_is_skipped_with_one_warning(tmp_path, capsys, monkeypatch):
    """A full disk ended the command in a traceback and lost the computed vectors."""
    def full(path, array, **options):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(cache_module, "save_npy_atomic", full)
    cache, model = EmbeddingCache(tmp_path), HashEmbedder()
    got = cache.embed(model, ["a", "b"])
    got2 = cache.embed(model, ["c"])
    np.testing.assert_array_equal(np.concatenate([got, got2]), np.stack([vector_of(t) for t in "abc"]))
    err = capsys.readouterr().err
    assert err.count("cannot store embeddings in the cache") == 1 and "No space left on device" in err


def test_a_cache_cleared_by_another_process_meanwhile_is_a_miss(tmp_path):
    cache, model = EmbeddingCache(tmp_path), HashEmbedder()
    cache.embed(model, ["a", "b"])
    EmbeddingCache(tmp_path).clear()  # another process
    fresh = HashEmbedder()
    cache.model = fresh
    got = cache.embed(fresh, ["a", "b", "c"])
    np.testing.assert_array_equal(got, np.stack([vector_of(t) for t in "abc"]))
    assert fresh.calls == [["a", "b", "c"]]


def test_info_reads_without_removing_anything(tmp_path):
    cache, model = EmbeddingCache(tmp_path), HashEmbedder()
    cache.embed(model, ["a"])
    space = cache.space(model)
    orphan = space / ".x.vectors.npy~vm~999999~ab.tmp"
    orphan.write_bytes(b"partial")
    (space / "identity.txt").write_bytes(b"\xff\xfe")
    (row,) = EmbeddingCache(tmp_path).info()
    assert row["vectors"] == 1 and orphan.exists()


def test_an_unreadable_checksum_marks_the_shard_damaged(tmp_path):
    model = HashEmbedder()
    EmbeddingCache(tmp_path).embed(model, ["a", "b"])
    space, vectors = _one_shard(EmbeddingCache(tmp_path), model)
    vectors.with_name(vectors.name.replace(".vectors.npy", ".sha256")).write_bytes(b"\xff\xfe")
    fresh = HashEmbedder()
    EmbeddingCache(tmp_path).embed(fresh, ["a", "b"])
    assert fresh.calls == [["a", "b"]]


def test_clean_counts_the_bytes_of_the_orphans_it_removes(tmp_path):
    """A run killed while writing a 16,384-row shard leaves ~25 MB of temporary: `clean` removed it
    and said "0.0 MiB freed"."""
    cache, model = EmbeddingCache(tmp_path), HashEmbedder()
    cache.embed(model, ["a"])
    (cache.space(model) / ".x.vectors.npy~vm~999999~ab.tmp").write_bytes(bytes(3000))
    (tmp_path / ".y~vm~999999~cd.tmp").write_bytes(bytes(500))
    stats = EmbeddingCache(tmp_path).clean()
    assert (stats["orphans"], stats["bytes"]) == (2, 3500)


def test_a_space_whose_orphans_cannot_be_removed_is_read_as_it_is(tmp_path, monkeypatch):
    """A space made by another user (read-only here) holding a dead writer's temporary: the sweep's
    PermissionError ended `embed` although every cached row could be read."""
    cache, model = EmbeddingCache(tmp_path), HashEmbedder()
    cache.embed(model, ["a", "b"])

    def refuse(directory, name=None):
        raise PermissionError(13, "Permission denied", str(directory))

    monkeypatch.setattr(cache_module, "remove_orphans", refuse)
    fresh = HashEmbedder()
    got = EmbeddingCache(tmp_path).embed(fresh, ["a", "b", "c"])
    np.testing.assert_array_equal(got, np.stack([vector_of(t) for t in "abc"]))
    assert fresh.calls == [["c"]]
