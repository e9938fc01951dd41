"""Start-up checks of multi-process runs, without starting processes: the JAX_* variables, a
coordinator nobody answers at, and processes that read different configs or data (which stop with
one error instead of training on a mix; the collective is replaced by a fake gather)."""

import os
import socket
import time

import numpy as np
import pytest

from stylebench_jax.errors import UserInputError
from stylebench_jax.parallel import distributed
from stylebench_jax.training import data as training_data


def fake_processes(monkeypatch, others):
    """Two processes: this one is 0; process 1 sends ``others(mine)``."""
    monkeypatch.setattr(distributed, "process_count", lambda: 2)
    monkeypatch.setattr(distributed, "allgather_objects", lambda value: [value, others(value)])


def test_processes_that_agree_pass_and_one_that_differs_is_named(monkeypatch):
    fake_processes(monkeypatch, lambda mine: mine)
    distributed.check_processes_agree("the training texts", "abc")
    fake_processes(monkeypatch, lambda mine: mine + "x")
    with pytest.raises(UserInputError, match="the training texts: process 1 of 2 read something different"):
        distributed.check_processes_agree("the training texts", "abc")


def test_table_digest_sees_one_extra_pair_a_changed_text_and_changed_groups():
    texts, groups, topics = ["a", "b", "c"], np.array([0, 0, 1]), np.array([-1, -1, -1])
    digest = training_data.table_digest(texts, groups, topics)
    assert digest == training_data.table_digest(list(texts), groups.astype(np.int32), topics)
    assert digest != training_data.table_digest([*texts, "d"], np.r_[groups, 1], np.r_[topics, -1])
    assert digest != training_data.table_digest(["a", "b", "C"], groups, topics)
    assert digest != training_data.table_digest(["ab", "", "c"], groups, topics)  # boundaries count
    assert digest != training_data.table_digest(texts, np.array([0, 1, 1]), topics)


def test_tokenizing_refuses_texts_another_process_does_not_hold(monkeypatch):
    # process 1 read one more pair: before the check its shares would be gathered next to other texts
    fake_processes(monkeypatch, lambda mine: mine[::-1])
    monkeypatch.setattr(training_data, "process_count", lambda: 2)
    with pytest.raises(UserInputError, match="the training texts: process 1 of 2"):
        training_data.tokenize_table(["a", "b"], np.zeros(2), np.zeros(2), tokenizer=None, max_length=8)


@pytest.mark.parametrize("environ, message", [
    ({"JAX_NUM_PROCESSES": "2"}, r"\$JAX_PROCESS_ID: not set"),
    ({"JAX_NUM_PROCESSES": "two", "JAX_PROCESS_ID": "0"}, r"\$JAX_NUM_PROCESSES: expected a whole number"),
    ({"JAX_NUM_PROCESSES": "2", "JAX_PROCESS_ID": "2"}, r"\$JAX_PROCESS_ID 2: expected 0 .. 1"),
])
def test_jax_variables_are_checked_with_one_line(environ, message):
    with pytest.raises(UserInputError, match=message):
        distributed.explicit_coordinator({"JAX_COORDINATOR_ADDRESS": "h:1234", **environ})
    assert distributed.explicit_coordinator({"JAX_COORDINATOR_ADDRESS": "h:1234"}) == {}  # JAX detects
    assert distributed.explicit_coordinator({"JAX_COORDINATOR_ADDRESS": "h:1234", "JAX_NUM_PROCESSES": "2",
                                             "JAX_PROCESS_ID": "1"}) == {
        "coordinator_address": "h:1234", "num_processes": 2, "process_id": 1}


def test_a_coordinator_nobody_answers_at_is_named():
    with socket.socket() as listening:  # answers: returns at once
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        distributed.wait_for_coordinator(f"127.0.0.1:{listening.getsockname()[1]}", 1, timeout=5)
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, never listening: connections are refused
        start = time.monotonic()
        with pytest.raises(UserInputError, match=f"127.0.0.1:{port}: process 1 found nothing listening "
                                                 "there for 1 s"):
            distributed.wait_for_coordinator(f"127.0.0.1:{port}", 1, timeout=1)
        assert time.monotonic() - start < 10
    with pytest.raises(UserInputError, match="host 'no-such-host.invalid' does not resolve"):
        distributed.wait_for_coordinator("no-such-host.invalid:1234", 1, timeout=1)
    with pytest.raises(UserInputError, match="expected host:port"):
        distributed.wait_for_coordinator("node07", 1, timeout=1)


def test_eval_refuses_data_another_process_loaded_differently(monkeypatch):
    from stylebench_jax.data.suites import load_suite
    from stylebench_jax.evaluation import pipeline

    shared = os.environ.get("STYLEBENCH_SHARED", "../shared")
    suite = load_suite("stel")
    fake_processes(monkeypatch, lambda mine: mine)
    monkeypatch.setattr(pipeline, "process_count", lambda: 2)
    units, _ = pipeline._load_units(suite, [("stel", "full")], f"{shared}/data", 0, False)
    assert units
    fake_processes(monkeypatch, lambda mine: mine[::-1])
    with pytest.raises(UserInputError, match=r"the evaluation data \(--data-root.*process 1 of 2"):
        pipeline._load_units(suite, [("stel", "full")], f"{shared}/data", 0, False)


def test_eval_refuses_a_model_another_process_loaded_from_other_weights(monkeypatch):
    """Each process embeds a share of the texts: a checkpoint that differs on one host's disk mixed two
    models' vectors in one matrix; only the data were compared."""
    from types import SimpleNamespace

    from stylebench_jax.evaluation import pipeline

    models = [SimpleNamespace(label="minilm", identity="flax-bert/model/weights=ab12/tok=cd")]
    monkeypatch.setattr(pipeline, "process_count", lambda: 2)
    fake_processes(monkeypatch, lambda mine: mine)
    pipeline._check_models_agree(models)
    fake_processes(monkeypatch, lambda mine: mine.replace("ab12", "ff00"))
    with pytest.raises(UserInputError, match=r"the models \(--models: weights.*process 1 of 2"):
        pipeline._check_models_agree(models)
