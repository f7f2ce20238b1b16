"""NumPy reference kernels: the executable definition of every int8 op (the oracle).

Each module holds a frozen params dataclass, `prepare` (compile-time precomputation shared with the
C code generator) and the kernel itself, named like its C twin in `c/kernels/`.
"""
