"""Held-out imitation measures (omnigym.llm_agents.imitation): the majority-class rates by hand,
and BC at micro scale learning its data: held-out token accuracy from below to above the
majority-class rate."""

import pytest

from tests.llm.conftest import MAZE, require_llm_stack

require_llm_stack()

from omnigym.llm_agents.bc import BCAgent  # noqa: E402
from omnigym.llm_agents.data import Example, dataset_examples, load_records  # noqa: E402
from omnigym.llm_agents.imitation import (  # noqa: E402
    imitation_report,
    majority_action_rate,
    majority_token_rate,
)
from omnigym.llm_agents.models import TinyConfig  # noqa: E402
from omnigym.llm_agents.policy import LMPolicy  # noqa: E402

TWENTY_Q = "LMRL/TwentyQuestions-v0"


def example(completion):
    return Example(MAZE, 0, 0, "The goal is at position 8, 6.", completion, -1.0, -5.0, -5.0, True)


def test_majority_rates_count_the_commonest_action_and_token_per_position():
    policy = LMPolicy(env_id=MAZE, max_prompt_tokens=8)
    moves = [example("move up"), example("move up"), example("move down")]
    assert majority_action_rate(moves) == pytest.approx(2 / 3)
    # one token per move, then the end of sequence in every completion
    assert [len(policy.format.completion(e.completion)) for e in moves] == [2, 2, 2]
    assert majority_token_rate(policy, moves) == pytest.approx((2 + 3) / 6)


@pytest.mark.slow
def test_bc_held_out_token_accuracy_rises_above_the_majority_class_rate():
    # Held-out turns from a dataset seed the agent does not train on (its fixture is seed 0's).
    held_out = dataset_examples(load_records(TWENTY_Q, 12, seed=1)[1], TWENTY_Q)[:120]
    tiny = TinyConfig(layers=1, width=32, heads=2, context=128, vocab_size=300)
    agent = BCAgent(seed=0, tiny=tiny, max_prompt_tokens=32, batch_size=32, lr=3e-3)
    agent.learn(TWENTY_Q, 1)
    before = imitation_report(agent.policy, held_out)
    agent.learn(TWENTY_Q, 150)
    after = imitation_report(agent.policy, held_out)
    assert before["token_accuracy"] < before["majority_token_rate"] < after["token_accuracy"]
    assert after["held_out_loss"] < before["held_out_loss"] - 1.0
    assert after["majority_token_rate"] == before["majority_token_rate"]
