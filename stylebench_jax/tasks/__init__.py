"""Evaluation protocols: one module per task type (STEB, STEL, AuthBench, RAVEN)."""
