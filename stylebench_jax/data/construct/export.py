"""Exports of a built benchmark: JSON Lines (always), Parquet, a TensorFlow Datasets builder
directory, and a manifest-only release (no text).

* ``splits/<split>.jsonl``: one record per line, fields in :data:`FIELDS` order.
* ``parquet/<split>.parquet`` (pyarrow): the same columns, ``labels`` as a JSON string.
* ``tfds/<name>/<version>/``: a prepared TFDS dataset (``array_record`` or ``parquet`` shards plus
  ``dataset_info.json`` / ``features.json``) written with a ``GeneratorBasedBuilder`` and readable
  with ``tfds.builder_from_directory(path)`` and ``builder.as_data_source(split)`` -- TFDS's
  NumPy path, no TensorFlow needed for writing or reading. TFDS orders examples by a hash of their
  key (the record id), deterministically.
* ``release/<split>.jsonl``: the manifest-only release for sources whose text may not be
  redistributed (AuthBench Table 16's Tier B): id, hashed author, metadata, SHA-256 of the text,
  and where it comes from (source, source-relative file, line, character span of the normalised
  source text), so the holder of the source rebuilds the text with the same config.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from stylebench_jax.data.construct.records import Record, length_bucket, text_sha256
from stylebench_jax.fileio import atomic_open

FIELDS = ("id", "author_id", "language", "genre", "subgenre", "source", "task_type", "token_length",
          "length_bucket", "topic", "thread", "labels", "text")
TFDS_VERSION = "1.0.0"


def record_row(record: Record) -> dict:
    return {"id": record.id, "author_id": record.author_id, "language": record.language,
            "genre": record.genre, "subgenre": record.subgenre, "source": record.source,
            "task_type": record.task_type, "token_length": record.token_length,
            "length_bucket": length_bucket(record.token_length), "topic": record.topic,
            "thread": record.thread, "labels": record.labels, "text": record.text}


def release_row(record: Record) -> dict:
    return {"id": record.id, "author_id": record.author_id, "language": record.language,
            "genre": record.genre, "subgenre": record.subgenre, "source": record.source,
            "task_type": record.task_type, "token_length": record.token_length,
            "length_bucket": length_bucket(record.token_length), "sha256": text_sha256(record.text),
            "file": record.origin.file, "line": record.origin.line, "start": record.origin.start,
            "end": record.origin.end}


def write_jsonl(path: Path, rows) -> None:
    with atomic_open(path, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")


def write_parquet(path: Path, records: Sequence[Record]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [record_row(r) for r in records]
    columns = {name: [row[name] for row in rows] for name in FIELDS}
    columns["labels"] = [json.dumps(v, ensure_ascii=False, sort_keys=True) for v in columns["labels"]]
    schema = pa.schema([(name, pa.int64() if name == "token_length" else pa.string()) for name in FIELDS])
    table = pa.table(columns, schema=schema)
    with atomic_open(path, "wb") as handle:
        pq.write_table(table, handle)


def _tfds_name(name: str) -> str:
    cleaned = "".join(ch if ch.isalnum() else "_" for ch in name.lower()).strip("_")
    return cleaned if cleaned and cleaned[0].isalpha() else f"bench_{cleaned}"


def write_tfds(directory: Path, name: str, splits: dict[str, Sequence[Record]], file_format: str,
               description: str, quiet: bool = False) -> Path:
    """Prepare a TFDS dataset under ``directory``; returns the builder directory
    (``directory/<name>/<version>``) to pass to ``tfds.builder_from_directory``."""
    import numpy as np
    import tensorflow_datasets as tfds
    from tensorflow_datasets.core import registered

    tfds.disable_progress_bar()
    features = tfds.features.FeaturesDict({
        **{field: tfds.features.Text() for field in FIELDS if field != "token_length"},
        "token_length": tfds.features.Scalar(dtype=np.int64)})

    def example(record: Record) -> dict:
        row = record_row(record)
        row["labels"] = json.dumps(row["labels"], ensure_ascii=False, sort_keys=True)
        return {k: ("" if v is None else v) for k, v in row.items()}

    def _info(self):
        return tfds.core.DatasetInfo(builder=self, description=description, features=features)

    def _split_generators(self, dl_manager):
        return {split: self._generate_examples(split) for split, records in splits.items() if records}

    def _generate_examples(self, split):
        for record in splits[split]:
            yield record.id, example(record)

    with registered.skip_registration():  # a class per build, not a dataset in TFDS's global registry
        builder_class = type(_tfds_name(name), (tfds.core.GeneratorBasedBuilder,), {
            # a one-part module name: TFDS then looks for no checksums file next to the class
            "__module__": "stylebench_tfds_export", "VERSION": tfds.core.Version(TFDS_VERSION),
            "_info": _info, "_split_generators": _split_generators, "_generate_examples": _generate_examples})
    builder = builder_class(data_dir=str(directory), file_format=file_format)
    # TFDS prints "Downloading and preparing dataset ..." on stdout: progress belongs on stderr (or
    # nowhere with --quiet)
    with contextlib.redirect_stdout(io.StringIO() if quiet else sys.stderr), _deterministic_examples():
        builder.download_and_prepare()
    return Path(builder.data_dir)


@contextlib.contextmanager
def _deterministic_examples():
    """TFDS serialises each ``tf.train.Example`` with ``SerializeToString()``, whose feature map comes
    out in an order that changes from process to process (the same build twice gave other bytes);
    for the build's duration it serialises with ``deterministic=True`` (keys sorted)."""
    from unittest import mock

    from tensorflow_datasets.core.example_serializer import ExampleSerializer

    def serialize_example(self, example):
        return self.get_tf_example(example).SerializeToString(deterministic=True)

    with mock.patch.object(ExampleSerializer, "serialize_example", serialize_example):
        yield
