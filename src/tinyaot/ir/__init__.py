"""Graph IR: the only contract between stages."""
from tinyaot.ir.graph import Graph, Node, QParams, Tensor

__all__ = ["Graph", "Node", "QParams", "Tensor"]
