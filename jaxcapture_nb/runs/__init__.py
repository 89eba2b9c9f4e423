"""Runs over training: watch, the stream of rows, saved runs and their overlays."""
