"""DPareto (Avent et al. 2020): the multi-objective BO loop, Pareto maths, and the learners' problems."""
