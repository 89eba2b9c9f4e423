"""Summaries computed on the device: statistics, histograms, the step table and its program cache."""
