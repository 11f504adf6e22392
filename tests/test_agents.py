"""The agent registry and the random agent."""

import pytest

import omnigym
from omnigym.agent import UnknownAgentError, make_agent


def test_random_agent_picks_only_legal_actions_when_listed():
    env = omnigym.make("LMRL/MazeFO-v0")
    agent = make_agent("random", env=env, env_id="LMRL/MazeFO-v0")
    agent.reset(0)
    _, info = env.reset(seed=0)
    picks = {agent.act(None, info) for _ in range(200)}
    assert picks == set(info["legal_actions"])


def test_random_agent_samples_text_when_no_legal_list():
    env = omnigym.make("LMRL/Wordle-v0")
    agent = make_agent("random", env=env)
    agent.reset(1)
    action = agent.act(None, {})
    assert isinstance(action, str) and env.action_space.contains(action)


def test_random_agent_is_reproducible_under_reset_seed():
    env = omnigym.make("LMRL/MazeFO-v0")
    _, info = env.reset(seed=0)
    first, second = make_agent("random", env=env), make_agent("random", env=env)
    first.reset(7)
    second.reset(7)
    assert [first.act(None, info) for _ in range(20)] == [second.act(None, info) for _ in range(20)]


def test_oracle_resolves_per_environment():
    assert "oracle" in omnigym.list_agents("LMRL/Wordle-v0")
    assert "oracle" not in omnigym.list_agents()


def test_module_class_names_any_importable_agent():
    env = omnigym.make("LMRL/MazeFO-v0")
    agent = make_agent("omnigym.agents.random:RandomAgent", env=env)
    assert type(agent).__name__ == "RandomAgent"


def test_unknown_agent_names_close_matches():
    with pytest.raises(UnknownAgentError, match="oracle"):
        make_agent("oracel", env_id="LMRL/Wordle-v0")


def test_unloadable_module_class_is_an_unknown_agent():
    with pytest.raises(UnknownAgentError, match="cannot load"):
        make_agent("no_such_module:Agent")
