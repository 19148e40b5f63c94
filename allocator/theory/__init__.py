"""Per-layer in-place theory: layer geometry, closed-form gaps (Theorems 4, 13, 14; the
herringbone baseline, Eq. 1, Corollary 1, Theorem 11), the corruption simulator that never
evaluates a closed form, and the 10,000-layer validation sweep. Fused row-streamed chains
(issue 12): row schedule, rings, composite geometry and gap (fused), their simulator
(simulate_fused) and sweep (sweep_fused)."""
