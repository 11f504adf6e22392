"""Twenty Questions and Guess My City: knowledge bases, question
rules, parsing, rewards, oracles and behaviour mixtures."""

import re
from collections import Counter

import numpy as np
import pytest

import omnigym
from omnigym.agents.lmrl.questions import GuessMyCityOracle, TwentyQuestionsOracle
from omnigym.envs.lmrl.datasets import generate
from omnigym.envs.lmrl.guess_my_city import (
    GuessMyCityBehaviour,
    GuessMyCityEnv,
    country_names,
    load_cities,
)
from omnigym.envs.lmrl.normalization import load_constants
from omnigym.envs.lmrl.questions import MAX_QUESTIONS, OPENING, parser_for
from omnigym.envs.lmrl.twenty_questions import (
    TwentyQuestionsBehaviour,
    TwentyQuestionsEnv,
    load_objects,
)

from .episodes import play

OBJECTS, CITIES = load_objects(), load_cities()
TWENTY_Q, CITY = "LMRL/TwentyQuestions-v0", "LMRL/GuessMyCity-v0"

LMRL_CATEGORY_SIZES = {
    "Sports": 10,
    "Animals": 10,
    "Fruits": 10,
    "Vehicles": 10,
    "Clothes": 11,
    "Electronics": 10,
    "Musical Instruments": 10,
    "Furniture": 10,
    "Office Supplies": 14,
    "Vegetables": 10,
    "Art": 7,
    "Kitchen Tools": 10,
    "Nature": 11,
    "Toys": 5,
    "Jewelry": 9,
    "Garden Supplies": 5,
    "Tools": 6,
}


def ask(env_cls, target, *questions):
    """Play ``questions`` against ``target``; return every step's (answer, reward, done, info)."""
    env = env_cls()
    env.reset(seed=0, options={env.kb.kind: target})
    steps = []
    for question in questions:
        _, reward, terminated, truncated, info = env.step(question)
        steps.append((info["last_message"], reward, terminated or truncated, info))
    return steps


def answers(env_cls, target, *questions):
    return [answer for answer, *_ in ask(env_cls, target, *questions)]


def play_named(env_id, agent_name, seed, options=None):
    env = omnigym.make(env_id)
    return play(env, omnigym.make_agent(agent_name, env=env, env_id=env_id), seed, options)


# -- knowledge bases ---------------------------------------------------------------------------


def test_objects_are_158_in_lmrls_17_categories_at_its_sizes():
    assert len(OBJECTS.items) == 158 == len(set(OBJECTS.items))
    assert Counter(OBJECTS.categories) == LMRL_CATEGORY_SIZES


@pytest.mark.parametrize("kb", [OBJECTS, CITIES], ids=["objects", "cities"])
def test_every_item_has_a_unique_attribute_vector(kb):
    assert len({row.tobytes() for row in kb.values}) == len(kb.items)


def test_objects_have_dozens_of_attributes_each_used_both_ways():
    assert 40 <= len(OBJECTS.attributes) <= 80
    true_count = OBJECTS.values.sum(axis=0)
    assert (true_count > 0).all() and (true_count < len(OBJECTS.items)).all()


def test_cities_are_100_with_variants_like_bombay_and_madras():
    assert len(CITIES.items) == 100
    assert CITIES.lookup("Bombay") == CITIES.items.index("Mumbai")
    assert CITIES.lookup("madras") == CITIES.items.index("Chennai")
    assert CITIES.lookup("Peking") == CITIES.items.index("Beijing")


@pytest.mark.parametrize("kb", [OBJECTS, CITIES], ids=["objects", "cities"])
def test_every_attribute_question_parses_back_to_its_attribute(kb):
    parser = parser_for(kb)
    for column, attribute in enumerate(kb.attributes):
        for question in attribute.questions:
            parse = parser.parse(question)
            assert (parse.kind, parse.terms, parse.negated) == (
                "attributes",
                ((column, True),),
                False,
            ), question
            assert [parse.answer(row) for row in kb.values] == kb.values[:, column].tolist()


@pytest.mark.parametrize("kb", [OBJECTS, CITIES], ids=["objects", "cities"])
def test_every_guess_phrasing_and_name_variant_is_a_guess_of_its_item(kb):
    parser = parser_for(kb)
    for item, (guesses, variants) in enumerate(zip(kb.guesses, kb.variants, strict=True)):
        questions = [*guesses, *(f"Is it {variant}?" for variant in variants)]
        assert {(parser.parse(q).kind, parser.parse(q).item) for q in questions} == {
            ("guess", item)
        }, kb.items[item]


def test_open_routes_are_reached_by_each_of_their_phrasings():
    parser = parser_for(CITIES)
    for route_index, route in enumerate(CITIES.routes):
        for question in route.questions:
            assert (parser.parse(question).kind, parser.parse(question).route) == (
                "open",
                route_index,
            )


def test_open_answers_never_name_the_city_or_its_country():
    names = country_names()
    for city, variants, country in zip(
        CITIES.items, CITIES.variants, CITIES.categories, strict=True
    ):
        forbidden = re.compile(
            "|".join(rf"\b{re.escape(n)}\b" for n in (*variants, *names[country])), re.IGNORECASE
        )
        for route in CITIES.routes:
            answer = route.answers[CITIES.items.index(city)]
            assert not forbidden.search(answer), (city, route.name, answer)


def test_open_answers_reach_the_player_through_the_env():
    (answer,) = answers(GuessMyCityEnv, "Tokyo", "What language do people speak there?")
    assert answer == "Most people there speak Japanese."
    (answer,) = answers(GuessMyCityEnv, "Sydney", "What is the weather like?")
    assert answer.startswith("The climate is humid subtropical") and "December" in answer


# -- question rules and parsing ----------------------------------------------------------------


@pytest.mark.parametrize(
    "question", ["", "   ", "Tell me: is it alive?", "It is alive?", "is it " + "very " * 39]
)
def test_invalid_question_is_answered_no_flagged_and_costs_one(question):
    ((answer, reward, done, info),) = ask(TwentyQuestionsEnv, "Cat", question)
    assert (answer, reward, done) == ("No.", -1.0, False)
    assert info["invalid_action"] is True


def test_forty_words_are_still_a_question():
    ((answer, _, _, info),) = ask(TwentyQuestionsEnv, "Cat", "Is it " + "really " * 36 + "alive?")
    assert (answer, info["invalid_action"]) == ("Yes.", False)


def test_open_questions_are_invalid_in_twenty_questions_but_not_in_guess_my_city():
    question = "What is it made of?"
    assert ask(TwentyQuestionsEnv, "Cat", question)[0][3]["invalid_action"] is True
    assert ask(GuessMyCityEnv, "Lima", question)[0][3]["invalid_action"] is False


def test_question_that_names_nothing_is_answered_no_and_flagged_unparsed():
    ((answer, reward, _, info),) = ask(TwentyQuestionsEnv, "Cat", "Is it quixotic?")
    assert (answer, reward, info["unparsed"], info["invalid_action"]) == ("No.", -1.0, True, False)
    ((answer, _, _, info),) = ask(GuessMyCityEnv, "Lima", "Who is the mayor?")
    assert (answer, info["unparsed"]) == ("I don't know.", True)
    ((_, _, _, info),) = ask(TwentyQuestionsEnv, "Cat", "Is it alive?")
    assert info["unparsed"] is False


def test_synonyms_name_the_same_attribute():
    assert (
        answers(
            TwentyQuestionsEnv,
            "Knife",
            "Is it made of steel?",
            "Is it metallic?",
            "Is it found in a kitchen?",
            "Is it a kitchen utensil?",
            "Can it cut things?",
        )
        == ["Yes."] * 5
    )


def test_not_flips_the_answer_but_a_leading_contraction_does_not():
    assert answers(
        TwentyQuestionsEnv,
        "Cat",
        "Is it alive?",
        "Is it not alive?",
        "Isn't it alive?",
        "Does it not have fur?",
        "Is it man-made?",
        "Is it not man-made?",
    ) == ["Yes.", "No.", "Yes.", "No.", "No.", "Yes."]


def test_longer_phrase_wins_over_the_words_it_contains():
    # "bigger than a person" is its own attribute, not "bigger than a breadbox".
    assert answers(
        TwentyQuestionsEnv, "Dog", "Is it bigger than a breadbox?", "Is it bigger than a person?"
    ) == ["Yes.", "No."]
    assert answers(GuessMyCityEnv, "Delhi", "Is it the capital of India?") == ["Yes."]
    assert answers(GuessMyCityEnv, "Mumbai", "Is it the capital of India?") == ["No."]


def test_or_asks_whether_either_attribute_holds():
    assert answers(
        TwentyQuestionsEnv, "Apple", "Is it an animal or a fruit?", "Is it an animal and a fruit?"
    ) == ["Yes.", "No."]


def test_kind_of_a_category_asks_the_attribute_kind_of_an_object_guesses_it():
    steps = ask(TwentyQuestionsEnv, "Apple", "Is it a kind of fruit?", "Is it a kind of apple?")
    assert [(answer, reward, done) for answer, reward, done, _ in steps] == [
        ("Yes.", -1.0, False),
        ("Yes.", 0.0, True),
    ]


def test_a_name_after_a_relation_word_is_not_a_guess():
    # "Paper" is an object, but "made of paper" asks about the material.
    questions = ("Is it made of paper?", "Is it used with a pen?", "Is it paper?")
    kinds = [parser_for(OBJECTS).parse(q).kind for q in questions]
    assert kinds == ["attributes", "unparsed", "guess"]
    assert answers(TwentyQuestionsEnv, "Diary", *questions) == ["Yes.", "No.", "No."]


def test_guesses_match_plurals_variants_and_generic_words():
    for target, question in [
        ("Knife", "Are they knives?"),
        ("Scissors", "Is the object a pair of scissors?"),
        ("Television", "Could it be a TV?"),
        ("Cat", "Is the thing you are thinking of a kitten?"),
        ("Cooking pot", "Is it a pot, maybe?"),
    ]:
        (answer, reward, done, info), *_ = ask(TwentyQuestionsEnv, target, question)
        assert (answer, reward, done, info["success"]) == ("Yes.", 0.0, True, True), question


def test_city_guesses_accept_old_names_and_the_word_city():
    for target, question in [
        ("Mumbai", "Is it Bombay?"),
        ("Chennai", "Is the city Madras?"),
        ("New York City", "Is it New York?"),
        ("Washington, D.C.", "Could it be Washington DC?"),
    ]:
        assert ask(GuessMyCityEnv, target, question)[0][3]["success"] is True, question
    # Naming a place after "in" asks about the country, not the city.
    assert answers(GuessMyCityEnv, "Singapore", "Is it in Mexico?", "Is it in Singapore?") == [
        "No.",
        "Yes.",
    ]


# -- rewards and episode end ---------------------------------------------------------------------


def test_correct_guess_after_three_questions_returns_minus_three_and_succeeds():
    steps = ask(
        TwentyQuestionsEnv,
        "Banana",
        "Is it a fruit?",
        "Is it yellow?",
        "Is it an apple?",
        "Is it a banana?",
    )
    assert [reward for _, reward, _, _ in steps] == [-1.0, -1.0, -1.0, 0.0]
    answer, _, done, info = steps[-1]
    assert (answer, done, info["success"], info["episode_return"]) == ("Yes.", True, True, -3.0)
    assert info["metrics"] == {
        "turns": 4.0,
        "invalid_actions": 0.0,
        "guesses": 2.0,
        "unparsed_questions": 0.0,
    }


@pytest.mark.parametrize("env_cls", [TwentyQuestionsEnv, GuessMyCityEnv])
def test_twenty_questions_without_the_answer_return_minus_twenty_and_terminate(env_cls):
    env = env_cls()
    env.reset(seed=0)
    for turn in range(MAX_QUESTIONS):
        _, reward, terminated, truncated, info = env.step("Is it quixotic?")
        assert reward == -1.0 and not truncated
        assert terminated == (turn == MAX_QUESTIONS - 1)
    assert (info["episode_return"], info["success"]) == (-20.0, False)
    assert info["metrics"]["unparsed_questions"] == 20.0
    with pytest.raises(RuntimeError, match="reset"):
        env.step("Is it alive?")


def test_transcript_is_questions_header_then_question_and_answer_lines():
    env = TwentyQuestionsEnv()
    observation, info = env.reset(seed=0, options={"object": "Rock"})
    assert observation == OPENING == info["last_message"]
    observation, *_ = env.step("Is it alive?")
    assert observation == "Questions:\nIs it alive?\nNo."
    last = TwentyQuestionsEnv(obs_mode="last")
    last.reset(seed=0, options={"object": "Rock"})
    assert last.step("Is it alive?")[0] == "No."


@pytest.mark.parametrize("env_cls", [TwentyQuestionsEnv, GuessMyCityEnv])
def test_longest_possible_episode_fits_the_observation_space(env_cls):
    kb = env_cls.knowledge()
    routes = [route.answers for route in kb.routes] or [("Yes.", "No.")]
    longest = max(len(answer) for answers_ in routes for answer in answers_)
    bound = len(OPENING) + MAX_QUESTIONS * (2 + 256 + max(longest, len("I don't know.")))
    assert bound <= env_cls.observation_max_length
    # A real worst case: the longest open answer (or "Yes."/"No.") after the longest question.
    target = 0
    question = "Is it " + "x" * 300
    if kb.routes:
        route = max(kb.routes, key=lambda r: max(len(a) for a in r.answers))
        target = int(np.argmax([len(a) for a in route.answers]))
        question = route.questions[0] + " " + "x" * 300
    env = env_cls()
    env.reset(seed=0, options={kb.kind: kb.items[target]})
    for _ in range(MAX_QUESTIONS):
        observation, *_ = env.step(question)
    assert len(observation) > MAX_QUESTIONS * 256
    assert env.observation_space.contains(observation)


def test_reset_option_pins_the_target_by_name_or_variant_and_rejects_unknowns():
    env = GuessMyCityEnv()
    env.reset(seed=0, options={"city": "Calcutta"})
    assert env.target == "Kolkata"
    with pytest.raises(ValueError, match="options\\['object'\\]"):
        TwentyQuestionsEnv().reset(options={"object": "unicorn"})


@pytest.mark.parametrize("env_cls", [TwentyQuestionsEnv, GuessMyCityEnv])
@pytest.mark.parametrize(
    ("kwargs", "name"),
    [({"obs_mode": "tail"}, "obs_mode"), ({"render_mode": "human"}, "render_mode")],
)
def test_bad_constructor_kwargs_raise_value_error_naming_the_kwarg(env_cls, kwargs, name):
    with pytest.raises(ValueError, match=name):
        env_cls(**kwargs)


def test_targets_are_drawn_uniformly_and_reproducibly_from_the_seed():
    env = TwentyQuestionsEnv()
    targets = []
    for seed in range(2000):
        env.reset(seed=seed)
        targets.append(env.target)
    counts = Counter(targets)
    assert len(counts) == 158 and max(counts.values()) < 40
    env.reset(seed=7)
    assert env.target == targets[7]


# -- oracles -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "env_cls"), [(TWENTY_Q, TwentyQuestionsEnv), (CITY, GuessMyCityEnv)]
)
def test_oracle_names_every_item_within_the_question_limit(env_id, env_cls):
    returns = []
    for seed, options in env_cls.evaluation_runs():
        _, info = play_named(env_id, "oracle", seed, options)
        assert info["success"], options
        assert info["metrics"]["invalid_actions"] == info["metrics"]["unparsed_questions"] == 0
        returns.append(info["episode_return"])
    # The decision tree is at most 19 questions deep (20 with the guess), and shallow on
    # average: log2(158) = 7.3 and log2(100) = 6.6 yes/no questions at the very least.
    assert min(returns) >= -19.0
    assert np.mean(returns) >= (-8.0 if env_id == TWENTY_Q else -7.0)
    assert len(returns) == len(env_cls.knowledge().items) == env_cls.evaluation_episodes


def test_city_oracle_asks_yes_no_questions_only():
    observation, info = play_named(CITY, "oracle", seed=3)
    questions = observation.split("\n")[1::2]
    assert all(q.split()[0] in ("Is", "Does", "Do", "Could") for q in questions)
    assert "open_questions" in info["metrics"] and info["metrics"]["open_questions"] == 0.0


@pytest.mark.parametrize("oracle_cls", [TwentyQuestionsOracle, GuessMyCityOracle])
def test_oracle_plays_from_the_answers_alone(oracle_cls):
    env_cls = TwentyQuestionsEnv if oracle_cls is TwentyQuestionsOracle else GuessMyCityEnv
    env = env_cls(obs_mode="last")
    oracle = oracle_cls(env=None)
    observation, info = env.reset(seed=11)
    done = False
    while not done:
        observation, _, done, _, info = env.step(oracle.act(observation, info))
    assert info["success"]


# -- behaviour policies (dataset mixtures) -----------------------------------------------------


@pytest.mark.parametrize(
    ("env_id", "behaviour"), [(TWENTY_Q, TwentyQuestionsBehaviour), (CITY, GuessMyCityBehaviour)]
)
def test_behaviour_dataset_success_lands_near_lmrls(env_id, behaviour):
    records = list(generate(env_id, 2000, seed=0))
    success = np.mean([r["success"] for r in records])
    assert abs(success - behaviour.lmrl_success) <= 0.05
    assert behaviour.default_episodes == 10_000
    styles = Counter(r["behaviour"]["style"] for r in records)
    assert set(styles) == {"random", "greedy", "early"}


def test_city_behaviour_asks_open_questions_the_simulator_answers():
    records = list(generate(CITY, 300, seed=1))
    agent_lines = [t["text"] for r in records for t in r["turns"] if t["role"] == "agent"]
    openers = Counter(line.split()[0] for line in agent_lines)
    assert openers["What"] + openers["How"] + openers["Where"] > 100
    assert all(t["text"] != "I don't know." for r in records for t in r["turns"])


class OpenOnlyBehaviour(GuessMyCityBehaviour):
    style_weights = {"random": 1.0}
    open_probability = 1.0
    misread_probability = 0.0


@pytest.mark.parametrize("seed", range(5))
def test_behaviour_narrows_its_candidates_with_open_answers(seed):
    env = GuessMyCityEnv()
    behaviour = OpenOnlyBehaviour(env)
    behaviour.reset(seed)
    observation, info = env.reset(seed=seed, options={"city": "Tokyo"})
    asked, done = [], False
    while not done:
        asked.append(behaviour.act(observation, info))
        observation, _, done, _, info = env.step(asked[-1])
    # Food, landmark or climate answers fit few cities: it names Tokyo within a few questions.
    assert info["success"] and info["turn"] <= 6
    open_phrasings = {q for route in CITIES.routes for q in route.questions}
    assert set(asked[:-1]) <= open_phrasings and asked[-1] in CITIES.guesses[0]


@pytest.mark.parametrize(
    ("env_id", "env_cls"), [(TWENTY_Q, TwentyQuestionsEnv), (CITY, GuessMyCityEnv)]
)
def test_normalized_score_is_100_for_the_oracle_and_0_for_the_minimum(env_id, env_cls):
    constants = load_constants()[env_id]
    oracle_returns = [
        play_named(env_id, "oracle", seed, options)[1]["episode_return"]
        for seed, options in env_cls.evaluation_runs()
    ]
    assert constants["min"] == env_cls.min_return == -20.0
    assert constants["max"] == pytest.approx(np.mean(oracle_returns), abs=1e-3)
    scores = [play_named(env_id, "oracle", seed)[1]["normalized_score"] for seed in range(100)]
    assert np.mean(scores) >= 90.0
    _, info = play_named(env_id, "random", seed=0)
    assert (info["episode_return"], info["normalized_score"]) == (-20.0, 0.0)


def test_oracle_beats_behaviour_beats_random_in_mean_return():
    for env_id in (TWENTY_Q, CITY):
        means = {
            name: np.mean(
                [play_named(env_id, name, seed)[1]["episode_return"] for seed in range(150)]
            )
            for name in ("oracle", "behavior", "random")
        }
        assert means["oracle"] > means["behavior"] + 3 > means["random"] + 3, (env_id, means)


def test_behaviour_episodes_are_reproducible_from_the_seed():
    assert list(generate(TWENTY_Q, 20, seed=5)) == list(generate(TWENTY_Q, 20, seed=5))


@pytest.mark.parametrize(("env_id", "count"), [(TWENTY_Q, 621), (CITY, 512)])
def test_listed_questions_are_the_knowledge_base_phrasings_and_all_answered(env_id, count):
    env = omnigym.make(env_id, list_questions=True)
    _, info = env.reset(seed=0)
    listed = info["legal_actions"]
    assert len(listed) == len(set(listed)) == count
    assert set(g for guesses in env.unwrapped.kb.guesses for g in guesses) <= set(listed)
    parser = env.unwrapped.parser
    assert {parser.parse(question).kind for question in listed} <= {"guess", "attributes", "open"}
    assert env.step(listed[0])[4]["legal_actions"] is listed
    assert "legal_actions" not in omnigym.make(env_id).reset(seed=0)[1]


def test_list_questions_must_be_a_bool():
    with pytest.raises(ValueError, match="list_questions"):
        TwentyQuestionsEnv(list_questions=1)
