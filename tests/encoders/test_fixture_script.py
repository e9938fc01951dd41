"""The committed fixtures under tests/fixtures/ are what scripts/make_torch_fixtures.py writes: editing the
texts, seeds or families in the script without re-running it fails here."""

from tests.helpers.fixtures import DECODERS, FIXTURES, fixture_script, reference


def test_fixtures_match_the_script_that_writes_them():
    script = fixture_script()
    on_disk = sorted(p.name for p in FIXTURES.iterdir() if (p / "reference" / "meta.json").is_file())
    assert sorted(script.FAMILIES) == on_disk
    assert {name for name, family in script.FAMILIES.items() if family.kind == "decoder"} == set(DECODERS)
    for name, family in script.FAMILIES.items():
        meta = reference(name)["meta"]
        assert (meta["family"], meta["seed"], meta["texts"]) == (name, family.seed, family.texts)
        assert meta["poolings"] == sorted(script.POOLINGS[family.kind])
        assert meta["written_by"] == "scripts/make_torch_fixtures.py"
