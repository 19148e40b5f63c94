"""Per-layer in-place theory: layer geometry, closed-form gaps (Theorems 4, 13, 14; the
herringbone baseline, Eq. 1, Corollary 1, Theorem 11), the corruption simulator that never
evaluates a closed form, and the 10,000-layer validation sweep. Fused row-streamed chains
(issue 12): row schedule, rings, composite geometry and gap (fused), their simulator
(simulate_fused) and sweep (sweep_fused). Two cores over one RiP workspace (issue 27): the
schedule model and its engines (two_core), each kind's two-core program (two_core_programs),
the pixel-level simulator (two_core_fast), the gaps (two_core_bounds) and their sweep
(sweep_two_core); docs/two-cores.md."""
