"""Continual-learning metrics: average final performance and forgetting by hand."""

import numpy as np
import pytest

import omnigym
from omnigym.evaluators.continual import continual_metrics, evaluate_continual


def test_final_performance_and_forgetting_match_a_hand_computation():
    R = [
        [80, 10, 0],
        [50, 90, 5],
        [40, 60, 70],
    ]
    result = continual_metrics(R)
    assert result.average_final_performance == pytest.approx((40 + 60 + 70) / 3)
    # Task 0: best of R[0, 0], R[1, 0] = 80, final 40. Task 1: best of R[1, 1] = 90, final 60.
    assert result.forgetting.tolist() == [40.0, 30.0]
    assert result.average_forgetting == pytest.approx(35.0)
    assert result.to_dict()["matrix"][2] == [40.0, 60.0, 70.0]


def test_one_task_has_no_forgetting_and_bad_matrices_are_rejected():
    assert continual_metrics([[3.0]]).average_forgetting == 0.0
    with pytest.raises(ValueError, match="square"):
        continual_metrics([[1, 2, 3], [4, 5, 6]])


class Improving:
    """A stand-in learner whose policy gets better with every stage: it walks for longer."""

    def __init__(self, env):
        self.steps = 0

    def reset(self, seed=None):
        pass

    def learn(self, env, budget):
        self.steps += budget

    def act(self, observation, info):
        return 0


def test_evaluate_continual_fills_the_matrix_stage_by_stage():
    factories = [lambda: omnigym.make("Craft/SmallRoom-v0", max_timesteps=3)] * 2
    agent = Improving(None)
    result = evaluate_continual(agent, factories, train_budget=7, episodes=2)
    assert agent.steps == 14
    assert result.matrix.shape == (2, 2)
    # A no-op walker never reaches the target: return -3 of [-500, -1] on every evaluation.
    expected = 100 * (-3 + 500) / 499
    assert np.allclose(result.matrix, expected)
    assert result.forgetting.tolist() == [0.0]
