"""The report stage: the tables and figures of a probed set, computed from its results, then written as
markdown, JSON, plots and the HTML report; the comparison of two roadmap sets; the statistics."""
