"""fileio.json_ready: what every JSON output goes through, so NaN never reaches a file as ``NaN``."""

import json
import math

import numpy as np

from stylebench_jax.fileio import json_ready


def test_json_ready_writes_undefined_numbers_as_null_and_numpy_as_python():
    value = {"auroc": float("nan"), "loss": np.float32(np.inf), 3: (np.int64(2), -math.inf),
             "nested": [{"x": np.float64(0.25)}, "text", None, True]}
    ready = json_ready(value)
    assert ready == {"auroc": None, "loss": None, "3": [2, None], "nested": [{"x": 0.25}, "text", None, True]}
    assert type(ready["3"][0]) is int and type(ready["nested"][0]["x"]) is float
    json.dumps(ready, allow_nan=False)  # valid JSON: raises on NaN
