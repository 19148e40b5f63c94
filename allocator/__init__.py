"""Activation memory: per-layer in-place theory (`theory`) and whole-model planning
(`planning`). Theory knows single layers only; planning uses it, never the other way."""
