"""tinyaot's version, in a module of its own: the generated files name it, and a module that needs it imports this
instead of the package (whose __init__ reaches the whole compiler)."""
__version__ = "0.1.0"
