"""Built-in problems and loaders for the real datasets in the shared data directory."""
