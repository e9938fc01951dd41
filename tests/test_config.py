"""The config system: YAML -> frozen dataclass, located errors, key=value overrides."""

import dataclasses
import re
from pathlib import Path
from typing import Literal

import pytest

from stylebench_jax.config import (
    ConfigError,
    InvalidField,
    config_from_dict,
    config_to_dict,
    format_path,
    load_config,
    parse_path,
)
from stylebench_jax.errors import UserInputError


@dataclasses.dataclass(frozen=True)
class Optimizer:
    lr: float = 2e-5
    warmup: float = dataclasses.field(default=0.1, metadata={"minimum": 0.0, "maximum": 1.0})

    def __post_init__(self):
        if self.lr * self.warmup > 1:  # a check of the whole section, reported at the dataclass
            raise ValueError(f"lr x warmup must be <= 1, found {self.lr * self.warmup:g}")


@dataclasses.dataclass(frozen=True)
class Trainer:
    batch_size: int = dataclasses.field(default=32, metadata={"minimum": 1})
    pooling: Literal["mean", "cls", "attention"] = "attention"
    optimizer: Optimizer = Optimizer()
    tags: tuple[str, ...] = ()

    def __post_init__(self):
        if "bad" in self.tags:
            raise InvalidField(f"tags[{self.tags.index('bad')}]", "'bad' is not allowed")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run:
    name: str = dataclasses.field(metadata={"non_empty": True})
    data: Path
    trainer: Trainer = Trainer()
    seed: int | None = None
    weights: dict[str, float] = dataclasses.field(default_factory=dict)
    shape: tuple[int, int] = (1, 1)
    note: str = dataclasses.field(default="", metadata={"config": False})


GOOD = """\
name: demo
data: pairs.jsonl
trainer:
  batch_size: 8
  optimizer:
    lr: 0.001
  tags: [a, b]
weights: {ce: 1, supcon: 0.1}
"""


def write(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_good_config_builds_frozen_dataclasses(tmp_path):
    run = load_config(write(tmp_path, GOOD), Run)
    assert run == Run(name="demo", data=Path("pairs.jsonl"),
                      trainer=Trainer(batch_size=8, optimizer=Optimizer(lr=0.001), tags=("a", "b")),
                      weights={"ce": 1.0, "supcon": 0.1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.name = "x"
    assert config_to_dict(run)["trainer"]["tags"] == ["a", "b"]
    assert config_to_dict(run)["data"] == "pairs.jsonl"


def test_overrides_are_typed_by_the_schema(tmp_path):
    path = write(tmp_path, GOOD)
    run = load_config(path, Run, ["trainer.batch_size=512", "trainer.optimizer.lr=2e-5", "seed=7",
                                  "trainer.tags=[x]", "name=123", "shape=[2, 3]", "seed=null"])
    assert run.trainer.batch_size == 512 and run.trainer.optimizer.lr == 2e-5
    assert run.trainer.tags == ("x",) and run.name == "123" and run.shape == (2, 3) and run.seed is None
    assert load_config(path, Run, ["trainer.tags[1]=z"]).trainer.tags == ("a", "z")


@pytest.mark.parametrize("text, line, fragment", [
    (GOOD.replace("batch_size: 8", "batch_size: eight"), 4,
     "trainer.batch_size: expected an integer, found 'eight'"),
    (GOOD.replace("batch_size: 8", "batch_size: 0"), 4, "trainer.batch_size: expected a value >= 1, found 0"),
    (GOOD.replace("  batch_size: 8", "  batch: 8"), 4,
     "trainer.batch: unknown key 'batch'; expected one of batch_size, pooling, optimizer, tags"),
    (GOOD.replace("lr: 0.001", "lr: fast"), 6, "trainer.optimizer.lr: expected a number, found 'fast'"),
    (GOOD.replace("tags: [a, b]", "tags: [a, bad]"), 7, "trainer.tags[1]: 'bad' is not allowed"),
    (GOOD.replace("name: demo\n", ""), 1, "name: missing; expected a string"),
    (GOOD.replace("name: demo", "name: ''"), 1, "name: expected a non-empty value"),
    (GOOD + "note: x\n", 9, "note: unknown key 'note'"),
    (GOOD + "trainer2: {}\n", 9, "trainer2: unknown key"),
    (GOOD.replace("data: pairs.jsonl", "data: 3"), 2, "data: expected a path (a non-empty string), found 3"),
    (GOOD + "shape: [1]\n", 9, "shape: expected a list of 2 values, found 1"),
    ("- a\n- b\n", 1, "expected a mapping with keys name, data"),
])
def test_errors_name_file_line_and_key_path(tmp_path, text, line, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(path, Run)
    assert isinstance(info.value, UserInputError)
    message = str(info.value)
    assert message.startswith(f"{path}:{line}: "), message
    assert fragment in message, message
    assert "\n" not in message


@pytest.mark.parametrize("override, fragment", [
    ("trainer.batch_size=big", "trainer.batch_size: expected an integer, found 'big'"),
    ("trainer.pooling=max", "trainer.pooling: expected one of mean, cls, attention, found 'max'"),
    ("trainer.batchsize=1", "trainer.batchsize: unknown key 'batchsize'"),
    ("bogus.key=1", "bogus: unknown key 'bogus'"),  # was located at a line of the file that lacks it
    ("nonsense", "expected key.path=value"),
    ("trainer.tags[5]=x", "no list entry 5"),
    ("trainer.optimizer.warmup=2", "trainer.optimizer.warmup: expected a value <= 1.0"),
    ("trainer.optimizer.warmup=nan", "trainer.optimizer.warmup: expected a finite number, found nan"),
    ("trainer.optimizer.lr=.inf", "trainer.optimizer.lr: expected a finite number, found inf"),
])
def test_bad_overrides_name_the_override(tmp_path, override, fragment):
    path = write(tmp_path, GOOD)
    with pytest.raises(ConfigError) as info:
        load_config(path, Run, [override])
    message = str(info.value)
    assert message.startswith(f"{path}: override"), message
    assert fragment in message, message


def test_a_section_check_names_the_override_that_changed_the_section(tmp_path):
    path = write(tmp_path, GOOD)
    with pytest.raises(ConfigError) as info:
        load_config(path, Run, ["trainer.optimizer.lr=20", "seed=3"])
    assert str(info.value) == (f"{path}:6: trainer.optimizer: lr x warmup must be <= 1, found 2 "
                               "(with override 'trainer.optimizer.lr=20')")
    with pytest.raises(ConfigError) as info:  # from the file alone: no override named
        load_config(write(tmp_path, GOOD.replace("lr: 0.001", "lr: 30")), Run, ["seed=3"])
    assert str(info.value).endswith("trainer.optimizer: lr x warmup must be <= 1, found 3")


def test_yaml_problems(tmp_path):
    with pytest.raises(ConfigError, match=r"run.yaml:3:\d+: invalid YAML"):
        load_config(write(tmp_path, "name: x\ndata: [a\n"), Run)
    with pytest.raises(ConfigError, match="config file not found"):
        load_config(tmp_path / "absent.yaml", Run)
    with pytest.raises(ConfigError, match="expected a YAML file, found a directory"):
        load_config(tmp_path, Run)
    (tmp_path / "bin.yaml").write_bytes(b"name: \xff\n")
    with pytest.raises(ConfigError, match="invalid UTF-8"):
        load_config(tmp_path / "bin.yaml", Run)


def test_config_from_dict_and_paths():
    run = config_from_dict(Run, {"name": "x", "data": "d"}, source="test")
    assert run.trainer == Trainer() and run.data == Path("d")
    with pytest.raises(ConfigError, match="^test: trainer.pooling: expected one of"):
        config_from_dict(Run, {"name": "x", "data": "d", "trainer": {"pooling": "max"}}, source="test")
    assert format_path(("a", 3, "b", 0)) == "a[3].b[0]"
    assert parse_path("a[3].b[0]") == ("a", 3, "b", 0)
    assert parse_path("x") == ("x",)


# --------------------------------------------------------------------------- every file under configs/

CONFIGS = Path(__file__).resolve().parents[1] / "configs"


def _schemas():
    from stylebench_jax.data.construct.config import BuildConfig
    from stylebench_jax.data.pairs.config import PreparePairsConfig
    from stylebench_jax.parallel.launch import LaunchProfile
    from stylebench_jax.raven.config import RavenConfig
    from stylebench_jax.training.config import TrainConfig
    from stylebench_jax.transfer.config import TransferConfig

    return {"data": BuildConfig, "pairs": PreparePairsConfig, "train": TrainConfig, "raven": RavenConfig,
            "transfer": TransferConfig, "launch": LaunchProfile, "suites": None}


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*/*.yaml")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_config_file_loads_through_its_schema_and_says_how_it_was_measured(path, tmp_path):
    """One loader for every YAML under configs/, each file opening with the command that runs it,
    the hardware it was (or was not) measured on and the figure it should reach."""
    from stylebench_jax.config import load_config
    from stylebench_jax.data.suites import load_suite

    schemas = _schemas()
    assert path.parent.name in schemas, f"{path}: no schema for configs/{path.parent.name}/: add it here"
    schema = schemas[path.parent.name]
    # A training config checks that its prepare-pairs directory exists: a clean clone has none yet
    # (runs/ is made by `stylebench prepare-pairs`), so point it at an existing one.
    uses_pairs = path.parent.name == "train" and "\n  pairs:" in path.read_text(encoding="utf-8")
    if uses_pairs:
        (tmp_path / "pairs.jsonl").write_text("", encoding="utf-8")
    overrides = [f"data.pairs={tmp_path}"] if uses_pairs else []
    loaded = load_suite(path) if schema is None else load_config(path, schema, overrides)
    assert loaded is not None
    header = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line)
    for label in ("Command:", "Hardware:", "Figures?:"):
        assert any(re.match(rf"#\s*{label}", line) for line in header), \
            f"{path.relative_to(CONFIGS.parent)}: the opening comment has no '{label}' line"
