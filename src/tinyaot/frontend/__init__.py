"""Front ends: turn a user's model into a float (or already quantized) Graph."""
