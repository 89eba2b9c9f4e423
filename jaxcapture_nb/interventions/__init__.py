"""Interventions and readings of a model's insides: patching, ablation, steering, patching sweeps and the logit lens."""
