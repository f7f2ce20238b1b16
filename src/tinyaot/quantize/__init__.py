"""Post-training int8 quantization (TFLite int8 scheme)."""
