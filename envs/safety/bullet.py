"""Bullet-Safety-Gym's Ball and Car Run/Circle tasks under the Safe conventions
(``docs/safety.md``).

DSRL (Liu et al., "Datasets and Benchmarks for Offline Safe Reinforcement Learning", DMLR 2024)
takes its BulletGym datasets from Bullet-Safety-Gym (Gronauer, 2022), a PyBullet simulation.
This optional extra wraps four of its 1.4.0 environments, physics unchanged, as
``Safe/BulletBallRun-v0``, ``Safe/BulletBallCircle-v0``, ``Safe/BulletCarRun-v0`` and
``Safe/BulletCarCircle-v0``, with DSRL's horizons and ``cmax`` (:data:`TASKS`). Install it with::

    pip install pybullet && pip install --no-deps bullet-safety-gym==1.4.0

(its own pin, ``gymnasium~=0.28.1``, is too old, but it runs on Gymnasium 1.x). The ids are
registered (``registry.yaml``, family ``SafeBullet``) only when ``bullet_safety_gym`` and
``pybullet`` are importable; registering imports neither of them, nor Numba: the env class
subclasses :class:`~omnigym.envs.safety.core.SafeEnv` (the step loop, action check and final
metrics of every Safe task), so it is built on first access (:func:`__getattr__`).

Departures from the library's environments:

- the start state is drawn from NumPy's global RNG by the library (``np.random.uniform``);
  the wrapper seeds it from the env's ``np_random`` around the library calls and then restores
  the caller's global state, so ``reset(seed)`` is reproducible and the caller's RNG untouched;
- the library's reset restores a saved PyBullet state but neither the joint motor commands of
  the last action (a Car would start its next episode with its wheels still driven) nor the
  contact manifolds (their cached impulses change the first steps); before each reset the
  wrapper returns every joint to the unpowered velocity control the robot is built with and
  lifts the robot clear of everything so that its contacts are dropped, and it resets once
  when built, so that every episode, first or not, starts alike;
- observations are cast to float32 in ``Box(-inf, inf, (d,), float32)`` (the library's are a
  float64 Box of ±1000) and the cost to float; an action outside ``Box(-1, 1, (2,), float32)``
  raises ``ValueError`` (the library clips); the episode is truncated at DSRL's horizon by the
  Safe step loop instead of Gymnasium's ``TimeLimit``.

Observation groups are not defined (``obs_groups`` is ``None``; SDQC uses ``encoder="mlp"``).
The thresholds are those of the NumPy Run and Circle families (``tasks.yaml``: DSRL's BulletGym
{10, 20, 40}, strict 5).
"""

from __future__ import annotations

from typing import Any

TASKS: dict[str, dict[str, Any]] = {
    "BallRun": {"source": "SafetyBallRun-v0", "family": "Run", "horizon": 100, "cmax": 80.0},
    "BallCircle": {
        "source": "SafetyBallCircle-v0",
        "family": "Circle",
        "horizon": 200,
        "cmax": 80.0,
    },
    "CarRun": {"source": "SafetyCarRun-v0", "family": "Run", "horizon": 200, "cmax": 40.0},
    "CarCircle": {
        "source": "SafetyCarCircle-v0",
        "family": "Circle",
        "horizon": 300,
        "cmax": 100.0,
    },
}
"""Per task: the Bullet-Safety-Gym id wrapped, the Safe family whose thresholds apply, DSRL's
horizon and ``cmax`` (the cost clip of its dataset filter, DSRL's ``max_cost``)."""

LIFT = 1000.0
"""Metres the robot is lifted before each reset to drop its contacts (see ``_start``)."""


def __getattr__(name: str) -> Any:
    """Build :class:`BulletSafeEnv` on first access (PEP 562): it subclasses ``SafeEnv``, whose
    module imports Numba, and this module is imported by ``import omnigym``."""
    if name != "BulletSafeEnv":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    cls = _define_env_class()
    globals()[name] = cls
    return cls


def _define_env_class() -> type:
    import contextlib
    import sys
    import warnings

    import gymnasium as gym
    import numpy as np
    from gymnasium import spaces

    from omnigym.envs.safety.core import SafeEnv

    class _GlobalRNG:
        """NumPy's global RNG seeded with ``seed`` inside the block, the caller's state after."""

        def __init__(self, seed: int):
            self.seed = seed

        def __enter__(self) -> None:
            self.state = np.random.get_state()
            np.random.seed(self.seed)

        def __exit__(self, *exc_info: Any) -> None:
            np.random.set_state(self.state)

    class BulletSafeEnv(SafeEnv):
        """A Bullet-Safety-Gym Ball or Car task (Run or Circle) with the Safe conventions.

        ## Action space
        ``Box(-1, 1, (2,), float32)``: Ball, the force along x and y; Car, the wheel speed and
        the steering angle.

        ## Observation space
        ``Box(-inf, inf, (d,), float32)``, the library's observation: d = 7 on Run (position,
        velocity and body motion), 8 on Circle (plus the distance to the ring). No
        ``obs_groups`` (``None``).

        ## Rewards
        The library's: Run, progress toward +x (Ball: minus an action penalty); Circle,
        clockwise speed, discounted away from the ring.

        ## Cost
        ``info["cost"]`` = 1.0 on a step outside the bounds (Run: |y| > 2, Circle: |x| > 6) or,
        on Run, above the body's speed limit (Ball 2.5, Car 1.5), else 0.0.

        ## Starting state
        The library's, drawn at ``reset(seed)``: Run near the origin facing +x; Circle at
        2–4 from the origin facing along the ring.

        ## Episode end
        Truncation after DSRL's horizon (BallRun 100, BallCircle 200, CarRun 200, CarCircle
        300 steps); never terminates. The final step carries ``info["metrics"]`` and
        ``info["success"]`` as every Safe task.

        ## Arguments
        ``task`` ("BallRun", "BallCircle", "CarRun" or "CarCircle"), ``target_cost`` (κ,
        default 20). ``cmax`` (DSRL's dataset cost clip) is an attribute.
        """

        obs_groups = None

        def __init__(self, task: str = "BallRun", target_cost: float | None = None):
            if task not in TASKS:
                raise ValueError(f"task must be one of {', '.join(TASKS)}, got {task!r}")
            self.task = task
            settings = TASKS[task]
            self.family = settings["family"]
            super().__init__(target_cost=target_cost)
            self.horizon = settings["horizon"]
            self.cmax = settings["cmax"]
            # The library silences PyBullet's C output by flushing the C stream named by
            # sys.stdout/sys.stderr, which must then be the interpreter's own (not pytest's or
            # a notebook's replacements).
            with (
                contextlib.redirect_stdout(sys.__stdout__),
                contextlib.redirect_stderr(sys.__stderr__),
                warnings.catch_warnings(),
                _GlobalRNG(0),
            ):
                import bullet_safety_gym  # noqa: F401  (registers the library's ids)
                from bullet_safety_gym.envs.builder import EnvironmentBuilder

                # The library's float64 ±1000 observation Box warns on Gymnasium 1.x.
                warnings.simplefilter("ignore", RuntimeWarning)
                self._bullet = EnvironmentBuilder(**gym.spec(settings["source"]).kwargs)
                self._bullet.reset()
            size = self._bullet.observation_space.shape[0]
            self.observation_space = spaces.Box(-np.inf, np.inf, (size,), np.float32)
            self.action_space = spaces.Box(-1.0, 1.0, (2,), np.float32)

        @property
        def env_id(self) -> str:
            return f"Safe/Bullet{self.task}-v0"

        def _start(self) -> np.ndarray:
            client, body = self._bullet.bc, self._bullet.agent.body_id
            for joint in range(client.getNumJoints(body)):
                client.setJointMotorControl2(
                    body, joint, client.VELOCITY_CONTROL, targetVelocity=0, force=0
                )
            # Lifted clear of everything, the robot loses its contact manifolds (and their cached
            # impulses), which the library's restoreState keeps; the reset puts it back.
            position, orientation = client.getBasePositionAndOrientation(body)
            lifted = (position[0], position[1], position[2] + LIFT)
            client.resetBasePositionAndOrientation(body, lifted, orientation)
            client.performCollisionDetection()
            with _GlobalRNG(int(self.np_random.integers(2**32))):
                observation, _ = self._bullet.reset()
            return observation.astype(np.float32)

        def _transition(self, action: list[float]) -> tuple[np.ndarray, float, float]:
            observation, reward, _, _, info = self._bullet.step(np.asarray(action, np.float32))
            return observation.astype(np.float32), float(reward), float(info["cost"])

        def close(self) -> None:
            self._bullet.close()

    BulletSafeEnv.__module__ = __name__
    BulletSafeEnv.__qualname__ = "BulletSafeEnv"  # pickles by reference, like a top-level class
    return BulletSafeEnv
