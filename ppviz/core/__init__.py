"""The core: configs, the program IR and its rules, placements, the schedule registry, the
simulation engines, memory and results. It imports no schedule family and nothing that draws."""
