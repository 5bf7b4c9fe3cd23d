"""Analysis of results and measured runs: calibration of costs from a measured run, residuals
between a measured run and its simulation (between ``ppviz.io`` and ``ppviz.charts``)."""
