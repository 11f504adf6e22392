"""Evaluators: rollouts, statistics, scorecards and reports (DESIGN §5)."""
