"""Reports: memory (table + picture), flash/RAM, per-layer quantization error, profiles."""
