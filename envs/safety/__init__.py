"""Safe: cost-constrained tasks in NumPy mirroring DSRL's families (spec safety.md §1–§2).

Importing this package registers the ``Safe/`` ids; the task modules (and Numba) are imported
only when an environment is made. Every task returns ``info["cost"]`` on each step and publishes
``env.unwrapped.obs_groups`` (``robot``, ``reward``, ``cost`` slices of the flat observation);
the final step carries ``info["metrics"]`` and ``info["success"]`` at the env's ``target_cost``.
Every id has an offline dataset (``omnigym dataset Safe/... --out DIR``, see ``datasets.py``;
``export-minari`` writes it as a Minari dataset, ``minari_export.py``).

With pybullet and bullet-safety-gym installed (``make bullet``), ``bullet.py`` also registers
``Safe/BulletBallRun-v0``, ``BulletBallCircle``, ``BulletCarRun`` and ``BulletCarCircle`` with
DSRL's horizons and cost limits, in the family ``SafeBullet`` (no ``obs_groups``, no dataset).
"""

from omnigym.envs.safety.bullet import register_bullet
from omnigym.registry import EnvInfo, register

_PAPER = (
    "Datasets and Benchmarks for Offline Safe Reinforcement Learning (Liu et al., DMLR 2024); "
    "SDQC (Yang et al., ICML 2025)"
)
_MODULE = "omnigym.envs.safety."

_FAMILIES = (
    ("Goal", "goal:GoalEnv", "reach goals while avoiding hazards{extra}", " and vases"),
    (
        "Button",
        "button:ButtonEnv",
        "press target buttons, avoiding hazards{extra}",
        " and gremlins",
    ),
    ("Push", "push:PushEnv", "push a box onto goals, avoiding hazards{extra}", " and pillars"),
    ("Circle", "circle:CircleEnv", "circle at radius 2 within |x| <= {extra}", None),
)


def _entries():
    for robot in ("Point", "Car"):
        for family, entry, text, extra in _FAMILIES:
            for level in (1, 2):
                detail = ("1.5" if level == 1 else "1.1") if extra is None else extra * (level - 1)
                yield (
                    f"Safe/{robot}{family}{level}-v0",
                    entry,
                    {"robot": robot, "level": level},
                    f"{robot} robot: {text.format(extra=detail)} (level {level}).",
                )
        yield (
            f"Safe/{robot}Run-v0",
            "run:RunEnv",
            {"robot": robot},
            f"{robot} robot: run along +x within |y| <= 0.5 under 0.8 v_max.",
        )
    yield (
        "Safe/RunnerVelocity-v0",
        "velocity:VelocityEnv",
        {},
        "1-D runner: reward for speed, cost above 0.7 u_max.",
    )


for _id, _entry, _kwargs, _description in _entries():
    register(
        EnvInfo(
            id=_id,
            entry_point=_MODULE + _entry,
            family="Safe",
            kind="single",
            obs_kind="vector",
            paper=_PAPER,
            description=_description,
            kwargs=_kwargs,
            dataset=_MODULE + "datasets:write_dataset_for",
        )
    )

register_bullet()  # the optional Safe/Bullet* ids, only when bullet-safety-gym is installed
