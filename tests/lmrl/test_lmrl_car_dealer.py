"""Car Dealer: the scripted buyer, rewards, agents, duo forms."""

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pettingzoo.test import api_test, parallel_api_test
from pettingzoo.test.seed_test import check_environment_deterministic

import omnigym
from omnigym.agents.lmrl.car_dealer import CarDealerOracle
from omnigym.envs.lmrl.car_dealer import (
    BuyerProfile,
    CarDealerBehaviour,
    CarDealerDuoAECEnv,
    CarDealerDuoParallelEnv,
    CarDealerEnv,
    load_data,
    readable,
)
from omnigym.envs.lmrl.normalization import normalize
from omnigym.spaces import PRINTABLE

from .episodes import play

DATA = load_data()
POLITE_DISCOUNT = {
    "personality": "polite",
    "brand": "Toyota",
    "type": "SUV",
    "features": ["sunroof"],
    "budget": 50000,
    "strategy": "discount-seeker",
}
"""A polite discount-seeker wanting a Toyota SUV (MSRP $36,000) with a $50,000 budget."""


def buyer(**fields):
    return {"buyer": {**POLITE_DISCOUNT, **fields}}


def lines(observation):
    return observation.split("\n")


# -- data -------------------------------------------------------------------------------------


def test_data_has_the_buyer_profile_space_and_a_full_msrp_table():
    assert len(DATA.personalities) == 10
    assert len(DATA.brands) == 13
    assert set(DATA.types) == {"luxury", "sedan", "convertible", "truck", "electric", "SUV"}
    assert len(DATA.features) == 8
    assert DATA.budgets == (10000.0, 30000.0, 50000.0, 70000.0, 90000.0)
    assert set(DATA.strategies) == {"discount-seeker", "feature-seeker", "impatient"}
    assert len(DATA.msrp) == 13 * 6
    assert all(15000 <= price <= 120000 for price in DATA.msrp.values())


def test_buyer_prefixes_name_no_car_feature_price_or_reaction():
    for personality in DATA.personalities.values():
        for prefix in personality.prefixes:
            assert DATA.keywords.find(prefix) == {}
            assert DATA.amounts(prefix) == []
            assert DATA.buyer_line_kinds(prefix) == set()
            assert DATA.decision_in(prefix) is None


def test_every_accept_and_walk_away_line_reads_as_its_decision_and_no_other_line_does():
    for personality in DATA.personalities.values():
        for kind, line in personality.lines.items():
            expected = {"accept": True, "walk_away": False}.get(kind)
            assert DATA.decision_in(line) is expected, (personality.name, kind)


def test_longest_possible_conversation_fits_the_observation_space_by_construction():
    exchange = len("\nSeller: ") + 256 + len("\nBuyer: ") + DATA.longest_buyer_reply()
    assert len("Start") + 25 * exchange <= 32768


# -- the conversation -------------------------------------------------------------------------


def test_transcript_is_start_then_seller_and_buyer_lines():
    env = CarDealerEnv()
    observation, info = env.reset(seed=0, options=buyer())
    assert observation == info["last_message"] == "Start"
    observation, reward, terminated, truncated, info = env.step("Hello there!")
    assert lines(observation)[:2] == ["Start", "Seller: Hello there!"]
    assert lines(observation)[2] == info["last_message"]
    assert info["last_message"].startswith("Buyer: ")
    assert (reward, terminated, truncated, info["invalid_action"]) == (0.0, False, False, False)


def test_first_reply_names_the_wanted_car_and_shows_the_strategy():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer())
    reply = env.step("Hello there!")[4]["last_message"]
    assert "I'm looking for a new Toyota SUV." in reply
    assert "I'm hoping for a good discount." in reply
    assert "$" not in reply


def test_discount_seeker_states_its_budget_understated_by_a_fifth():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer())
    reply = env.step("What is your budget, and which features do you need?")[4]["last_message"]
    assert "My budget is $40,000." in reply
    assert "I want a sunroof." in reply


@pytest.mark.parametrize("personality", ["rude", "toxic", "uncommunicative"])
def test_some_personalities_refuse_to_give_their_budget(personality):
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer(personality=personality))
    reply = env.step("What is your budget?")[4]["last_message"]
    assert "$" not in reply
    assert DATA.personalities[personality].lines["budget_refusal"] in reply


def test_uncommunicative_buyer_tells_only_its_first_wanted_feature():
    env = CarDealerEnv()
    env.reset(
        seed=0, options=buyer(personality="uncommunicative", features=["navigation", "sunroof"])
    )
    reply = env.step("Which features do you want?")[4]["last_message"]
    assert "Want navigation." in reply and "sunroof" not in reply


def test_discount_seeker_asks_for_a_discount_then_accepts_the_last_dollar_amount():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer())
    env.step("Hi!")
    _, reward, terminated, _, info = env.step("This Toyota SUV is $45,000.")
    assert (reward, terminated) == (0.0, False)
    assert "Can you give me a discount?" in info["last_message"]
    observation, reward, terminated, truncated, info = env.step(
        "It lists at $45,000, but with a discount it is $44.5k."
    )
    assert (terminated, truncated, info["success"]) == (True, False, True)
    assert info["decision"] == {"outcome": "accept", "price": 44500.0, "msrp": 36000.0}
    assert reward == pytest.approx(44500 / ((50000 + 36000) / 2))
    assert info["episode_return"] == reward
    assert info["metrics"]["sale"] == 1.0 and info["metrics"]["price"] == 44500.0
    # The decision is in info, never in the transcript.
    assert "44500" not in observation and "36,000" not in observation
    assert lines(observation)[-1].endswith("Deal! I'll take it.")


def test_buyer_never_pays_above_its_budget_plus_slack_even_when_pleased():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer())
    # Brand, the wanted feature and a discount: full satisfaction, ceiling $55,000.
    info = env.step("This Toyota SUV has a sunroof: it was $60,000, discount to $55,001.")[4]
    assert "That's more than I want to pay." in info["last_message"]
    _, _, terminated, _, info = env.step("Fine, a further discount: $55,000.")
    assert terminated and info["decision"]["price"] == 55000.0


def test_amounts_under_a_thousand_dollars_are_not_offers():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer(strategy="impatient"))
    env.step("Hello.")
    _, _, terminated, _, info = env.step("Toyota SUV, $999. Deal?")
    assert not terminated and "So what's the price?" in info["last_message"]
    _, _, terminated, _, info = env.step("Toyota SUV for $30,000, that is $500 off.")
    assert terminated and info["decision"]["price"] == 30000.0


def test_way_over_budget_offer_is_called_so():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer())
    assert "way over my budget" in env.step("$80,000.")[4]["last_message"]


def test_feature_seeker_needs_two_of_its_wanted_features_mentioned():
    env = CarDealerEnv()
    env.reset(
        seed=0,
        options=buyer(strategy="feature-seeker", features=["navigation", "sunroof", "CarPlay"]),
    )
    info = env.step("This Toyota SUV has a sunroof, only $40,000.")[4]
    assert "Does it have navigation?" in info["last_message"]
    _, _, terminated, _, info = env.step("It has GPS navigation too.")
    assert terminated and info["decision"]["outcome"] == "accept"
    assert info["decision"]["price"] == 40000.0


def test_impatient_buyer_walks_away_after_four_turns_without_a_deal():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer(strategy="impatient"))
    for turn in range(4):
        _, reward, terminated, truncated, info = env.step("How about $99,000?")
        assert terminated == (turn == 3) and not truncated
    assert info["decision"] == {"outcome": "reject", "price": None, "msrp": 36000.0}
    assert (reward, info["success"]) == (0.0, False)
    assert info["last_message"].endswith("no deal. Goodbye.")


def test_impatient_buyer_loses_extra_patience_to_long_utterances():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer(strategy="impatient"))
    long_talk = "Let me tell you all about the many wonderful things this dealership offers."
    assert not env.step(long_talk)[2]
    _, _, terminated, _, info = env.step(long_talk)
    assert terminated and info["metrics"]["patience_left"] == 0.0


@pytest.mark.parametrize("action", ["", "   ", "?!", "x" * 257, "caf\u00e9 $1", "tab\there"])
def test_unreadable_utterance_is_flagged_and_costs_patience(action):
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer(strategy="feature-seeker"))
    for _ in range(3):
        _, reward, terminated, _, info = env.step(action)
        assert info["invalid_action"] is True
        assert reward == 0.0
        assert "Sorry, what? I couldn't make sense of that." in info["last_message"]
    # Patience 6 at two points a turn: the buyer leaves after three unreadable utterances.
    assert terminated and info["metrics"]["invalid_actions"] == 3.0
    assert info["metrics"]["sale"] == 0.0


def test_readable_text_is_what_the_charset_allows_with_a_letter_or_digit():
    assert readable("Hi") and readable("$5") and readable("line one\nline two")
    assert not readable("") and not readable("...") and not readable("\u00e9t\u00e9")


def test_naming_another_brand_annoys_the_buyer():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer())
    reply = env.step("Have you considered a Honda?")[4]["last_message"]
    assert "I told you, I only want a new Toyota SUV." in reply


def test_history_cap_makes_the_25th_reply_a_rejection_and_truncates():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer())
    # Ever smaller but way-over discounts: each restores the patience the turn costs.
    for turn in range(25):
        observation, reward, terminated, truncated, info = env.step(
            f"A discount just for you: ${900_000 - turn:,}."
        )
        assert truncated == (turn == 24) and not terminated
    assert len(lines(observation)) == 51
    assert info["decision"]["outcome"] == "reject" and reward == 0.0
    assert env.observation_space.contains(observation)


def test_longest_episode_transcript_fits_the_observation_space():
    env = CarDealerEnv()
    env.reset(seed=0, options=buyer(personality="talkative", features=DATA.features[:4]))
    utterance = "Which features, what budget? Discount: ${:,}. " + "z" * 256
    for turn in range(25):
        observation, *_ = env.step(utterance.format(900_000 - turn)[:256])
    assert len(observation) > 25 * 256
    assert env.observation_space.contains(observation)


PROFILES = st.fixed_dictionaries(
    {
        "personality": st.sampled_from(sorted(DATA.personalities)),
        "brand": st.sampled_from(DATA.brands),
        "type": st.sampled_from(DATA.types),
        "features": st.lists(st.sampled_from(DATA.features), min_size=1, max_size=4, unique=True),
        "budget": st.sampled_from(DATA.budgets),
        "strategy": st.sampled_from(sorted(DATA.strategies)),
    }
)
FRAGMENTS = st.one_of(
    st.text(alphabet=PRINTABLE, max_size=30),
    st.sampled_from(
        ["discount", "rebate", "features?", "budget?", "Toyota", "BMW", "sunroof", "GPS"]
        + ["leather", "third row", "CarPlay", "blind spot", "heated seats", "backup camera"]
    ),
    st.integers(0, 200_000).map(lambda n: f"${n:,}"),
    st.integers(0, 200).map(lambda n: f"${n}k"),
    st.floats(0.9, 1.2),
    st.sampled_from(["<brand>", "<features>"]),
)
"""Pieces of seller utterances. A float stands for that multiple of the buyer's budget in
dollars, ``<brand>`` and ``<features>`` for the buyer's brand and wanted features."""
UTTERANCES = st.lists(st.lists(FRAGMENTS, max_size=8), min_size=1, max_size=25)


@settings(max_examples=200, deadline=None)
@given(profile=PROFILES, utterances=UTTERANCES, seed=st.integers(0, 99))
def test_buyer_never_accepts_above_budget_times_one_plus_slack(profile, utterances, seed):
    env = CarDealerEnv()
    env.reset(seed=seed, options={"buyer": profile})
    said = {"<brand>": profile["brand"], "<features>": " and ".join(profile["features"])}
    for fragments in utterances:
        utterance = " ".join(
            f"${profile['budget'] * piece:,.0f}"
            if isinstance(piece, float)
            else said.get(piece, piece)
            for piece in fragments
        )
        _, _, terminated, truncated, info = env.step(utterance)
        if terminated or truncated:
            break
    if info.get("decision", {}).get("outcome") == "accept":
        assert info["decision"]["price"] <= profile["budget"] * (1 + DATA.slack)


# -- rewards ----------------------------------------------------------------------------------


def _sale_and_no_sale(reward_mode):
    env = CarDealerEnv(reward_mode=reward_mode)
    env.reset(seed=0, options=buyer(strategy="impatient"))
    sale = env.step("Toyota SUV, $45,000. Deal?")
    env.reset(seed=0, options=buyer(strategy="impatient", budget=10000))
    for _ in range(4):
        no_sale = env.step("Toyota SUV, $45,000. Deal?")
    return sale, no_sale


def test_ratio_reward_is_price_over_mean_of_budget_and_msrp_and_zero_without_sale():
    sale, no_sale = _sale_and_no_sale("ratio")
    assert sale[1] == pytest.approx(45000 / 43000)
    assert no_sale[1] == 0.0 and no_sale[2]


def test_code_reward_charges_no_sale_with_lmrl_codes_formula():
    sale, no_sale = _sale_and_no_sale("code")
    assert sale[1] == pytest.approx(45000 / 43000)
    assert no_sale[1] == pytest.approx(-(10000 - 36000) / 36000)


def test_revenue_reward_is_price_in_thousands():
    sale, no_sale = _sale_and_no_sale("revenue")
    assert (sale[1], no_sale[1]) == (45.0, 0.0)


@pytest.mark.parametrize("reward_mode", ["ratio", "code", "revenue"])
def test_normalized_score_scores_the_ratio_reward_in_every_mode(reward_mode):
    sale, no_sale = _sale_and_no_sale(reward_mode)
    assert sale[4]["normalized_score"] == normalize("LMRL/CarDealer-v0", 45000 / 43000)
    assert no_sale[4]["normalized_score"] == 0.0


# -- reset, options and kwargs ----------------------------------------------------------------


def test_pinning_some_fields_leaves_the_others_as_the_seed_draws_them():
    env = CarDealerEnv()
    env.reset(seed=5)
    drawn = env.unwrapped._negotiation.profile
    env.reset(seed=5, options={"buyer": {"strategy": "impatient", "budget": 90000}})
    pinned = env.unwrapped._negotiation.profile
    assert (pinned.strategy, pinned.budget) == ("impatient", 90000.0)
    assert (pinned.personality, pinned.brand, pinned.car_type, pinned.features) == (
        drawn.personality,
        drawn.brand,
        drawn.car_type,
        drawn.features,
    )


def test_profiles_cover_every_value_of_every_field():
    rng = np.random.default_rng(0)
    profiles = [BuyerProfile.sample(rng, DATA) for _ in range(3000)]
    assert {p.personality for p in profiles} == set(DATA.personalities)
    assert {p.brand for p in profiles} == set(DATA.brands)
    assert {p.car_type for p in profiles} == set(DATA.types)
    assert {len(p.features) for p in profiles} == {1, 2, 3, 4}
    assert {p.budget for p in profiles} == set(DATA.budgets)
    shares = np.array([[p.strategy == s for s in DATA.strategies] for p in profiles]).mean(0)
    assert np.all(np.abs(shares - 1 / 3) < 0.04)


@pytest.mark.parametrize(
    "option",
    [
        "impatient",
        {"mood": "happy"},
        {"personality": "cheerful"},
        {"brand": "Ferrari"},
        {"type": "van"},
        {"features": "sunroof"},
        {"features": []},
        {"features": ["sunroof", "sunroof"]},
        {"features": ["jet pack"]},
        {"budget": 12345},
        {"strategy": "haggler"},
    ],
)
def test_bad_buyer_option_raises_value_error_naming_it(option):
    with pytest.raises(ValueError, match="buyer"):
        CarDealerEnv().reset(seed=0, options={"buyer": option})


@pytest.mark.parametrize(
    ("factory", "kwargs", "name"),
    [
        (CarDealerEnv, {"reward_mode": "profit"}, "reward_mode"),
        (CarDealerEnv, {"obs_mode": "all"}, "obs_mode"),
        (CarDealerDuoAECEnv, {"reward_mode": 1}, "reward_mode"),
        (CarDealerDuoParallelEnv, {"render_mode": "human"}, "render_mode"),
    ],
)
def test_bad_constructor_kwargs_raise_value_error_naming_the_kwarg(factory, kwargs, name):
    with pytest.raises(ValueError, match=name):
        factory(**kwargs)


@pytest.mark.parametrize(
    ("kwargs", "name"),
    [
        ({"deviation": "x"}, "deviation"),
        ({"deviation": 1.5}, "deviation"),
        ({"style_weights": (1, -1, 1)}, "style_weights"),
        ({"markup": (0.3, 0.1)}, "markup"),
        ({"cut": 0.1}, "cut"),
        ({"floor": None}, "floor"),
    ],
)
def test_bad_behaviour_kwargs_raise_value_error_naming_the_kwarg(kwargs, name):
    with pytest.raises(ValueError, match=name):
        CarDealerBehaviour(CarDealerEnv(), **kwargs)


def test_obs_mode_last_observes_only_the_buyers_latest_line():
    env = omnigym.make("LMRL/CarDealer-v0", obs_mode="last")
    env.reset(seed=1)
    observation, *_ = env.step("Hello!")
    assert observation.startswith("Buyer: ") and "\n" not in observation


# -- agents -----------------------------------------------------------------------------------


class _Sealed:
    """An env stand-in that fails on any use: the oracle must not need the environment."""

    def __getattr__(self, name):
        raise AssertionError(f"the oracle read env.{name}")


def test_oracle_plays_from_the_buyers_lines_alone():
    env = CarDealerEnv()
    oracle = CarDealerOracle(env=_Sealed())
    _, info = play(env, oracle, seed=3)
    assert info["success"]


@pytest.mark.parametrize(
    ("strategy", "wording"),
    [
        ("discount-seeker", "I can give you a discount to"),
        ("feature-seeker", "comes with a sunroof"),
        ("impatient", ". Deal?"),
    ],
)
def test_oracle_speaks_in_the_style_that_meets_the_buyers_strategy(strategy, wording):
    observation, info = play(CarDealerEnv(), CarDealerOracle(), 0, buyer(strategy=strategy))
    assert wording in lines(observation)[3]
    assert info["success"]


def test_oracle_undoes_the_discount_seekers_understatement():
    _, info = play(CarDealerEnv(), CarDealerOracle(), 0, buyer())
    # Budget $50,000 stated as $40,000; brand and discount: two thirds of the 10 % slack.
    assert info["decision"]["price"] == 53333.0
    assert info["turn"] == 2


def test_oracle_finds_a_refused_budget_by_the_buyers_reactions():
    _, info = play(CarDealerEnv(), CarDealerOracle(), 0, buyer(personality="rude", budget=30000))
    assert info["success"] and 30000 < info["decision"]["price"] <= 33000


def _mean_return(agent_name, episodes, first_seed=1000):
    env = omnigym.make("LMRL/CarDealer-v0")
    agent = omnigym.make_agent(agent_name, env=env, env_id="LMRL/CarDealer-v0")
    returns, scores = [], []
    for seed in range(first_seed, first_seed + episodes):
        _, info = play(env, agent, seed)
        returns.append(info["episode_return"])
        scores.append(info["normalized_score"])
    return float(np.mean(returns)), float(np.mean(scores))


def test_oracle_scores_at_least_90_and_sells_to_most_buyers():
    env = CarDealerEnv()
    oracle = CarDealerOracle()
    outcomes = [play(env, oracle, seed)[1] for seed in range(2000, 2300)]
    assert np.mean([info["normalized_score"] for info in outcomes]) >= 90.0
    assert np.mean([info["success"] for info in outcomes]) >= 0.9


def test_oracle_beats_behaviour_beats_random():
    oracle, behaviour, random = (
        _mean_return(name, 300) for name in ("oracle", "behavior", "random")
    )
    assert oracle[0] > behaviour[0] + 0.3 and behaviour[0] > random[0] + 0.2
    assert oracle[1] > behaviour[1] > random[1]


def test_behaviour_records_its_style_and_prices_in_parameters():
    env = CarDealerEnv()
    behaviour = CarDealerBehaviour(env)
    play(env, behaviour, seed=4)
    parameters = behaviour.parameters()
    assert parameters["policy"] == "car_dealer_seller_mixture"
    assert parameters["style"] in ("discount-giver", "feature-talker", "concise")
    assert 0.0 <= parameters["markup"] <= 0.2 and 0.05 <= parameters["cut"] <= 0.15


@pytest.mark.slow
def test_behaviour_dataset_success_rate_is_within_005_of_lmrls():
    from omnigym.envs.lmrl.datasets import generate

    records = list(generate("LMRL/CarDealer-v0", CarDealerBehaviour.default_episodes, 0))
    success = np.mean([record["success"] for record in records])
    assert abs(success - CarDealerBehaviour.lmrl_success) <= 0.05


def test_same_seed_gives_identical_oracle_episodes():
    first = play(CarDealerEnv(), CarDealerOracle(), 11)
    second = play(CarDealerEnv(), CarDealerOracle(), 11)
    assert first == second


# -- the duo ----------------------------------------------------------------------------------


def test_aec_form_passes_pettingzoo_api_test():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        api_test(omnigym.make_aec("LMRL/CarDealerDuo-v0"), num_cycles=120)


def test_parallel_form_passes_pettingzoo_parallel_api_test():
    parallel_api_test(CarDealerDuoParallelEnv(), num_cycles=120)


def test_aec_form_is_deterministic_under_seed():
    check_environment_deterministic(CarDealerDuoAECEnv(), CarDealerDuoAECEnv(), 60)


def test_parallel_form_is_deterministic_under_seed():
    def trace():
        env = CarDealerDuoParallelEnv()
        observations, _ = env.reset(seed=9)
        steps = [observations]
        for index in range(12):
            actions = {"seller": f"Toyota, ${90_000 - index:,}?", "buyer": ""}
            if index % 2:
                actions = {"seller": "", "buyer": "Hmm."}
            steps.append(env.step(actions))
        return steps

    assert trace() == trace()


def test_buyer_observes_its_profile_and_the_seller_does_not():
    env = CarDealerDuoAECEnv()
    env.reset(seed=0, options=buyer())
    assert env.observe("seller") == "Start"
    assert env.observe("buyer") == (
        "Buyer profile: personality polite; car Toyota SUV; features sunroof; budget $50,000; "
        "strategy discount-seeker\nStart"
    )
    for role in ("seller", "buyer"):
        assert env.observation_space(role).contains(env.observe(role))
        assert set(env.observation_space(role).character_set) == set(PRINTABLE)
        assert env.action_space(role).min_length == 0


def _duo_deal(seller_line, buyer_line="Deal! I'll take it."):
    env = CarDealerDuoAECEnv()
    env.reset(seed=0, options=buyer())
    env.step(seller_line)
    env.step(buyer_line)
    return env


def test_duo_deal_pays_the_seller_its_ratio_and_the_buyer_its_saving():
    env = _duo_deal("This Toyota SUV has a sunroof: $40,000.")
    assert env.terminations == {"seller": True, "buyer": True}
    assert env.rewards["seller"] == pytest.approx(40000 / 43000)
    assert env.rewards["buyer"] == pytest.approx(1 - 40000 / 50000)
    assert env.infos["buyer"]["decision"] == {"outcome": "accept", "price": 40000.0, "msrp": 36000}


def test_duo_buyer_gets_nothing_for_a_deal_missing_a_wanted_feature():
    env = _duo_deal("This Toyota SUV: $40,000.")
    assert env.rewards["buyer"] == 0.0 and env.rewards["seller"] > 0


def test_duo_buyer_rejection_ends_with_no_sale():
    env = _duo_deal("This Toyota SUV: $40,000.", "No deal, goodbye.")
    assert env.terminations["buyer"] and env.rewards == {"seller": 0.0, "buyer": 0.0}
    assert env.infos["seller"]["decision"]["outcome"] == "reject"


def test_duo_acceptance_without_an_offer_is_invalid_and_decides_nothing():
    env = _duo_deal("Welcome!")
    assert env.infos["buyer"]["invalid_action"] is True
    assert not env.terminations["buyer"] and env.agent_selection == "seller"


def test_duo_without_a_decision_truncates_both_at_50_lines():
    env = CarDealerDuoAECEnv()
    env.reset(seed=0)
    for _ in range(25):
        env.step("Lovely weather.")
        env.step("Indeed.")
    assert env.truncations == {"seller": True, "buyer": True}
    assert len(env.observe("seller").split("\n")) == 51


def test_parallel_reads_only_the_speaker_and_flags_the_other():
    env = omnigym.make("LMRL/CarDealerDuo-v0")
    _, infos = env.reset(seed=0, options=buyer())
    assert (infos["seller"]["to_move"], infos["buyer"]["to_move"]) == (True, False)
    observations, _, _, _, infos = env.step(
        {"seller": "Toyota SUV with a sunroof, $40,000.", "buyer": "Deal! I'll take it."}
    )
    assert infos["buyer"]["invalid_action"] is True
    assert env.agents == ["seller", "buyer"]
    assert "Deal" not in observations["seller"]
    _, rewards, terminations, _, infos = env.step({"seller": "", "buyer": "Deal! I'll take it."})
    assert infos["seller"]["invalid_action"] is False
    assert terminations == {"seller": True, "buyer": True} and env.agents == []
    assert rewards["buyer"] == pytest.approx(0.2)


def test_parallel_step_without_the_speakers_action_raises():
    env = CarDealerDuoParallelEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="seller"):
        env.step({"buyer": "Hi"})


def test_aec_non_str_action_raises_value_error_naming_the_text_space():
    env = CarDealerDuoAECEnv()
    env.reset(seed=0)
    with pytest.raises(ValueError, match="Text"):
        env.step(5)


def test_oracle_sells_as_the_duo_seller_reading_the_buyer_agents_lines():
    env = CarDealerDuoAECEnv()
    oracle = CarDealerOracle()
    env.reset(seed=0, options=buyer())
    opening = (
        "I'm looking for a new Toyota SUV. I'm hoping for a good discount. My budget is $40,000."
    )
    for agent in env.agent_iter(20):
        observation, _, terminated, truncated, info = env.last()
        if terminated or truncated:
            env.step(None)
        elif agent == "seller":
            env.step(oracle.act(observation, info))
        else:
            env.step(opening if info["turn"] == 0 else "Deal!")
    assert env.agents == []
    assert env.infos == {}
    # As against the scripted buyer: the $40,000 stated by a discount-seeker is $50,000.
    assert "discount to $53,333." in env.game.transcript
