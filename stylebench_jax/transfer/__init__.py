"""The Writing7 style-transfer benchmark (seed 003 §7): reference excerpts, the seed's topics and
prompt, generator backends (OpenAI-compatible and Anthropic HTTP clients; copy, shuffle and Markov
local backends), originality checks, calibrated scoring, aggregates and a resumable trace.
``stylebench transfer --config configs/transfer/<name>.yaml --output DIR`` runs it."""
