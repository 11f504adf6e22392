"""Agents for the MCU tasks (Zheng et al., ICML 2025; ``docs/mcu.md``), registered for every
``MCU/`` id in ``envs/mcu/registry.yaml``: the scripted ``oracle``, ``random_commands`` (uniform
among the plain commands), ``bc`` (a tiny text policy cloned from the oracle) and ``ppo``
(Stable-Baselines3 on the macro actions)."""
