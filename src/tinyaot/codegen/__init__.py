"""C code generation: a compiled graph and its memory plan -> <name>.h, <name>.c and kernels."""
from tinyaot.codegen.c_model import CSources, generate_c

__all__ = ["CSources", "generate_c"]
