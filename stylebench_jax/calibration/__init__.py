"""Calibration (Writing7, seed 003 §5): temperature scaling and threshold search for a trained
bi-encoder's classifier head (``temperature``), cosine -> probability maps for any embedder
(``similarity``), and the files both write (``files``). ``stylebench calibrate`` drives them
(``run.py``)."""

from stylebench_jax.calibration.files import StyleCalibration, style_calibration_payload
from stylebench_jax.calibration.similarity import (
    ISOTONIC_MIN_PAIRS,
    SimilarityMap,
    fit_isotonic,
    fit_logistic,
    fit_similarity_calibration,
)
from stylebench_jax.calibration.temperature import (
    fit_temperature,
    nll,
    probabilities,
    search_threshold,
    threshold_table,
)

__all__ = ["ISOTONIC_MIN_PAIRS", "SimilarityMap", "StyleCalibration", "fit_isotonic", "fit_logistic",
           "fit_similarity_calibration", "fit_temperature", "nll", "probabilities", "search_threshold",
           "style_calibration_payload", "threshold_table"]
