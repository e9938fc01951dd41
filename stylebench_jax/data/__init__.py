"""Record schemas and validating loaders for the shared dataset formats (one module per source)."""
