"""Generators: render every file under prod/ from one source and named features."""
