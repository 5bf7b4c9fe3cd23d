"""Analyses above single runs (between ``ppviz.io`` and ``ppviz.charts``): costs calibrated from
a measured run (``calibrate``) and its residuals against a simulation (``residuals``); the fastest
schedule under a memory limit (``search``), the bubble/memory Pareto frontier (``frontier``) and
parallel sweeps over configs (``sweep``)."""
