"""Interventions: patching, ablation, steering and patching sweeps."""
