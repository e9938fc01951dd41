"""stylebench_jax: measure and train style text embeddings with JAX/Flax.

Data flows one way: ``text/`` -> ``encoders/`` (Embedder) -> ``cache`` -> embeddings [N, D]
-> ``kernels/`` -> ``tasks/`` -> ``metrics/`` -> results JSON and reports.
"""

__version__ = "0.1.0"
