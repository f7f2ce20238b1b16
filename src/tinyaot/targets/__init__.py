"""Targets: where generated C runs (host via gcc + ctypes, Cortex-M33 on QEMU, Pico 2 projects).

Each target implements base.Target: `build(sources) -> artifact` once, `run(artifact, inputs) -> RunResult`
(outputs, instructions, stack bytes, image sizes) as often as needed: host.HostTarget, host.SanitizedHostTarget,
m33.M33Target, pico2.Pico2AppTarget.  profiles.py holds the one compiler profile each of them (and every size
measurement) compiles with; engines.py is the registry of the engines CompiledModel.run accepts; sizes.py is the
one place a model's sizes are measured, elf.py reads the sections they are made of.
"""
