"""The doors to JAX's and Flax's internals: every use of what is not their public API."""
