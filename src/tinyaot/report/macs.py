"""Multiply-accumulates per node: counted in ir/macs.py (the plan weighs patch stages by them too); the reports
read them from here."""
from __future__ import annotations

from tinyaot.ir.macs import graph_macs, node_macs

__all__ = ["graph_macs", "node_macs"]
