"""Pure-Python text handling: input files, sentence splitting, token-budget chunking."""
