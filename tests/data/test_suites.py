"""Suites: the shipped YAML files are valid and document themselves; bad files fail with file:line: key."""

import pytest

from stylebench_jax.data.registry import BUILT_DATASETS, DATASETS
from stylebench_jax.data.suites import SUITES_DIR, Suite, SuiteEntry, load_suite
from stylebench_jax.data.units import EvalUnit, LabelledTexts
from stylebench_jax.errors import UserInputError


@pytest.mark.parametrize("name", ["stel", "quick", "full"])
def test_shipped_suites_load_and_open_with_command_hardware_runtime(name):
    suite = load_suite(name)
    assert suite.name == name and suite.path == SUITES_DIR / f"{name}.yaml"
    header = [line for line in suite.path.read_text().splitlines() if line.startswith("#")]
    text = "\n".join(header)
    assert suite.path.read_text().startswith("#")
    assert f"stylebench eval --suite {name}" in text and "Hardware:" in text and "Runtime:" in text
    for entry in suite.datasets:
        assert entry.dataset in DATASETS and set(entry.tasks) <= set(DATASETS[entry.dataset].tasks)


def test_quick_and_full_cover_every_dataset():
    for name, size in (("quick", "quick"), ("full", "full")):
        suite = load_suite(name)
        assert [e.dataset for e in suite.datasets] == [d for d in DATASETS if d not in BUILT_DATASETS]
        assert {e.size for e in suite.datasets if e.dataset != "stel"} == {size}
    (stel,) = load_suite("stel").datasets
    assert stel == SuiteEntry("stel", "full", ("order_quad",), None)


def write(tmp_path, text):
    path = tmp_path / "suite.yaml"
    path.write_text(text, encoding="utf-8")
    return path


GOOD = """\
name: mine
size: quick
datasets:
  - dataset: cds_samples
    tasks: [clustering, probing]
  - dataset: pastel
    size: full
    subsets: [gender]
"""


def test_custom_suite_defaults_and_selection(tmp_path):
    suite = load_suite(write(tmp_path, GOOD))
    assert suite.datasets == (SuiteEntry("cds_samples", "quick", ("clustering", "probing")),
                              SuiteEntry("pastel", "full", DATASETS["pastel"].tasks, ("gender",)))
    payload = LabelledTexts(["a", "b"], ["x", "y"])
    cds, pastel = suite.datasets
    assert cds.keep(EvalUnit("cds_samples", "all", "clustering", payload))
    assert not cds.keep(EvalUnit("cds_samples", "all", "pair_all", payload))
    assert pastel.keep(EvalUnit("pastel", "gender", "pair_all", payload))
    assert not pastel.keep(EvalUnit("pastel", "age", "pair_all", payload))


def test_suite_load_filters_units(tmp_path, data_root):
    suite = load_suite(write(tmp_path, GOOD.replace("size: full", "size: quick")))
    units = suite.load(data_root, only=["pastel"])
    assert {(u.subset, u.task) for u in units} == {("gender", "clustering"), ("gender", "pair_all")}
    entry = SuiteEntry("cds_samples", "quick", ("clustering",), ("nope",))
    bad = Suite(name="x", datasets=(entry,), path=tmp_path / "x.yaml")
    with pytest.raises(UserInputError, match="dataset 'cds_samples' has no subset"):
        bad.load(data_root)
    # a subset and a task that exist, but not together: nothing to run (it ran 0 cells, exit 0)
    empty = Suite(name="x", datasets=(SuiteEntry("pastel", "quick", ("clustering",), ("all",)),),
                  path=tmp_path / "x.yaml")
    with pytest.raises(UserInputError, match=r"dataset 'pastel': its subsets and tasks select no unit; it "
                                             r"has \(subset/task\) .*all/probing"):
        empty.load(data_root)


@pytest.mark.parametrize("text, line, fragment", [
    ("name: x\ndatasets:\n  - dataset: cds_samples\n    tasks: [clustering, clusters]\n", 4,
     "datasets[0].tasks[1]: unknown task 'clusters' for dataset 'cds_samples'; expected some of "
     "clustering, pair_all, probing"),
    ("name: x\ndatasets:\n  - dataset: cds\n", 3,
     "datasets[0].dataset: unknown dataset 'cds'; known: stel, "),
    ("name: x\ndatasets:\n  - dataset: cds_samples\n    size: huge\n", 4,
     "datasets[0].size: expected one of quick, full, found 'huge'"),
    ("name: x\nsets: []\n", 2, "sets: unknown key 'sets'; expected one of name, description, size, datasets"),
    ("name: x\ndatasets: []\n", 2, "datasets: expected a non-empty value"),
    ("datasets:\n  - dataset: stel\n", 1, "name: missing; expected a string"),
    ("name: x\ndatasets:\n  - dataset: stel\n  - dataset: stel\n", 4,
     "datasets[1].dataset: dataset 'stel' is listed twice"),
    ("name: x\ndatasets:\n  - dataset: stel\n    task: [order_quad]\n", 4,
     "datasets[0].task: unknown key 'task'"),
    ("name: x\ndatasets:\n  - [stel]\n", 3,
     "datasets[0]: expected a mapping with keys dataset, size, tasks, subsets"),
])
def test_invalid_suites_name_file_line_and_key(tmp_path, text, line, fragment):
    path = write(tmp_path, text)
    with pytest.raises(UserInputError) as info:
        load_suite(path)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message, message


def test_yaml_syntax_error_has_line_and_column(tmp_path):
    path = write(tmp_path, "name: x\ndatasets:\n  - dataset: [stel\n")
    with pytest.raises(UserInputError, match=rf"^{path}:4:1: invalid YAML"):
        load_suite(path)


def test_unknown_suite_name_lists_known_ones(tmp_path):
    with pytest.raises(UserInputError,
                       match="unknown suite 'nightly'; known suites: authbench, full, quick, stel"):
        load_suite("nightly")
    with pytest.raises(UserInputError, match="suite file not found"):
        load_suite(tmp_path / "absent.yaml")
