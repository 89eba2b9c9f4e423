"""Jupyter's side: the cell magic and the server extension that serves saved pictures."""
