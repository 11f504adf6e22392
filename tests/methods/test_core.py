"""The shared shape of the Methods/ task environments (envs/methods/core.py)."""

import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env

from omnigym.envs.methods.core import MethodEnv, check_solution


class Mean(MethodEnv):
    """Estimate the mean of 5 draws; a budget: the solution's sum of squares at most 100."""

    invalid_reward = -10.0

    def __init__(self, size="small"):
        super().__init__(size)
        self.observation_space = spaces.Dict({"x": spaces.Box(-np.inf, np.inf, (5, 2), np.float64)})
        self.action_space = spaces.Box(-20.0, 20.0, (2,), np.float64)

    def draw(self, rng):
        x = rng.normal(size=(5, 2))
        return {"x": x}, x.mean(axis=0)

    def score(self, solution):
        if float(np.sum(solution**2)) > 100.0:
            return None
        error = float(np.linalg.norm(solution - self.instance))
        return -error, {"error": error}

    def success(self, metrics):
        return metrics["error"] < 1e-9


def test_a_method_env_passes_check_env_and_scores_the_right_answer():
    env = Mean()
    check_env(env, skip_render_check=True)
    observation, info = env.reset(seed=3)
    assert info == {"invalid_action": False}
    _, reward, terminated, truncated, info = env.step(observation["x"].mean(axis=0))
    assert terminated and not truncated and reward == pytest.approx(0.0)
    assert info["success"] is True and info["metrics"] == {"error": 0.0, "invalid": 0.0}


def test_non_finite_solutions_fail_the_episode_and_are_flagged():
    env = Mean()
    env.reset(seed=0)
    _, reward, terminated, _, info = env.step(np.array([np.nan, 0.0]))
    assert reward == -10.0 and terminated and info["invalid_action"] is True
    assert info["success"] is False and info["metrics"] == {"invalid": 1.0}


def test_rule_breaks_inside_the_space_are_penalised_like_non_finite_ones():
    env = Mean()
    env.reset(seed=0)
    _, reward, _, _, info = env.step(np.array([10.0, 10.0]))
    assert reward == -10.0 and info["invalid_action"] is True


@pytest.mark.parametrize(
    ("solution", "message"),
    [
        (np.zeros(3), r"shape \(3,\), expected \(2,\)"),
        ("abc", "not numeric"),
        (np.array([30.0, 0.0]), "out of the bounds"),
    ],
)
def test_wrong_solutions_raise_value_errors_naming_the_space(solution, message):
    env = Mean()
    env.reset(seed=0)
    with pytest.raises(ValueError, match=message) as error:
        env.step(solution)
    assert "Box" in str(error.value)


def test_dict_integer_and_discrete_solutions_are_checked_by_part():
    space = spaces.Dict(
        {
            "assign": spaces.MultiDiscrete([4, 4]),
            "keep": spaces.MultiBinary(2),
            "k": spaces.Discrete(3),
        }
    )
    value, finite = check_solution({"assign": [1.0, 3], "keep": [0, 1], "k": 2.0}, space)
    assert finite and value["assign"].dtype == np.int64 and value["k"] == 2
    with pytest.raises(ValueError, match="keys"):
        check_solution({"assign": [1, 3]}, space)
    with pytest.raises(ValueError, match="integers"):
        check_solution({"assign": [1.5, 3], "keep": [0, 1], "k": 0}, space)
    _, finite = check_solution({"assign": [np.nan, 3], "keep": [0, 1], "k": 0}, space)
    assert finite is False


def test_size_and_step_before_reset_are_checked():
    with pytest.raises(ValueError, match="size"):
        Mean(size="huge")
    with pytest.raises(RuntimeError, match="before reset"):
        Mean().step(np.zeros(2))
