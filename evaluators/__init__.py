"""Evaluators: rollouts, statistics, scorecards and reports (DESIGN §5).

``evaluate`` is here; the scorecard and report modules (``omnigym.evaluators.scorecard``,
``omnigym.evaluators.report``) are imported on demand, since they need scipy and matplotlib.
"""

from omnigym.evaluators.rollout import evaluate

__all__ = ["evaluate"]
