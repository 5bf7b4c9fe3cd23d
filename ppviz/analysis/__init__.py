"""Analyses over many runs: the fastest schedule under a memory limit (``search``), the bubble/memory
Pareto frontier (``frontier``) and parallel sweeps over configs (``sweep``)."""
