"""Agents for the MCU tasks (Zheng et al., ICML 2025; ``docs/mcu.md``): the scripted oracle,
registered as the ``oracle`` agent of every ``MCU/`` id in ``envs/mcu/registry.yaml``."""
