"""LMPolicy (omnigym.llm_agents.policy): prompts keep the instructions and cut the transcript
from the left, constrained decoding plays only legal actions, generated text goes to the env as
it is, batches decide as single calls do, the out-of-memory guard refuses bad sizes up front,
and the lm: agent names resolve."""

import numpy as np
import pytest

from tests.llm.conftest import MAZE, WORDLE, require_llm_stack

require_llm_stack()

import torch  # noqa: E402

import omnigym  # noqa: E402
from omnigym.agent import UnknownAgentError, load_agent_factory, make_agent  # noqa: E402
from omnigym.cli import main as cli_main  # noqa: E402
from omnigym.llm_agents.models import SMOLLM2_HINT  # noqa: E402
from omnigym.llm_agents.policy import (  # noqa: E402
    LMPolicy,
    PromptFormat,
    check_inference_budget,
    format_prompt,
    task_prompt,
)


@pytest.fixture(scope="module")
def maze_policy():
    return LMPolicy(env_id=MAZE, max_prompt_tokens=64)


def play(env, agent, seed, steps):
    """Up to ``steps`` steps of one episode; the (action, info) of each."""
    agent.reset(seed)
    observation, info = env.reset(seed=seed)
    seen = []
    for _ in range(steps):
        action = agent.act(observation, info)
        legal = info.get("legal_actions")
        observation, reward, terminated, truncated, info = env.step(action)
        seen.append((action, legal, reward, info))
        if terminated or truncated:
            break
    return seen


def test_every_single_agent_lmrl_task_has_instructions():
    for info in omnigym.list_envs(family="LMRL", kind="single"):
        assert task_prompt(info.id).instructions == info.metadata["prompt"]["instructions"]
        assert task_prompt(info.id).max_new_tokens >= 8
    assert task_prompt("Other/Task-v0").instructions.startswith("Write your next message")


def test_prompt_keeps_the_instructions_and_cuts_the_transcript_from_the_left(maze_policy):
    tokenizer = maze_policy.lm.tokenizer
    prompt = PromptFormat(tokenizer, MAZE, max_prompt_tokens=80, instructions=True)
    env = omnigym.make(MAZE)
    observation, _ = env.reset(seed=0)
    for move in ["move up", "move left"] * 10:
        observation, *_ = env.step(move)
    ids = prompt.encode(observation)
    assert len(ids) == 80
    text = tokenizer.decode(ids)
    assert text.startswith(task_prompt(MAZE).instructions + "\n\n")
    kept = text[len(task_prompt(MAZE).instructions) + 2 : -1]
    assert observation.endswith(kept) and len(kept) < len(observation)
    assert text.endswith("\n")
    # short observations are whole: the plain prompt text, token for token
    whole = PromptFormat(tokenizer, MAZE, max_prompt_tokens=400, instructions=True)
    _, first = env.reset(seed=1)
    assert tokenizer.decode(whole.encode(first["last_message"])) == format_prompt(
        MAZE, first["last_message"]
    )
    with pytest.raises(ValueError, match="leaves no room"):
        PromptFormat(tokenizer, MAZE, max_prompt_tokens=len(prompt.head), instructions=True)


def test_the_prompt_holds_the_tasks_window_of_transcript_lines(maze_policy):
    # LMRL-Gym's 256 GPT-2 tokens hold about 8 maze turns; the tiny tokenizer packs a maze
    # message into one token, so the window is counted in lines (registry.yaml).
    assert task_prompt(MAZE).history_lines == 16
    assert task_prompt("LMRL/TextNavFO-v0").history_lines is None
    assert maze_policy.format.history_lines == maze_policy.settings()["history_lines"] == 16
    env = omnigym.make(MAZE)
    observation, _ = env.reset(seed=0)
    for move in ["move up", "move left"] * 20:
        observation, *_ = env.step(move)
    lines = observation.split("\n")
    assert len(lines) > 64
    unlimited = maze_policy.variant(history_lines=None).format.encode
    window = maze_policy.format.encode(observation)
    assert window == unlimited("\n".join(lines[-16:]))
    assert len(window) < len(unlimited(observation)) == 64
    with pytest.raises(ValueError, match="history_lines"):
        maze_policy.variant(history_lines=0)


def test_a_variant_keeps_the_model_and_the_prompt(maze_policy):
    sampler = maze_policy.variant(temperature=1.0, constrained=False, batch_size=3, seed=5)
    assert sampler.lm is maze_policy.lm and sampler.batch_size == 3
    changed = {"temperature": 1.0, "constrained": False}
    assert sampler.settings() == {**maze_policy.settings(), **changed}


def test_a_tiny_model_reads_no_instructions_by_default(maze_policy):
    assert maze_policy.format.head == [] and not maze_policy.settings()["instructions"]
    assert maze_policy.format.completion("move up")[-1] == maze_policy.lm.tokenizer.eos_token_id


def test_constrained_decoding_only_emits_legal_actions(maze_policy):
    for env_id in (MAZE, "LMRL/TextNavFO-v0"):
        policy = LMPolicy(env_id=env_id, max_prompt_tokens=64, temperature=1.0, seed=3)
        env = omnigym.make(env_id)
        seen = [step for seed in range(3) for step in play(env, policy, seed, 15)]
        assert len(seen) >= 15
        assert all(action in legal for action, legal, *_ in seen)
        assert not any(info["invalid_action"] for *_, info in seen)
        assert len({action for action, *_ in seen}) > 1  # sampled, not one fixed move


def test_legal_actions_are_scored_by_their_log_likelihood(maze_policy):
    env = omnigym.make(MAZE)
    observation, info = env.reset(seed=0)
    legal = info["legal_actions"]
    scores = maze_policy.action_log_likelihoods(observation, legal)
    prompt = maze_policy.format.encode(observation)
    with torch.inference_mode():
        for action, score in zip(legal, scores, strict=True):
            completion = maze_policy.format.completion(action)
            logits = maze_policy.lm.model(input_ids=torch.tensor([prompt + completion])).logits
            log_probs = torch.log_softmax(logits[0].double(), dim=-1)
            expected = sum(
                log_probs[len(prompt) - 1 + t, token].item() for t, token in enumerate(completion)
            )
            assert score == pytest.approx(expected, abs=1e-6)
    assert maze_policy.act(observation, info) == legal[int(np.argmax(scores))]


def test_generated_text_that_is_no_move_goes_to_the_env_and_is_penalised():
    policy = LMPolicy(env_id=MAZE, max_prompt_tokens=64, constrained=False, temperature=1.0)
    env = omnigym.make(MAZE)
    seen = play(env, policy, seed=0, steps=5)
    for action, legal, reward, info in seen:
        assert isinstance(action, str)
        assert info["invalid_action"] == (action.strip().lower() not in legal)
        assert reward == -1.0
    assert any(info["invalid_action"] for *_, info in seen)  # an untrained model writes noise


def test_a_batch_decides_as_single_calls_do():
    env = omnigym.make(WORDLE)
    observations, infos = [], []
    for seed, guesses in enumerate([[], ["crane"], ["slate", "pound"], ["xx"]]):
        observation, info = env.reset(seed=seed)
        for guess in guesses:
            observation, *_, info = env.step(guess)
        observations.append(observation)
        infos.append(info)
    policy = LMPolicy(env_id=WORDLE, batch_size=3)  # two generate calls, of 3 and 1 prompts
    assert len({len(policy.format.encode(o)) for o in observations}) > 1  # left padding used
    batch = policy.act_batch(observations, infos)
    assert batch == [policy.act(o, i) for o, i in zip(observations, infos, strict=True)]
    maze = omnigym.make(MAZE)
    pairs = [maze.reset(seed=seed) for seed in range(4)]
    maze_policy = LMPolicy(env_id=MAZE, batch_size=2)
    chosen = maze_policy.act_batch([o for o, _ in pairs], [i for _, i in pairs])
    assert chosen == [maze_policy.act(o, i) for o, i in pairs]


def test_sampling_is_seeded_by_reset_and_leaves_the_global_generators_alone():
    policy = LMPolicy(env_id=WORDLE, temperature=1.0)
    env = omnigym.make(WORDLE)
    observation, info = env.reset(seed=0)
    torch.manual_seed(0)
    expected = torch.rand(2)
    torch.manual_seed(0)
    policy.reset(4)
    first = [policy.act(observation, info) for _ in range(3)]
    assert torch.equal(torch.rand(2), expected)
    policy.reset(4)
    assert [policy.act(observation, info) for _ in range(3)] == first
    assert len(set(first)) > 1


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [
        ({"batch_size": 0}, "batch_size must be a positive int"),
        ({"batch_size": 2.5}, "batch_size must be a positive int"),
        ({"max_new_tokens": 0}, "max_new_tokens must be a positive int"),
        ({"max_new_tokens": 1024}, r"max_new_tokens \(1024\) must be below the model's context"),
        ({"max_prompt_tokens": 1020}, r"max_prompt_tokens \(1020\) \+ max_new_tokens \(8\)"),
        ({"batch_size": 100_000}, "batch_size 100000 .* over memory_limit"),
        ({"batch_size": 64, "memory_limit": 2**20}, "lower batch_size"),
        ({"temperature": -1.0}, "temperature"),
    ],
)
def test_the_memory_guard_rejects_bad_sizes_up_front(maze_policy, kwargs, named):
    with pytest.raises(ValueError, match=named):
        LMPolicy(model=maze_policy.lm, env_id=MAZE, **kwargs)


def test_the_memory_estimate_grows_with_batch_and_tokens(maze_policy):
    lm = maze_policy.lm
    check_inference_budget(lm, 8, 8, 1000)
    # 4 layers x (keys + values) x 128 floats of 4 bytes per token; logits over the vocabulary
    assert lm.kv_bytes_per_token == 4 * 2 * 128 * 4
    with pytest.raises(ValueError, match="GiB"):
        check_inference_budget(lm, 8, 8, 1000, memory_limit=8 * 1008 * lm.kv_bytes_per_token)


# ---- agent names ---------------------------------------------------------------------------


def test_lm_names_resolve_to_language_model_policies(tmp_path):
    env = omnigym.make(MAZE)
    agent = make_agent("lm:tiny", env=env, env_id=MAZE, max_prompt_tokens=64)
    assert isinstance(agent, LMPolicy) and agent.env_id == MAZE
    observation, info = env.reset(seed=0)
    assert agent.act(observation, info) in info["legal_actions"]
    assert load_agent_factory("lm:smollm2").keywords == {"model": "smollm2"}
    with pytest.raises(UnknownAgentError, match="needs a model"):
        load_agent_factory("lm:")


def test_a_missing_lm_path_is_refused_with_the_path_and_the_install_hint(tmp_path, capsys):
    missing = tmp_path / "nowhere"
    with pytest.raises(UnknownAgentError) as error:
        load_agent_factory(f"lm:{missing}", MAZE)
    assert str(missing) in str(error.value) and SMOLLM2_HINT in str(error.value)
    assert cli_main(["eval", WORDLE, "--agent", f"lm:{missing}", "--episodes", "1"]) == 2
    assert SMOLLM2_HINT in capsys.readouterr().err


def test_omnigym_eval_runs_an_lm_agent_offline(capsys):
    assert cli_main(["eval", WORDLE, "--agent", "lm:tiny", "--episodes", "2", "--json"]) == 0
    assert '"agent": "lm:tiny"' in capsys.readouterr().out


# ---- SmolLM2-135M zero-shot ----------------------------------------------------------------


@pytest.mark.slow
def test_zero_shot_smollm2_guesses_a_word_or_is_penalised_on_wordle(smollm2_wheel):
    env = omnigym.make(WORDLE)
    agent = make_agent("lm:smollm2", env=env, env_id=WORDLE)
    assert agent.format.instructions and agent.format.head  # the prompting baseline
    seen = play(env, agent, seed=0, steps=2)
    for action, _, reward, info in seen:
        assert isinstance(action, str) and "\n" not in action
        valid = len(action) == 5 and action.isalpha() and not info["invalid_action"]
        assert valid or (info["invalid_action"] and reward == -1.0)
