"""Evaluators: rollouts, statistics, scorecards, reports and the experiment kit
(``docs/architecture.md``, ``docs/experiments.md``).

``evaluate`` is here; the scorecard and report modules (``omnigym.evaluators.scorecard``,
``omnigym.evaluators.report``) are imported on demand, since they need scipy and matplotlib.
"""

from omnigym.evaluators.rollout import evaluate

__all__ = ["evaluate"]
