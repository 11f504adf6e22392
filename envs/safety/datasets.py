"""Offline datasets for the Safe tasks, made locally by scripted behaviour policies.

DSRL (Liu et al., "Datasets and Benchmarks for Offline Safe Reinforcement Learning", DMLR 2024)
collects its datasets with many Lagrangian RL experts whose cost limits sweep a range, then thins
them with a grid filter over the (cost return, reward return) plane. Here (``docs/safety.md``,
Datasets) nothing is trained or downloaded: a scripted policy per family, reading the env's
documented read-only state (robot pose and speed, goal/button/box positions, hazards, boundaries),
is run over a grid of two knobs:

- the risk β ∈ [0, 1]: the commanded speed rises from cautious (β = 0) to full (β = 1); in the
  object tasks the obstacle term (hazards, vases, wrong buttons, gremlins, pillars) is a push
  away of weight 3 × (1 − 2β) that past β = 1/2 becomes a pull of weight up to 0.85, so the
  reckless end detours through obstacles as a high-cost-limit expert would; on Circle and Run
  the boundary push has weight 3 × (1 − β); on Run and Velocity, whose cost is a speed limit,
  the speed goes from 0.7 × the limit to full throttle;
- the noise σ: Gaussian noise of std σ added to every action, which is then clipped to [−1, 1].

Trajectory ``i`` uses grid cell ``i mod len(grid)``, its β drawn uniformly inside the cell so
the returns cover the plane rather than a few clusters. The trajectories are thinned by
:func:`~omnigym.envs.safety.dsrl.grid_filter` over ``[0, cmax]`` × the reward range and written
with :func:`~omnigym.envs.safety.dsrl.write_dataset` under DSRL's file name, beside a JSON
sidecar of the task's references (:func:`~omnigym.envs.safety.dsrl.write_references`). Run::

    python -m omnigym.envs.safety.datasets generate --env Safe/PointGoal1-v0 --seed 0 --out DIR
    python -m omnigym.envs.safety.datasets references --out envs/safety/data/references.yaml
    python -m omnigym.envs.safety.datasets export-minari FILE --dataset-id omnigym/safe-x/v0
    omnigym dataset Safe/PointGoal1-v0 --out DIR          # or --out FILE.hdf5

Departures from DSRL: scripted policies instead of trained experts (a PPO-Lagrangian policy with an
annealed cost limit, closer to DSRL's experts, is not implemented), and the obstacle repulsion,
rather than merely fading as 1 − β, turns into attraction past β = 1/2 (repulsion that merely fades
leaves the goal tasks' returns almost cost-free: hazards are small). The attraction reaches only
``ATTRACTION_REACH`` = 0.4 past an obstacle's cost radius: elsewhere a reckless robot drives
straight and fast, as a high-cost-limit expert does, and it detours only through obstacles near
its path. With a reach of 1 m (the first datasets) the reckless four fifths of the kept
trajectories steered toward a hazard from half the arena, the data showed hardly a safe action in
those states, and FISOR's feasibility-weighted policy copied the evasive few and stood still
(PointGoal1: normalized reward 0.00 at cost 0; 0.24 at cost 0 with 0.4, 3,000 updates, seed 0).
Push, whose box route rarely meets a hazard, rolls out ``ROLLOUT_FACTOR`` = 3 times ``n_traj``
trajectories so that the filter finds unsafe ones (PointPush1 with 1,000: 8 % of the kept
trajectories unsafe at the middle threshold; with 3,000: 18 %). ``n_traj`` counts the
trajectories rolled out (times the factor), while the file name carries the count kept by the
filter, as DSRL's does;
the filter's ``npb`` is by default the smallest keeping 400 trajectories (DSRL tunes it by hand per
task); each task's ``density_cfg`` is computed from its own default dataset (the smallest
``max_npb`` on a 10 × 10 grid keeping at least that share of trajectories) instead of being
hand-set. The same arguments give the same bytes.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

import omnigym
from omnigym.envs.safety import dsrl
from omnigym.envs.safety.core import FAMILIES, REFERENCES_PATH, ROBOT_RADIUS, load_references
from omnigym.io import atomic_write_text

DEFAULT_BETAS = tuple(np.round(np.linspace(0.0, 1.0, 11), 2).tolist())
DEFAULT_SIGMAS = (0.0, 0.3, 0.6)
DEFAULT_GRID = tuple((beta, sigma) for beta in DEFAULT_BETAS for sigma in DEFAULT_SIGMAS)
"""(β, σ) cells; a trajectory's β is drawn uniformly in [β, β + 0.1] ∩ [0, 1]."""
BETA_JITTER = 0.1
DEFAULT_N_TRAJ = 1000
"""Trajectories rolled out per task by default; the filter keeps 300-500 of them."""
DEFAULT_FILTER = {"cbins": 60, "rbins": 50, "npb": None, "min_npb": 0}
"""DSRL's grid over [0, cmax] × the reward range; at most ``npb`` trajectories per cell
(``None``: the smallest ``npb`` keeping at least ``TARGET_KEPT``, or all in range)."""
TARGET_KEPT = 400
MAX_KEPT = 500
CMAX_FACTOR = 2.5
"""``cmax`` (the cost clip of the filter, ``max_cost``) is this × the largest threshold."""
DENSITY_GRID = 10
DENSITIES = (0.25, 0.5, 0.75)
OBSTACLE_REACH = 0.5
"""Repulsion acts within this distance of an obstacle's cost radius."""
REPULSION_GAIN = 3.0
ATTRACTION = 0.85
ATTRACTION_REACH = 0.4
ROLLOUT_FACTOR = {"Push": 3}
"""Families whose behaviour rarely costs: this many times ``n_traj`` trajectories are rolled out."""
SAFE_SPEED = 0.7
"""Run and Velocity at β = 0 command this fraction of the speed limit."""


def dataset_env_ids() -> list[str]:
    """Every Safe id (each has a scripted behaviour policy and so a dataset)."""
    return [info.id for info in omnigym.list_envs(family="Safe")]


def _check_env_id(env_id: str) -> None:
    if env_id not in dataset_env_ids():
        raise ValueError(f"env_id must be one of {', '.join(dataset_env_ids())}, got {env_id!r}")


def task_settings(env_id: str) -> dict[str, Any]:
    """``cmax``, ``thresholds``, ``strict_threshold`` and ``max_episode_steps`` of ``env_id``."""
    _check_env_id(env_id)
    constants = FAMILIES[omnigym.make(env_id).unwrapped.family]
    thresholds = [float(t) for t in constants["thresholds"]]
    return {
        "cmax": CMAX_FACTOR * max(thresholds),
        "thresholds": thresholds,
        "strict_threshold": float(constants["strict_threshold"]),
        "max_episode_steps": int(constants["horizon"]),
    }


# --- scripted behaviour ------------------------------------------------------------------------


def _steer(env: Any, dx: float, dy: float, speed: float) -> tuple[float, float]:
    """Action moving a Point or Car robot along direction (dx, dy): forward when it lies ahead,
    in reverse when behind, at ``speed`` ∈ [0, 1] × min(‖(dx, dy)‖, 1) (slower where the
    policy's terms cancel)."""
    error = math.remainder(math.atan2(dy, dx) - env.robot_heading, 2.0 * math.pi)
    direction = 1.0
    if abs(error) > 0.5 * math.pi:
        error, direction = math.remainder(error + math.pi, 2.0 * math.pi), -1.0
    turn = min(max(2.0 * error, -1.0), 1.0)
    forward = direction * speed * min(math.hypot(dx, dy), 1.0) * math.cos(error)
    if env.robot == "Point":
        return forward, turn
    return min(max(forward - turn, -1.0), 1.0), min(max(forward + turn, -1.0), 1.0)


def _repulsion(
    x: float, y: float, obstacles: list[tuple[float, float, float]], beta: float
) -> list[float]:
    """The obstacle term of the risk knob ``beta``, summed over obstacles ``(ox, oy, radius)``
    within reach: a push away of weight ``REPULSION_GAIN × (1 − 2β)``, growing linearly from 0
    at ``radius + OBSTACLE_REACH`` to full at ``radius``; past β = 1/2 it turns into a pull of
    weight at most ``ATTRACTION`` (< 1, so the task's own direction still wins) from within
    ``ATTRACTION_REACH``: a reckless robot detours through obstacles and, as the terms nearly
    cancel there, crawls across them (:func:`_steer` slows with the summed direction)."""
    weight, band = REPULSION_GAIN * (1.0 - 2.0 * beta), OBSTACLE_REACH
    if weight < 0.0:
        weight, band = -ATTRACTION * min(4.0 * beta - 2.0, 1.0), ATTRACTION_REACH
    push = [0.0, 0.0]
    for ox, oy, radius in obstacles:
        dx, dy = x - ox, y - oy
        distance = math.hypot(dx, dy)
        reach = radius + band
        if 0.0 < distance < reach:
            strength = weight * min((reach - distance) / band, 1.0) / distance
            push[0] += dx * strength
            push[1] += dy * strength
    return push


def _obstacles(*groups: tuple[np.ndarray, float]) -> list[tuple[float, float, float]]:
    return [(float(p[0]), float(p[1]), radius) for positions, radius in groups for p in positions]


def _seek(env: Any, target: np.ndarray, obstacles: list, beta: float) -> tuple[float, float]:
    """Toward ``target`` plus the obstacle term of β (:func:`_repulsion`), at speed
    0.4 + 0.6 β."""
    x, y = env.robot_position
    dx, dy = target[0] - x, target[1] - y
    norm = math.hypot(dx, dy) or 1.0
    push = _repulsion(x, y, obstacles, beta)
    return _steer(env, dx / norm + push[0], dy / norm + push[1], 0.4 + 0.6 * beta)


def _goal_fixed(env: Any) -> list[tuple[float, float, float]]:
    return _obstacles(
        (env.hazard_positions, env.hazard_radius),
        (env.vase_positions, ROBOT_RADIUS + env.vase_radius),
    )


def _goal_action(env: Any, beta: float, fixed: list) -> tuple[float, float]:
    return _seek(env, env.goal_position, fixed, beta)


def _button_fixed(env: Any) -> list[tuple[float, float, float]]:
    return _obstacles((env.hazard_positions, env.hazard_radius))


def _button_action(env: Any, beta: float, fixed: list) -> tuple[float, float]:
    """Toward the target button; every other button (active or about to be) and the gremlins
    count as obstacles besides the hazards."""
    buttons = env.button_positions
    target = env.target_button
    moving = _obstacles(
        (np.delete(buttons, target, axis=0), env.press_radius),
        (env.gremlin_positions, env.gremlin_contact),
    )
    return _seek(env, buttons[target], fixed + moving, beta)


def _push_fixed(env: Any) -> list[tuple[float, float, float]]:
    return _obstacles(
        (env.hazard_positions, env.hazard_radius),
        (env.pillar_positions, env.pillar_contact),
    )


def _push_action(env: Any, beta: float, fixed: list) -> tuple[float, float]:
    """Go behind the box (seen from the goal), then drive through it toward the goal."""
    box, goal = env.box_position, env.goal_position
    to_goal = goal - box
    to_goal = to_goal / (np.hypot(*to_goal) or 1.0)
    behind = box - to_goal * (env.box_contact + 0.05)
    aligned = np.hypot(*(env.robot_position - behind)) < 0.15
    return _seek(env, goal if aligned else behind, fixed, beta)


def _no_fixed(env: Any) -> list:
    return []


def _circle_action(env: Any, beta: float, fixed: list) -> tuple[float, float]:
    """Along the counter-clockwise tangent, pulled onto the circle, pushed off the boundaries
    with weight ``REPULSION_GAIN × (1 − β)``."""
    x, y = env.robot_position
    radius = math.hypot(x, y) or 1.0
    nx, ny = x / radius, y / radius
    pull = env.circle_radius - radius
    dx, dy = -ny + pull * nx, nx + pull * ny
    margin = abs(x) - (env.boundary - OBSTACLE_REACH)
    if margin > 0:
        dx -= math.copysign(REPULSION_GAIN * (1.0 - beta) * margin / OBSTACLE_REACH, x)
    return _steer(env, dx, dy, 0.4 + 0.6 * beta)


def _run_action(env: Any, beta: float, fixed: list) -> tuple[float, float]:
    """Along +x toward y = 0 (pushed off the walls with weight ``REPULSION_GAIN × (1 − β)``),
    from ``SAFE_SPEED`` × the speed limit (β = 0) to full speed (β = 1)."""
    _, y = env.robot_position
    margin = abs(y) - (env.boundary - 0.25)
    dy = -y
    if margin > 0:
        dy -= math.copysign(REPULSION_GAIN * (1.0 - beta) * margin / 0.25, y)
    safe_speed = SAFE_SPEED * env.speed_limit / env.v_max
    return _steer(env, 1.0, dy, safe_speed + (1.0 - safe_speed) * beta)


def _velocity_action(env: Any, beta: float, fixed: list) -> tuple[float]:
    """Force from ``SAFE_SPEED`` × the speed limit's (β = 0) to full (β = 1)."""
    safe_force = SAFE_SPEED * env.speed_limit / env.u_max
    return (safe_force + (1.0 - safe_force) * beta,)


POLICIES = {
    "Goal": (_goal_fixed, _goal_action),
    "Button": (_button_fixed, _button_action),
    "Push": (_push_fixed, _push_action),
    "Circle": (_no_fixed, _circle_action),
    "Run": (_no_fixed, _run_action),
    "Velocity": (_no_fixed, _velocity_action),
}
"""Per family: the obstacles fixed for an episode (read once after reset), and the action."""


def scripted_action(env: Any, beta: float) -> tuple[float, ...]:
    """The noiseless scripted action of the unwrapped Safe ``env`` at risk ``beta``."""
    fixed, act = POLICIES[env.family]
    return act(env, beta, fixed(env))


def rollout(env: Any, beta: float, sigma: float, seed: int, rng: np.random.Generator) -> dict:
    """One episode of the scripted policy at (β, σ) in the unwrapped ``env`` reset with
    ``seed``; the noise comes from ``rng``. Returns the episode's DSRL arrays."""
    observation, _ = env.reset(seed=seed)
    fixed, act = POLICIES[env.family]
    obstacles = fixed(env)
    steps, width = env.horizon, env.action_space.shape[0]
    noise = rng.normal(0.0, sigma, size=(steps, width)) if sigma else np.zeros((steps, width))
    noise = noise.tolist()
    observations = np.empty((steps + 1, env.observation_space.shape[0]), np.float32)
    actions = np.empty((steps, env.action_space.shape[0]), np.float32)
    rewards = np.empty(steps, np.float32)
    costs = np.empty(steps, np.float32)
    observations[0] = observation
    for t in range(steps):
        wanted = act(env, beta, obstacles)
        actions[t] = [min(max(a + n, -1.0), 1.0) for a, n in zip(wanted, noise[t], strict=True)]
        observation, reward, _, _, info = env.step(actions[t])
        observations[t + 1] = observation
        rewards[t] = reward
        costs[t] = info["cost"]
    timeouts = np.zeros(steps, bool)
    timeouts[-1] = True
    return {
        "observations": observations[:-1],
        "next_observations": observations[1:],
        "actions": actions,
        "rewards": rewards,
        "costs": costs,
        "terminals": np.zeros(steps, bool),
        "timeouts": timeouts,
    }


def _check_grid(grid: Sequence[tuple[float, float]]) -> list[tuple[float, float]]:
    cells = [tuple(map(float, cell)) for cell in grid]
    if not cells or any(len(c) != 2 or not 0 <= c[0] <= 1 or c[1] < 0 for c in cells):
        raise ValueError(f"grid must be non-empty (beta in [0, 1], sigma >= 0) pairs, got {grid}")
    return cells


def rollouts(
    env_id: str,
    n_traj: int,
    seed: int = 0,
    grid: Sequence[tuple[float, float]] = DEFAULT_GRID,
) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """``n_traj`` scripted trajectories of ``env_id`` concatenated as a DSRL dict, and the
    ``(β, σ)`` of each (``(n_traj, 2)``). Everything random comes from ``default_rng(seed)``."""
    _check_env_id(env_id)
    if not isinstance(n_traj, int) or n_traj < 1:
        raise ValueError(f"n_traj must be an integer >= 1, got {n_traj!r}")
    cells = _check_grid(grid)
    env = omnigym.make(env_id).unwrapped
    rng = np.random.default_rng(seed)
    episodes, knobs = [], []
    for i in range(n_traj):
        beta, sigma = cells[i % len(cells)]
        beta = min(beta + BETA_JITTER * float(rng.random()), 1.0)
        episodes.append(rollout(env, beta, sigma, int(rng.integers(2**31)), rng))
        knobs.append((beta, sigma))
    data = {key: np.concatenate([e[key] for e in episodes]) for key in dsrl.KEYS}
    return data, np.array(knobs)


def density_config(
    reward_returns: np.ndarray, cost_returns: np.ndarray
) -> dict[str, dict[str, int]]:
    """Per density, the smallest ``max_npb`` of a 10 × 10 grid keeping at least that share."""
    config = {}
    for density in DENSITIES:
        wanted = math.ceil(density * len(reward_returns))
        for npb in range(1, len(reward_returns) + 1):
            kept = dsrl.grid_filter(
                reward_returns,
                cost_returns,
                rng=np.random.default_rng(0),
                cbins=DENSITY_GRID,
                rbins=DENSITY_GRID,
                npb=npb,
                min_npb=0,
            )
            if len(kept) >= wanted:
                break
        config[str(density)] = {
            "cbins": DENSITY_GRID,
            "rbins": DENSITY_GRID,
            "max_npb": npb,
            "min_npb": 0,
        }
    return config


def _auto_npb(rewards: np.ndarray, costs: np.ndarray, cmax: float, settings: dict[str, Any]) -> int:
    """The smallest ``npb`` whose filter keeps ``TARGET_KEPT`` trajectories (the count does not
    depend on the random draw), one less if that keeps over ``MAX_KEPT``, or the smallest
    keeping every trajectory in range."""
    previous = -1
    for npb in range(1, len(rewards) + 1):
        kept = dsrl.grid_filter(
            rewards,
            costs,
            rng=np.random.default_rng(0),
            cost_range=(0.0, cmax),
            **{**settings, "npb": npb},
        )
        if len(kept) >= TARGET_KEPT:
            return npb - 1 if len(kept) > MAX_KEPT and npb > 1 else npb
        if len(kept) == previous:
            return npb - 1
        previous = len(kept)
    return len(rewards)


def generate(
    env_id: str,
    n_traj: int = DEFAULT_N_TRAJ,
    seed: int = 0,
    policy: str = "scripted",
    grid: Sequence[tuple[float, float]] = DEFAULT_GRID,
    filter: dict[str, int] | None = None,
) -> dict[str, Any]:
    """Roll out, grid-filter and describe a dataset of ``env_id`` (nothing written).

    Returns ``data`` (the kept trajectories, DSRL's seven keys), ``knobs`` (their ``(β, σ)``),
    ``references`` (DSRL's sidecar), ``filename`` (DSRL's name), ``attrs`` (the file's
    attributes) and ``stats``. ``filter`` overrides :data:`DEFAULT_FILTER` keys.
    """
    if policy != "scripted":
        raise ValueError(f"policy must be 'scripted', got {policy!r}")
    settings = {**DEFAULT_FILTER, **(filter or {})}
    if set(settings) != set(DEFAULT_FILTER):
        raise ValueError(f"filter keys must be among {sorted(DEFAULT_FILTER)}, got {filter}")
    task = task_settings(env_id)
    rolled_out = n_traj * ROLLOUT_FACTOR.get(omnigym.make(env_id).unwrapped.family, 1)
    raw, knobs = rollouts(env_id, rolled_out, seed, grid)
    rewards, costs, _ = dsrl.trajectory_returns(raw)
    if settings["npb"] is None:
        settings["npb"] = _auto_npb(rewards, costs, task["cmax"], settings)
    kept = dsrl.grid_filter(
        rewards,
        costs,
        rng=np.random.default_rng([seed, 1]),
        cost_range=(0.0, task["cmax"]),
        **settings,
    )
    if len(kept) == 0:
        raise ValueError(f"the filter kept no trajectory of {env_id} (cmax {task['cmax']})")
    data = dsrl.select_trajectories(raw, kept)
    rewards, costs = rewards[kept], costs[kept]
    references = {
        "max_reward": float(rewards.max()),
        "min_reward": float(rewards.min()),
        "max_cost": task["cmax"],
        "min_cost": float(costs.min()),
        "max_episode_steps": task["max_episode_steps"],
        "thresholds": task["thresholds"],
        "strict_threshold": task["strict_threshold"],
        "density_cfg": density_config(rewards, costs),
    }
    config = {"policy": policy, "n_traj": n_traj, "grid": [list(c) for c in grid], **settings}
    env = omnigym.make(env_id).unwrapped
    middle = task["thresholds"][len(task["thresholds"]) // 2]
    return {
        "data": data,
        "knobs": knobs[kept],
        "references": references,
        "filename": dsrl.dataset_filename(env_id, task["cmax"], len(kept)),
        "attrs": {"env_id": env_id, "obs_groups": env.obs_groups, "config": config, "seed": seed},
        "stats": {
            "env_id": env_id,
            "seed": seed,
            "rolled_out": rolled_out,
            "trajectories": int(len(kept)),
            "transitions": int(len(data["rewards"])),
            "reward_return": [float(rewards.min()), float(rewards.mean()), float(rewards.max())],
            "cost_return": [float(costs.min()), float(costs.mean()), float(costs.max())],
            "safe_share": float(np.mean(costs <= middle)),
        },
    }


def sidecar_path(path: str | os.PathLike) -> Path:
    """Where the references of the dataset at ``path`` go: ``NAME.json`` beside ``NAME.hdf5``."""
    return Path(path).with_suffix(".json")


def write_generated(generated: dict[str, Any], out: str | os.PathLike) -> Path:
    """Write a :func:`generate` result: into folder ``out`` under DSRL's name, or to ``out``
    itself when it ends in ``.hdf5``; the sidecar goes beside. Returns the dataset's path."""
    out = Path(out)
    path = out if out.suffix == ".hdf5" else out / generated["filename"]
    path.parent.mkdir(parents=True, exist_ok=True)
    dsrl.write_dataset(path, generated["data"], generated["attrs"])
    references = generated["references"]
    dsrl.write_references(
        sidecar_path(path),
        dsrl.trajectory_returns(generated["data"]),
        references["max_cost"],
        references["thresholds"],
        references["strict_threshold"],
        references["density_cfg"],
        references["max_episode_steps"],
    )
    return path


def write_dataset_for(
    env_id: str, episodes: int | None, seed: int, path: str | os.PathLike
) -> dict[str, Any]:
    """The ``omnigym dataset`` hook: ``episodes`` trajectories rolled out (``None``: the
    default), written to ``path`` (a folder, or a ``.hdf5`` file). Returns the statistics."""
    start = time.perf_counter()
    generated = generate(env_id, n_traj=episodes or DEFAULT_N_TRAJ, seed=seed)
    written = write_generated(generated, path)
    return {
        **generated["stats"],
        "path": str(written),
        "generate_seconds": time.perf_counter() - start,
    }


def references_for(env_id: str, seed: int = 0) -> dict[str, Any]:
    """The references of ``env_id``'s default dataset (as in ``references.yaml``), with the
    dataset's file name under ``dataset``."""
    generated = generate(env_id, seed=seed)
    return {**generated["references"], "dataset": generated["filename"]}


def write_references_yaml(
    path: str | os.PathLike = REFERENCES_PATH, env_ids: Sequence[str] | None = None
) -> dict[str, dict[str, Any]]:
    """Regenerate the default datasets' references of ``env_ids`` (default: every Safe id) and
    write them as YAML keyed by id, over those of other ids already in ``path``; returns the
    regenerated ones."""
    references = {env_id: references_for(env_id) for env_id in env_ids or dataset_env_ids()}
    kept = load_references(Path(path)) if env_ids else {}
    header = (
        "# Reference returns of the default Safe datasets (docs/safety.md), generated by\n"
        "#   python -m omnigym.envs.safety.datasets references --out "
        "envs/safety/data/references.yaml\n"
    )
    atomic_write_text(path, header + yaml.safe_dump({**kept, **references}, sort_keys=True))
    return references


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Make the Safe tasks' offline datasets.")
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("generate", help="write one task's dataset and its sidecar")
    make.add_argument("--env", required=True, choices=dataset_env_ids(), metavar="ENV_ID")
    make.add_argument("--policy", choices=["scripted"], default="scripted")
    make.add_argument("--seed", type=int, default=0)
    make.add_argument("--n-traj", type=int, default=DEFAULT_N_TRAJ, help="trajectories rolled out")
    make.add_argument("--out", type=Path, required=True, help="DIR or FILE.hdf5")
    refs = commands.add_parser("references", help="write every task's references as YAML")
    refs.add_argument("--out", type=Path, default=REFERENCES_PATH)
    refs.add_argument("--env", action="append", choices=dataset_env_ids(), metavar="ENV_ID")
    export = commands.add_parser("export-minari", help="write a dataset file as a Minari dataset")
    export.add_argument("file", type=Path, metavar="FILE", help="a DSRL-format .hdf5 file")
    export.add_argument(
        "--dataset-id", required=True, help="Minari id, e.g. omnigym/safe-pointgoal1/scripted-v0"
    )
    args = parser.parse_args(argv)
    if args.command == "generate":
        start = time.perf_counter()
        generated = generate(args.env, n_traj=args.n_traj, seed=args.seed, policy=args.policy)
        written = write_generated(generated, args.out)
        stats = {**generated["stats"], "path": str(written)}
        print(json.dumps({**stats, "seconds": time.perf_counter() - start}, indent=2))
    elif args.command == "export-minari":
        from omnigym.envs.safety.minari_export import export_minari

        dataset = export_minari(args.file, args.dataset_id)
        summary = {
            "dataset_id": args.dataset_id,
            "path": str(dataset.storage.data_path.parent),
            "episodes": dataset.total_episodes,
            "steps": dataset.total_steps,
        }
        print(json.dumps(summary, indent=2))
    else:
        write_references_yaml(args.out, args.env)
        print(args.out)


if __name__ == "__main__":
    main()
