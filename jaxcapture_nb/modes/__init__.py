"""Train and eval modes: views of a model, modes given as call arguments, and comparisons."""
