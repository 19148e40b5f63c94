"""Per-layer in-place theory: closed-form gaps, the corruption simulator, the sweep."""
