"""Constrained decoding through a prefix tree of the legal actions
(omnigym.llm_agents.constrained): the tree allows exactly the continuations of legal actions,
sampled actions are legal and score as the masked teacher-forced pass does, and the agents that
decode over Wordle's listed guesses play only real words."""

import numpy as np
import pytest

from tests.llm.conftest import WORDLE, require_llm_stack, save_micro_bc

require_llm_stack()

import torch  # noqa: E402

import omnigym  # noqa: E402
from omnigym.envs.lmrl.datasets import load_fixture  # noqa: E402
from omnigym.envs.lmrl.wordle import word_lists  # noqa: E402
from omnigym.llm_agents.constrained import ActionTrie  # noqa: E402
from omnigym.llm_agents.mc_returns import (  # noqa: E402
    MCReturnsAgent,
    TurnBatch,
    completion_log_probs,
    decoder_parts,
    run_turns,
)
from omnigym.llm_agents.policy import LMPolicy  # noqa: E402
from omnigym.llm_agents.ppo import PPOAgent  # noqa: E402

GUESSES = word_lists()[1]


@pytest.fixture(scope="module")
def wordle_policy():
    """An untrained tiny policy sampling at temperature 1 over Wordle's listed guesses."""
    return LMPolicy(env_id=WORDLE, temperature=1.0, max_prompt_tokens=48)


@pytest.fixture(scope="module")
def wordle_state():
    env = omnigym.make(WORDLE, list_guesses=True)
    observation, info = env.reset(seed=0, options={"word": "apple"})
    observation, *_, info = env.step("crane")
    return observation, info


def test_the_tree_allows_exactly_the_tokens_that_continue_a_legal_action(wordle_policy):
    words = ["crane", "crate", "crank", "slate", "apple"]
    trie = ActionTrie(words, wordle_policy.format.completion)
    completions = [wordle_policy.format.completion(word) for word in words]
    for ids in completions:
        mask = trie.masks(ids, wordle_policy.lm.vocab_size)
        for k in range(len(ids)):
            expected = {other[k] for other in completions if other[:k] == ids[:k]}
            assert set(torch.nonzero(mask[k]).flatten().tolist()) == expected
    assert trie.allowed(trie.root) == list(dict.fromkeys(c[0] for c in completions))


def test_sampled_actions_are_legal_and_score_as_the_masked_pass(wordle_policy, wordle_state):
    observation, info = wordle_state
    trie = wordle_policy.trie(info["legal_actions"])
    prompt = wordle_policy.format.encode(observation)
    drawn = trie.sample(wordle_policy.lm.model, prompt, 6, 1.0, np.random.default_rng(0))
    assert all(0 <= index < len(GUESSES) for index, _ in drawn)
    vocab = wordle_policy.lm.vocab_size
    batch = TurnBatch.build(
        [prompt],
        [trie.completions[index] for index, _ in drawn],
        [0] * len(drawn),
        wordle_policy.lm.pad_id,
        [trie.masks(trie.completions[index], vocab) for index, _ in drawn],
    )
    body, head = decoder_parts(wordle_policy.lm.model)
    with torch.no_grad():
        states, hidden = run_turns(body, batch)
        scored = completion_log_probs(head, states, hidden, batch).double().numpy()
    assert scored == pytest.approx([log_prob for _, log_prob in drawn], abs=1e-4)
    assert all(log_prob <= 0 for _, log_prob in drawn)


def test_the_tree_is_built_once_per_legal_list(wordle_policy, wordle_state):
    _, info = wordle_state
    assert wordle_policy.trie(info["legal_actions"]) is wordle_policy.trie(info["legal_actions"])


def test_greedy_decoding_over_the_tree_is_deterministic(wordle_policy, wordle_state):
    observation, info = wordle_state
    first = wordle_policy.propose(observation, info["legal_actions"], 3, 0.0)
    assert len(set(first)) == 1 and first[0] in GUESSES
    assert wordle_policy.propose(observation, info["legal_actions"], 1, 0.0) == first[:1]


def test_a_policy_over_listed_guesses_plays_only_valid_words(wordle_policy):
    env = omnigym.make(WORDLE, list_guesses=True)
    observation, info = env.reset(seed=1)
    done = False
    while not done:
        observation, _, done, _, info = env.step(wordle_policy.act(observation, info))
        assert not info["invalid_action"]
    assert info["turn"] >= 1


def test_mc_candidates_over_many_legal_actions_are_sampled_legal_words(tmp_path, wordle_state):
    records = load_fixture(WORDLE)[:5]
    checkpoint = save_micro_bc(tmp_path / "bc", records, max_prompt_tokens=48, updates=1)
    agent = MCReturnsAgent(seed=0, policy=str(checkpoint), candidates=5)
    agent.learn(records, 1)
    observation, info = wordle_state
    actions, prior = agent.candidates(observation, info)
    assert 1 <= len(actions) <= 5 and set(actions) <= set(GUESSES)
    assert np.exp(prior).sum() == pytest.approx(5)
    assert agent.act(observation, info) in GUESSES


def test_ppo_rollouts_over_listed_guesses_replay_their_own_log_probabilities(tmp_path):
    records = load_fixture(WORDLE)[:5]
    checkpoint = save_micro_bc(tmp_path / "bc", records, max_prompt_tokens=48, updates=1)
    agent = PPOAgent(seed=0, policy=str(checkpoint), envs=2, steps=3, bc_weight=0.0)
    envs = [omnigym.make(WORDLE, list_guesses=True) for _ in range(2)]
    agent._start(WORDLE, envs[0])
    turns, _, _ = agent._rollout(envs, agent._reset_all(envs))
    flat = [turn for row in turns for turn in row]
    assert all(turn.texts[0] in GUESSES and len(turn.texts) == 1 for turn in flat)
    batch, groups = agent._batch(
        [t.prompt for t in flat], [t.candidates for t in flat], [t.allowed for t in flat]
    )
    with torch.no_grad():
        log_probs, _ = agent._log_probs(agent.policy.lm.model, batch, groups)
    replayed = log_probs[[group.start for group in groups]].double().numpy()
    assert replayed == pytest.approx([turn.log_prob for turn in flat], abs=1e-4)
    for env in envs:
        env.close()
