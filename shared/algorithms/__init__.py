"""The papers' algorithms built on the GP and DP layers: Kusner et al.'s DP-BO, Ding et al.'s
constant-overhead tuning, DPareto, and the release planner."""
