"""The former home of tinyaot.fixedpoint, kept so that existing imports of it still work; new code imports
tinyaot.fixedpoint (which every stage may import, the front ends too)."""
from tinyaot.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    activation_range,
    multiply_by_quantized_multiplier,
    multiply_by_quantized_multiplier_64,
    quantize_multiplier,
    rounding_divide_by_pot,
    saturating_rounding_doubling_high_mul,
    tflm_quantize_multiplier,
    wrap_i32,
)

__all__ = ["INT32_MAX", "INT32_MIN", "activation_range", "multiply_by_quantized_multiplier",
           "multiply_by_quantized_multiplier_64", "quantize_multiplier", "rounding_divide_by_pot",
           "saturating_rounding_doubling_high_mul", "tflm_quantize_multiplier", "wrap_i32"]
