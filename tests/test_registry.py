"""Registry-wide conformance: every registered id, present and future, is checked here."""

import os
import pickle
import subprocess
import sys
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import omnigym
from omnigym.spaces import PRINTABLE

from .conftest import CURATED_FAST, MULTI_IDS, SINGLE_IDS


def test_every_family_registers_ids_with_metadata():
    envs = omnigym.list_envs()
    assert {"LMRL/MazeFO-v0", "LMRL/MazePO-v0", "LMRL/Wordle-v0"} <= {info.id for info in envs}
    for info in envs:
        assert info.family and info.paper and info.kind in ("single", "multi")
        assert info.obs_kind in ("pixels", "voxels", "text", "vector", "dict")


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_single_agent_env_passes_gymnasium_check_env(env_id):
    env = omnigym.make(env_id)
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def _make_or_skip(make, env_id):
    """``make(env_id)``, or a skip naming the optional extra the id needs (its ImportError)."""
    try:
        return make(env_id)
    except ImportError as error:
        pytest.skip(str(error))


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_multi_agent_env_passes_pettingzoo_parallel_api_test(env_id):
    from pettingzoo.test import parallel_api_test

    parallel_api_test(_make_or_skip(omnigym.make, env_id), num_cycles=100)


@pytest.mark.parametrize("env_id", MULTI_IDS)
def test_multi_agent_env_passes_pettingzoo_aec_api_test(env_id):
    from pettingzoo.test import api_test

    api_test(_make_or_skip(omnigym.make_aec, env_id), num_cycles=100)


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_gymnasium_make_with_module_prefix_works_without_import(env_id):
    code = (
        f"import gymnasium; env = gymnasium.make('omnigym:{env_id}'); env.reset(seed=0);"
        " print(env.spec.id)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == env_id, result.stderr


def _trajectory(env_id, seed, steps=60, episodes=4):
    """A random agent's first ``steps`` steps or ``episodes`` episodes, whichever ends first
    (a Methods task's episode is one costly step)."""
    env = omnigym.make(env_id)
    agent = omnigym.make_agent("random", env=env, env_id=env_id)
    agent.reset(seed)
    observation, info = env.reset(seed=seed)
    trace = [(observation, info)]
    for _ in range(steps):
        observation, reward, terminated, truncated, info = env.step(agent.act(observation, info))
        trace.append((observation, reward, terminated, truncated, info))
        if terminated or truncated:
            episodes -= 1
            if episodes == 0:
                break
            observation, info = env.reset()
            trace.append((observation, info))
    env.close()
    return pickle.dumps(trace)


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_same_seed_and_actions_give_identical_trajectories(env_id):
    assert _trajectory(env_id, seed=3) == _trajectory(env_id, seed=3)


def _outside(space):
    if isinstance(space, gymnasium.spaces.Text):
        return 5
    if isinstance(space, gymnasium.spaces.Discrete):
        return int(space.start + space.n)
    if isinstance(space, gymnasium.spaces.Box):
        return np.zeros(tuple(space.shape) + (2,), dtype=space.dtype)
    return object()


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_out_of_space_action_raises_value_error_naming_the_space(env_id):
    env = omnigym.make(env_id)
    env.reset(seed=0)
    space_name = type(env.action_space).__name__
    with pytest.raises(ValueError, match=space_name):
        env.step(_outside(env.action_space))


TEXT_IDS = [info.id for info in omnigym.list_envs(kind="single") if info.obs_kind == "text"]


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_unparseable_text_action_is_penalised_and_flagged(env_id):
    env = omnigym.make(env_id)
    _, info = env.reset(seed=0)
    assert info["invalid_action"] is False
    _, reward, _, _, info = env.step("\x07 zzz qqq \u00e9" * 40)
    assert info["invalid_action"] is True
    assert reward <= 0


@pytest.mark.parametrize("env_id", TEXT_IDS)
def test_text_spaces_are_printable_and_may_be_empty(env_id):
    env = omnigym.make(env_id)
    for space in (env.observation_space, env.action_space):
        assert isinstance(space, gymnasium.spaces.Text)
        assert space.min_length == 0
        assert set(space.character_set) == set(PRINTABLE)


def test_env_info_records_pickle():
    for info in omnigym.list_envs():
        assert pickle.loads(pickle.dumps(info)) == info


def test_unknown_id_names_the_closest_matches():
    with pytest.raises(omnigym.UnknownEnvError, match="LMRL/Wordle-v0"):
        omnigym.make("LMRL/Wordel-v0")


def test_make_aec_refuses_single_agent_ids():
    with pytest.raises(ValueError, match="single-agent"):
        omnigym.make_aec("LMRL/Wordle-v0")


def test_import_omnigym_pulls_in_no_heavy_module():
    code = (
        "import sys, omnigym; heavy = {'torch', 'pettingzoo', 'matplotlib', 'scipy', 'numba',"
        " 'omnigym.envs.lmrl.maze', 'omnigym.envs.lmrl.wordle'} & set(sys.modules);"
        " print(sorted(heavy))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr


def _children():
    tasks = Path(f"/proc/{os.getpid()}/task")
    found = set()
    for task in tasks.iterdir():
        found |= set((task / "children").read_text().split())
    return found


@pytest.mark.parametrize("env_id", SINGLE_IDS + MULTI_IDS)
def test_close_leaves_no_child_process(env_id):
    before = _children()
    env = omnigym.make(env_id)
    env.reset(seed=0)
    env.close()
    assert _children() <= before


@pytest.mark.parametrize("env_id", SINGLE_IDS)
def test_gymnasium_spec_pickles(env_id):
    assert pickle.loads(pickle.dumps(gymnasium.spec(env_id))).id == env_id


def test_a_family_file_with_an_unknown_field_names_the_file_and_the_id(tmp_path, monkeypatch):
    from omnigym import registry

    (tmp_path / "registry.yaml").write_text(
        "family: Toy\ngroups:\n  - paper: P\n    envs:\n"
        "      - {id: Toy/A-v0, entry_point: .a:A, kind: single, obs_kind: text, colour: red}\n"
    )
    monkeypatch.setattr(registry.resources, "files", lambda package: tmp_path)
    with pytest.raises(ValueError, match=r"toy/registry.yaml: groups\[0\]: Toy/A-v0: .*colour"):
        registry.register_family("toy")


def test_the_fast_suite_keeps_a_seeded_sample_of_the_curated_mcu_ids():
    curated = {info.id for info in omnigym.list_envs(family="MCU") if info.kwargs}
    fast = [i for i in SINGLE_IDS if isinstance(i, str) and i in curated]
    slow = [p.values[0] for p in SINGLE_IDS if not isinstance(p, str)]
    assert len(fast) == CURATED_FAST and set(fast) | set(slow) == curated
    assert all(
        mark.name == "slow" for p in SINGLE_IDS if not isinstance(p, str) for mark in p.marks
    )
    assert "MCU/Atomic-v0" in SINGLE_IDS and "MCU/Random-v0" in SINGLE_IDS
