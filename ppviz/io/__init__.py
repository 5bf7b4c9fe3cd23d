"""Formats in and out: torch's schedules, the Chrome trace, the text Gantt chart."""
