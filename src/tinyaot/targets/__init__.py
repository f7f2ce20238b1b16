"""Targets: where generated C runs (host via gcc + ctypes, Cortex-M33 on QEMU, Pico 2 projects)."""
