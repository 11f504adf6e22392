"""Agents and fakes for tests, importable as ``tests.helpers:Name`` (the suite runs from the repo
root)."""

import time

from omnigym.agents.random import RandomAgent


class SlowRandomAgent(RandomAgent):
    """The random agent, slowed down so a test can kill a run in the middle."""

    def act(self, observation, info):
        time.sleep(0.002)
        return super().act(observation, info)


class LearningAgent(RandomAgent):
    """Counts the budget it was trained with, so a test can see training happened."""

    def __init__(self, env):
        super().__init__(env)
        self.trained_steps = 0

    def learn(self, env, budget):
        self.trained_steps += budget

    def act(self, observation, info):
        assert self.trained_steps > 0, "evaluated before learn()"
        return super().act(observation, info)


def oracle_claims(run):
    """A claims checker for tests: the oracle's mean return beats random's."""
    from omnigym.evaluators.claims import claim, verdict

    means = {r["agent"]: r["return"]["mean"] for r in run.scorecard["results"]}
    return [claim(1, "oracle beats random", verdict(means["oracle"] > means["random"]), means)]


def finished_run(records, scorecard=None):
    """A finished run of episode ``records`` as a claims checker reads it: its scorecard built
    from them (200 bootstrap resamples, for speed; an empty one without records) unless given;
    no scenario, options or folder."""
    from omnigym.evaluators.experiment import Run
    from omnigym.evaluators.scorecard import build_scorecard

    if scorecard is None:
        empty = {"results": [], "comparisons": [], "agents": [], "envs": []}
        scorecard = build_scorecard(records, n_resamples=200) if records else empty
    return Run(scenario=None, options={}, folder=None, scorecard=scorecard, records=records)
