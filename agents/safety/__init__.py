"""The Safe family's offline agents, one algorithm per module: ``bc`` (BC-All, BC-Safe),
``bcq_lag`` (BCQ-Lagrangian), ``cdt`` (CDT-lite), ``fisor`` (FISOR-lite) and ``sdqc`` (SDQC),
on the plumbing they share in ``offline``.

They follow DSRL's baselines (Liu et al., DMLR 2024, as implemented in OSRL), FISOR (Zheng et
al., ICLR 2024) and SDQC (Yang et al., ICML 2025), and are registered for the Safe ids in
``envs/safety/registry.yaml`` (``docs/safety.md``).
"""
