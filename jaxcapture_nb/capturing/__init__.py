"""capture(): recording what a model sows in one block."""
