"""Whole-model planning: each op's in-place requirement, the strategy's placement problem,
the placers (first fit, MILP), and the independent replay that checks every plan."""
