"""The claims of Hendrych, Pokutta, Besançon and Martínez-Rubio (ICML 2025), the secant line
search for Frank–Wolfe, on a run of ``frank_wolfe.yaml``.

Environments are the problem labels (``least_squares``, ...); agents are read by their labels:
``secant``, ``adaptive``, ``backtracking``, ``golden`` (away-step FW) and the same with
`` (FW)`` for vanilla FW. Claims 1–3 are checked on every problem where the four away-step rules
ran (and answered valid iterates), comparing means over the same instances. Every run of the
secant rule must converge (and of golden-section search, for claim 1); a baseline run that hits
the iteration cap counts with the iterations and evaluations it spent, a lower bound on what it
needs, so it can only strengthen claims 2 and 3. Claim 4 (vanilla FW) and claim 5 (the success
rates) are recorded.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from omnigym.evaluators.claims import claim, metric_summary, verdict
from omnigym.evaluators.experiment import Run

#: "About as many iterations": the secant rule's mean within this factor of golden's.
SAME_ITERATIONS = 1.5
#: "Far fewer evaluations": the secant rule's mean f + ∇f evaluations below this fraction of
#: golden-section search's.
FEWER_EVALUATIONS = 0.5
#: "More iterations": the adaptive rule's mean at least this factor above the secant rule's.
MORE_ITERATIONS = 1.1
#: The agent labels the checker reads (those of ``frank_wolfe.yaml``); vanilla FW runs carry the
#: suffix.
SECANT, ADAPTIVE, BACKTRACKING, GOLDEN = "secant", "adaptive", "backtracking", "golden"
AWAY_RULES = (SECANT, ADAPTIVE, BACKTRACKING, GOLDEN)
VANILLA_SUFFIX = " (FW)"
#: The paper's away-step FW results: (iterations, f evaluations, ∇f evaluations).
PAPER = {
    "least_squares": {
        BACKTRACKING: (254, 2646, 255),
        ADAPTIVE: (342, 745, 343),
        GOLDEN: (300, 13800, 301),
        SECANT: (219, 647, 648),
    },
    "portfolio": {
        BACKTRACKING: (545, 5430, 546),
        ADAPTIVE: (764, 1646, 765),
        GOLDEN: (288, 13248, 289),
        SECANT: (335, 2906, 1508),
    },
}


def _paper(metric: str, agents: Sequence[str]) -> dict[str, dict[str, int]]:
    """The paper's ``iterations`` or ``evaluations`` (f + ∇f) of ``agents``, per problem."""
    return {
        problem: {
            agent: iterations if metric == "iterations" else f_evals + grad_evals
            for agent, (iterations, f_evals, grad_evals) in rows.items()
            if agent in agents
        }
        for problem, rows in PAPER.items()
    }


def _all_hold(verdicts: Mapping[str, bool]) -> str:
    return verdict(all(verdicts.values())) if verdicts else "not run"


def check(run: Run) -> list[dict[str, Any]]:
    """The paper's claims on ``run`` (see the module docstring)."""
    table: dict[str, dict[str, dict[str, Any]]] = {}
    for result in run.scorecard["results"]:
        table.setdefault(result["env_id"], {})[result["agent"]] = {
            "success_rate": result["success_rate"],
            "iterations": metric_summary(result, "iterations"),
            "evaluations": metric_summary(result, "evaluations"),
            "gap": metric_summary(result, "gap"),
        }
    checked = {
        env: rows
        for env, rows in table.items()
        if all(agent in rows and rows[agent]["iterations"] for agent in AWAY_RULES)
    }

    def mean(env: str, agent: str, metric: str) -> float:
        return checked[env][agent][metric]["mean"]

    def converged(env: str, *agents: str) -> bool:
        return all(checked[env][agent]["success_rate"] == 1.0 for agent in agents)

    same = {
        env: converged(env, SECANT, GOLDEN)
        and 1 / SAME_ITERATIONS
        <= mean(env, SECANT, "iterations") / mean(env, GOLDEN, "iterations")
        <= SAME_ITERATIONS
        for env in checked
    }
    fewer = {
        env: converged(env, SECANT)
        and mean(env, SECANT, "evaluations") <= FEWER_EVALUATIONS * mean(env, GOLDEN, "evaluations")
        and mean(env, SECANT, "evaluations") < mean(env, BACKTRACKING, "evaluations")
        for env in checked
    }
    more = {
        env: converged(env, SECANT)
        and mean(env, ADAPTIVE, "iterations") >= MORE_ITERATIONS * mean(env, SECANT, "iterations")
        for env in checked
    }

    def numbers(metric: str, agents: Sequence[str]) -> dict[str, dict[str, Any]]:
        return {
            env: {
                agent: {"success_rate": rows[agent]["success_rate"], **rows[agent][metric]}
                for agent in agents
            }
            for env, rows in checked.items()
        }

    vanilla = {
        env: {agent: row for agent, row in rows.items() if agent.endswith(VANILLA_SUFFIX)}
        for env, rows in table.items()
        if any(agent.endswith(VANILLA_SUFFIX) for agent in rows)
    }

    def compared(number: int, text: str, verdicts: dict, metric: str, agents: Sequence[str]):
        return claim(
            number,
            text,
            _all_hold(verdicts),
            measured={"verdicts": verdicts, metric: numbers(metric, agents)},
            paper={metric: _paper(metric, agents)},
        )

    return [
        compared(
            1,
            "away-step FW: the secant rule needs about as many iterations as golden-section "
            f"(exact) line search, mean within a factor {SAME_ITERATIONS:g}, on every problem",
            same,
            "iterations",
            (SECANT, GOLDEN),
        ),
        compared(
            2,
            "away-step FW: the secant rule needs far fewer f + ∇f evaluations than "
            f"golden-section search (at most {FEWER_EVALUATIONS:g}×) and fewer than "
            "backtracking, on every problem",
            fewer,
            "evaluations",
            (SECANT, GOLDEN, BACKTRACKING),
        ),
        compared(
            3,
            "away-step FW: the adaptive rule needs more iterations than the secant rule "
            f"(mean at least {MORE_ITERATIONS:g}×) on every problem",
            more,
            "iterations",
            (SECANT, ADAPTIVE),
        ),
        claim(
            4,
            "vanilla FW zig-zags: the gaps, iterations and evaluations each rule reaches "
            "within the iteration cap",
            "recorded" if vanilla else "not run",
            measured={"vanilla": vanilla},
            paper="in vanilla FW the open-loop rule often wins (zig-zagging), hence away steps",
        ),
        claim(
            5,
            "the share of runs reaching gap ≤ 1e-6, per problem and rule (D-optimal design "
            "needs the domain oracle; rules that test decrease on f alone can stall there "
            "once the decrease falls below f's rounding)",
            "recorded" if table else "not run",
            measured={
                "success_rates": {
                    env: {agent: row["success_rate"] for agent, row in rows.items()}
                    for env, rows in table.items()
                }
            },
            paper={"iterations, f evaluations, ∇f evaluations (away-step FW)": PAPER},
        ),
    ]
