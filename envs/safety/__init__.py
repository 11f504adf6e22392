"""Safe: cost-constrained tasks in NumPy mirroring DSRL's families (Liu et al., DMLR 2024;
``docs/safety.md``).

Importing this package registers the ``Safe/`` ids of ``registry.yaml``; the task modules (and
Numba) are imported only when an environment is made. Every task returns ``info["cost"]`` on
each step and publishes ``env.unwrapped.obs_groups`` (``robot``, ``reward``, ``cost`` slices of
the flat observation); the final step carries ``info["metrics"]`` and ``info["success"]`` at the
env's ``target_cost``. Every id has an offline dataset (``omnigym dataset Safe/... --out DIR``,
see ``datasets.py``; ``export-minari`` writes it as a Minari dataset, ``minari_export.py``).

With pybullet and bullet-safety-gym installed (``make bullet``), ``Safe/BulletBallRun-v0``,
``BulletBallCircle``, ``BulletCarRun`` and ``BulletCarCircle`` (``bullet.py``) are registered
too, with DSRL's horizons and cost limits, in the family ``SafeBullet`` (no ``obs_groups``, no
dataset).
"""

from omnigym.registry import register_family

register_family(__name__)
