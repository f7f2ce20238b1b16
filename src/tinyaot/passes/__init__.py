"""Graph-to-graph rewrites, applied in the order `pipeline.py` lists them."""
