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


def test_family_agents_are_offered_only_on_their_family():
    assert "sdqc" in omnigym.list_agents("Safe/PointGoal1-v0")
    assert "diplomacy_greedy" in omnigym.list_agents("Diplomacy/Standard-v0")
    for env_id in ("Craft/ChopTree-v0", "LMRL/Wordle-v0"):
        offered = set(omnigym.list_agents(env_id))
        assert not offered & {"sdqc", "bc_all", "fisor", "diplomacy_greedy", "dipllm"}


def test_general_agents_are_offered_where_they_can_run():
    assert "sb3" in omnigym.list_agents("Craft/ChopTree-v0")
    assert "sb3" not in omnigym.list_agents("LMRL/Wordle-v0")
    assert "random" not in omnigym.list_agents("Diplomacy/Standard-v0")


def test_an_agent_of_another_family_is_refused_naming_its_family():
    with pytest.raises(UnknownAgentError, match=r"plays the Safe( and SafeBullet)? famil"):
        make_agent("sdqc", env_id="Craft/ChopTree-v0")
    with pytest.raises(UnknownAgentError, match="does not run on LMRL/Wordle-v0"):
        make_agent("sb3", env_id="LMRL/Wordle-v0")
