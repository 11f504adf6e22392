"""The claims of LMRL-Gym's language-model baselines, checked on a run of ``lmrl_agents.yaml``.

LMRL-Gym (Abdulhai et al., "LMRL-Gym: Benchmarks for Multi-Turn Reinforcement Learning with
Language Models", ICML 2025) reports in its Table 2 that RL (MC returns, ILQL, PPO) beats BC
and filtered BC, that filtered BC is at least BC where the data hold good episodes, and that
partial observability hurts every method; BC sits near the dataset's average (the normalized
score's 50) and the task's best player defines its 100 (``docs/lmrl.md``). Claims 1–5 are
those checks on Maze FO/PO, Text-Nav FO/PO and Wordle; 6 and 7 extend them (filtered BC on
every task run; value-based or online RL best on the partially observed tasks); 8 records PPO
and the tasks the claims do not cover; 9 and 10 ask what Table 2 takes for granted of agents
that learn: BC better than random play where random play scores nothing (Wordle, Twenty
Questions), and RL better than BC beyond the noise (disjoint 95 % CIs) on at least
:data:`RL_ABOVE_BC_TASKS` tasks. Each claim's ``paper`` holds Table 2's numbers for the same
cells (:data:`PAPER_TABLE_2`).

Agents are read by label (``BC``, ``%BC``, ``MC``, ``ILQL-lite``, ``PPO``, ``random``,
``oracle``) and tasks by id; ``measured`` holds our normalized scores, mean and 95% bootstrap
CI over episodes (stratified by seed). A claim whose agents or tasks the run lacks is ``not
run``, with what is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omnigym.evaluators.claims import claim, verdict
from omnigym.evaluators.experiment import Run
from omnigym.llm_agents.lmrl_experiment import normalized_scores

BC, FILTERED_BC, MC, ILQL, PPO, ORACLE, RANDOM = (
    "BC",
    "%BC",
    "MC",
    "ILQL-lite",
    "PPO",
    "oracle",
    "random",
)
MAZE_FO, MAZE_PO = "LMRL/MazeFO-v0", "LMRL/MazePO-v0"
NAV_FO, NAV_PO = "LMRL/TextNavFO-v0", "LMRL/TextNavPO-v0"
WORDLE = "LMRL/Wordle-v0"
TWENTY_Q = "LMRL/TwentyQuestions-v0"
LEARNED = (BC, FILTERED_BC, MC, ILQL)
"""The methods claims 1–4 are about (PPO is recorded)."""
RL = (MC, ILQL, PPO)
RL_ABOVE_BC_TASKS = 3
BC_BAND = (35.0, 65.0)
ORACLE_FLOOR = 95.0

PAPER_TABLE_2: dict[str, dict[str, float]] = {
    MAZE_FO: {BC: 58.2, FILTERED_BC: 68.9, MC: 75.0, ILQL: 99.9, PPO: 79.7},
    MAZE_PO: {BC: 53.1, FILTERED_BC: 50.1, MC: 52.4, ILQL: 76.3, PPO: 42.4},
    NAV_FO: {BC: 53.7, FILTERED_BC: 65.1, MC: 71.9, ILQL: 91.8, PPO: 87.1},
    NAV_PO: {BC: 49.7, FILTERED_BC: 60.5, MC: 71.6, ILQL: 83.7, PPO: 85.5},
    WORDLE: {BC: 79.9, FILTERED_BC: 79.1, MC: 94.9, ILQL: 97.7, PPO: 84.2},
    "LMRL/Chess-v0": {BC: 47.2, FILTERED_BC: 42.9, MC: 46.5, ILQL: 47.3, PPO: 48.0},
    "LMRL/Endgames-v0": {BC: 35.1, FILTERED_BC: 17.7, MC: 50.2, ILQL: 45.8, PPO: 77.5},
    TWENTY_Q: {BC: 57.1, FILTERED_BC: 77.1, MC: 87.1, ILQL: 82.9, PPO: 72.9},
    "LMRL/GuessMyCity-v0": {BC: 30.0, FILTERED_BC: 48.0, MC: 88.0, ILQL: 75.0, PPO: 49.9},
    "LMRL/CarDealer-v0": {BC: 44.5, FILTERED_BC: 54.8, MC: 57.2, ILQL: 46.3, PPO: 50.5},
}
"""LMRL-Gym's Table 2, normalized scores (its ILQL column under our ILQL-lite's label); the
online %BC and GPT-4 columns are left out."""

Scores = Mapping[tuple[str, str], dict[str, Any]]


def check(run: Run) -> list[dict[str, Any]]:
    """Claims 1–10 on this run (module docstring)."""
    scores = normalized_scores(run.scorecard)
    envs = list(run.scorecard["envs"])
    with_bc = [env for env in envs if (env, BC) in scores]
    return [
        _above_bc(scores),
        _filtered(
            2,
            "filtered BC scores at least BC on Maze FO and Text-Nav FO",
            (MAZE_FO, NAV_FO),
            scores,
        ),
        _observability(scores),
        _bc_band(scores),
        _oracle(envs, scores),
        _filtered(6, "filtered BC scores at least BC on every task run", with_bc, scores),
        _partial_observability(scores),
        _recorded(envs, scores),
        _bc_above_random(scores),
        _rl_above_bc(envs, scores),
    ]


def _table(scores: Scores, envs: Sequence[str], agents: Sequence[str]) -> dict[str, dict]:
    """env -> agent -> our normalized score, for the cells the run has."""
    return {env: {a: scores[env, a] for a in agents if (env, a) in scores} for env in envs}


def _paper(envs: Sequence[str], agents: Sequence[str]) -> dict[str, dict[str, float]]:
    """env -> agent -> Table 2's score, for the cells Table 2 has."""
    return {
        env: {a: PAPER_TABLE_2[env][a] for a in agents if a in PAPER_TABLE_2[env]}
        for env in envs
        if env in PAPER_TABLE_2
    }


def _missing(scores: Scores, envs: Sequence[str], agents: Sequence[str]) -> list[str]:
    return [f"{a} on {env}" for env in envs for a in agents if (env, a) not in scores]


def _checked(
    number: int,
    text: str,
    scores: Scores,
    envs: Sequence[str],
    agents: Sequence[str],
    holds: Any,
    paper: Any,
) -> dict[str, Any]:
    """The claim: ``not run`` when a cell is missing, else ``holds()``'s verdict."""
    missing = _missing(scores, envs, agents)
    if missing or not envs:
        return claim(number, text, "not run", {"missing": missing or list(agents)}, paper)
    return claim(number, text, verdict(holds()), _table(scores, envs, agents), paper)


def _mean(scores: Scores, env: str, agent: str) -> float:
    return scores[env, agent]["mean"]


def _above_bc(scores: Scores) -> dict[str, Any]:
    text = "MC and ILQL-lite score above BC on Maze FO, Text-Nav FO and Wordle (mean over seeds)"
    envs, agents = (MAZE_FO, NAV_FO, WORDLE), (BC, MC, ILQL)

    def holds() -> bool:
        return all(
            _mean(scores, env, a) > _mean(scores, env, BC) for env in envs for a in (MC, ILQL)
        )

    return _checked(1, text, scores, envs, agents, holds, _paper(envs, agents))


def _filtered(number: int, text: str, envs: Sequence[str], scores: Scores) -> dict[str, Any]:
    agents = (BC, FILTERED_BC)

    def holds() -> bool:
        return all(_mean(scores, env, FILTERED_BC) >= _mean(scores, env, BC) for env in envs)

    return _checked(number, text, scores, envs, agents, holds, _paper(envs, agents))


def _observability(scores: Scores) -> dict[str, Any]:
    text = "for every method (BC, %BC, MC, ILQL-lite), PO scores below FO on Maze and Text-Nav"
    pairs = ((MAZE_FO, MAZE_PO), (NAV_FO, NAV_PO))
    envs = [env for pair in pairs for env in pair]

    def holds() -> bool:
        return all(_mean(scores, po, a) < _mean(scores, fo, a) for fo, po in pairs for a in LEARNED)

    return _checked(3, text, scores, envs, LEARNED, holds, _paper(envs, LEARNED))


def _bc_band(scores: Scores) -> dict[str, Any]:
    low, high = BC_BAND
    text = f"BC lands within 50 ± {(high - low) / 2:g} on Maze and Text-Nav (FO and PO)"
    envs = (MAZE_FO, MAZE_PO, NAV_FO, NAV_PO)

    def holds() -> bool:
        return all(low <= _mean(scores, env, BC) <= high for env in envs)

    return _checked(4, text, scores, envs, (BC,), holds, _paper(envs, (BC,)))


def _oracle(envs: Sequence[str], scores: Scores) -> dict[str, Any]:
    text = f"the oracle scores ≥ {ORACLE_FLOOR:g} on every task"
    played = [env for env in envs if (env, ORACLE) in scores]
    paper = "100 on every task: the normalized score's 100 is the task's best return"

    def holds() -> bool:
        return all(_mean(scores, env, ORACLE) >= ORACLE_FLOOR for env in played)

    return _checked(5, text, scores, played, (ORACLE,), holds, paper)


def _partial_observability(scores: Scores) -> dict[str, Any]:
    text = (
        "value-based or online RL (MC, ILQL-lite or PPO) scores best among the learned agents "
        "on the partially observed tasks: Maze PO, Text-Nav PO and Twenty Questions"
    )
    envs, agents = (MAZE_PO, NAV_PO, TWENTY_Q), (BC, FILTERED_BC, MC, ILQL, PPO)

    def holds() -> bool:
        return all(
            max(_mean(scores, env, a) for a in (MC, ILQL, PPO))
            > max(_mean(scores, env, a) for a in (BC, FILTERED_BC))
            for env in envs
        )

    return _checked(7, text, scores, envs, agents, holds, _paper(envs, agents))


def _bc_above_random(scores: Scores) -> dict[str, Any]:
    text = (
        "BC's mean scores above the 95% CI of random play on Wordle and Twenty Questions, "
        "where random play almost never succeeds"
    )
    envs = (WORDLE, TWENTY_Q)

    def holds() -> bool:
        return all(_mean(scores, env, BC) > scores[env, RANDOM]["ci95"][1] for env in envs)

    return _checked(9, text, scores, envs, (BC, RANDOM), holds, _paper(envs, (BC,)))


def _rl_above_bc(envs: Sequence[str], scores: Scores) -> dict[str, Any]:
    text = (
        f"MC, ILQL-lite or PPO scores above BC with disjoint 95% CIs on at least "
        f"{RL_ABOVE_BC_TASKS} tasks"
    )
    played = [env for env in envs if (env, BC) in scores and any((env, a) in scores for a in RL)]
    if len(played) < RL_ABOVE_BC_TASKS:
        missing = {"missing": [f"BC and RL on {RL_ABOVE_BC_TASKS} tasks (run on: {played})"]}
        return claim(10, text, "not run", missing, _paper(played, (BC, *RL)))
    above = {
        env: [
            agent
            for agent in RL
            if (env, agent) in scores and scores[env, agent]["ci95"][0] > scores[env, BC]["ci95"][1]
        ]
        for env in played
    }
    measured = {
        "tasks_with_rl_above_bc": {env: agents for env, agents in above.items() if agents},
        "scores": _table(scores, played, (BC, *RL)),
    }
    holds = sum(bool(agents) for agents in above.values()) >= RL_ABOVE_BC_TASKS
    return claim(10, text, verdict(holds), measured, _paper(played, (BC, *RL)))


def _recorded(envs: Sequence[str], scores: Scores) -> dict[str, Any]:
    text = "PPO on every task, and every agent on the tasks the claims do not cover"
    agents = (*LEARNED, PPO, RANDOM, ORACLE)
    paper = _paper(envs, (*LEARNED, PPO))
    if not any((env, PPO) in scores for env in envs):
        return claim(8, text, "not run", {"missing": [PPO]}, paper)
    return claim(8, text, "recorded", _table(scores, envs, agents), paper)
