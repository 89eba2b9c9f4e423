"""Notebook views of a capture: the interactive widget and its static fallback."""
