"""TensorBoard event files: written while a run trains, read back for a view."""
