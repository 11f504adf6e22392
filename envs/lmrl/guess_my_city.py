"""LMRL-Gym's Guess My City with a rule-based answerer and its dataset behaviour.

Follows the Guess My City task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232): the
agent asks about a hidden city, one of 100 of the world's most populous, and pays −1 per
question until it names the city, within 20 questions. Unlike Twenty Questions it may also ask
open questions ("What is the weather like?"). The question rules, parser, greedy questioner and
behaviour mixture are shared with Twenty Questions in ``questions.py``; this module turns the city
knowledge base (``data/cities.yaml``) into yes/no attributes and templated open answers.

Yes/no attributes come from every field: continent, region, country, hemispheres, coast, river,
lake, climate band, population band, languages, national capital, landmark, food and sport
tags and a few facts (Olympic host, island, altitude, Mediterranean, Middle East). Open
questions are routed by keyword (food, weather, water, language, landmark, sport, population,
location, country, name) to answers filled from the city's fields, which never name the city
or its country.

Departures from LMRL-Gym: rule-based answers instead of a fine-tuned language model; the list
includes the first city (LMRL's loader skips it); the oracle asks yes/no questions only;
running out of questions is ``terminated``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from omnigym.envs.lmrl.questions import (
    Attribute,
    KnowledgeBase,
    OpenRoute,
    QuestionBehaviour,
    QuestionGameEnv,
    indefinite_article,
    join_words,
)

CITIES_PATH = Path(__file__).parent / "data" / "cities.yaml"
GUESS_TEMPLATES = ("Is it {name}?", "Is the city {name}?", "Could it be {name}?")
LANGUAGE_CUES = ("speak", "spoken", "speaking", "speaker", "language")
NUMBER_WORDS = {5: "five", 10: "ten", 20: "twenty"}


def _bare(name: str) -> str:
    return name[4:] if name.startswith("the ") else name


def country_names(path: Path = CITIES_PATH) -> dict[str, tuple[str, ...]]:
    """Every name of each country (as it may not appear in an open answer)."""
    countries = _read(path)["countries"]
    return {c: (_bare(c), *spec.get("names", ())) for c, spec in countries.items()}


@cache
def _read(path: Path) -> dict[str, Any]:
    return yaml.safe_load(Path(path).read_text(encoding="utf-8"))


def _values_of(city: dict[str, Any], regions: dict[str, Any]) -> dict[str, Any]:
    """The city's fields plus the derived ones: continent and hemispheres."""
    return {
        **city,
        "continent": regions[city["region"]]["continent"],
        "north": city["lat"] > 0,
        "west": city["lon"] < 0,
    }


def _attributes(data: dict[str, Any]) -> list[tuple[Attribute, Any]]:
    """Every yes/no attribute with its test ``f(fields) -> bool``."""
    templates = data["attributes"]
    found: list[tuple[Attribute, Any]] = []

    def add(name: str, question: str, keywords, test, negative=()) -> None:
        attribute = Attribute(name, (question,), tuple(keywords), tuple(negative))
        found.append((attribute, test))

    for group, field in (("continents", "continent"), ("regions", "region")):
        for value, spec in data[group].items():
            if group == "regions" and value in data["continents"]:
                continue  # the region is the whole continent
            add(
                f"{field}: {value}",
                templates[field]["question"].format(name=value),
                [value, *spec["keywords"]],
                lambda f, field=field, value=value: f[field] == value,
            )
    for value, spec in data["countries"].items():
        add(
            f"country: {_bare(value)}",
            templates["country"]["question"].format(name=value),
            [_bare(value), *spec.get("names", ()), *spec["keywords"]],
            lambda f, value=value: f["country"] == value,
        )
    for value, spec in data["languages"].items():
        words = [value.lower(), *(k for k in spec["keywords"] if " " not in k)]
        keywords = [*words, *(f"{w} {cue}" for w in words for cue in LANGUAGE_CUES)]
        add(
            f"language: {value}",
            templates["language"]["question"].format(name=value),
            [*keywords, *(k for k in spec["keywords"] if " " in k)],
            lambda f, value=value: value in f["languages"],
        )
    for value, spec in data["climates"].items():
        question = templates["climate"]["question"]
        add(
            f"climate: {value}",
            question.format(name=value, article=indefinite_article(value)),
            [f"{value} climate", *spec["keywords"]],
            lambda f, value=value: f["climate"] == value,
        )
    population = templates["population"]
    for threshold in data["population_thresholds"]:
        names = {"name": threshold, "word": NUMBER_WORDS[threshold]}
        add(
            f"population over {threshold} million",
            population["question"].format(**names),
            [k.format(**names) for k in population["keywords"]],
            lambda f, threshold=threshold: f["population"] > threshold,
            [k.format(**names) for k in population["negative"]],
        )
    for field in ("north", "west", "coast", "river", "lake", "capital"):
        spec = templates[field]
        add(
            field,
            spec["question"],
            spec["keywords"],
            lambda f, field=field: bool(f.get(field)),
            spec.get("negative", ()),
        )
    for group in ("landmarks", "dishes", "sports", "facts"):
        for value, spec in data[group].items():
            add(
                f"{group}: {value}",
                spec["question"],
                [value, *spec["keywords"]],
                lambda f, group=group, value=value: value in f.get(group, ()),
            )
    return found


def _open_answers(fields: dict[str, Any], data: dict[str, Any]) -> dict[str, str]:
    """The values that fill the open-answer templates of one city."""
    parts = data["answer_parts"]
    water = [
        parts[kind].format(**{kind: fields[kind]})
        for kind in ("coast", "river", "lake")
        if fields.get(kind)
    ]
    climate = data["climates"][fields["climate"]]["description"]
    if fields["climate"] != "tropical":
        climate += " " + parts["north_seasons" if fields["north"] else "south_seasons"]
    bands = data["population_thresholds"]
    above = [t for t in bands if fields["population"] > t]
    if not above:
        population = parts["population_below"].format(low=bands[0])
    elif above[-1] == bands[-1]:
        population = parts["population_above"].format(high=bands[-1])
    else:
        population = parts["population_between"].format(
            low=above[-1], high=bands[bands.index(above[-1]) + 1]
        )
    return {
        "cuisine": fields["cuisine"],
        "climate": climate,
        "water": " ".join(w[0].upper() + w[1:] for w in water) or parts["inland"],
        "languages": join_words(fields["languages"]),
        "landmark": fields["landmark"],
        "sports": join_words(fields["sports"]),
        "population": population,
        "region": fields["region"],
        "hemisphere": "northern" if fields["north"] else "southern",
    }


@cache
def load_cities(path: Path = CITIES_PATH) -> KnowledgeBase:
    """The cities knowledge base (cached per path)."""
    data = _read(path)
    cities = [(name, _values_of(city, data["regions"])) for name, city in data["cities"].items()]
    found = _attributes(data)
    values = np.array([[bool(test(fields)) for _, test in found] for _, fields in cities])
    fills = [_open_answers(fields, data) for _, fields in cities]
    routes = tuple(
        OpenRoute(
            name=route,
            questions=tuple(spec["questions"]),
            keywords=tuple(spec["keywords"]),
            answers=tuple(spec["answer"].format(**fill) for fill in fills),
        )
        for route, spec in data["open_questions"].items()
    )
    return KnowledgeBase(
        kind="city",
        items=tuple(name for name, _ in cities),
        categories=tuple(fields["country"] for _, fields in cities),
        variants=tuple((name, *fields.get("variants", ())) for name, fields in cities),
        guesses=tuple(tuple(t.format(name=name) for t in GUESS_TEMPLATES) for name, _ in cities),
        attributes=tuple(attribute for attribute, _ in found),
        values=values,
        routes=routes,
    )


class GuessMyCityEnv(QuestionGameEnv):
    """Name the hidden city by asking open or yes/no questions, in at most 20 questions.

    ## Description
    LMRL-Gym's Guess My City (Abdulhai et al., ICML 2025). A hidden city is drawn from 100 of
    the world's most populous (``data/cities.yaml``). Yes/no questions are answered "Yes." or
    "No." from the city's attributes ("Is it in Asia?", "Do people there speak Spanish?", "Is
    it on the coast?", "Does it have more than 10 million people?", "Is it famous for a
    tower?"); open questions are routed by keyword to a templated answer about its food,
    weather, water, languages, landmarks, sports, size or location, which never names the city
    or its country. A question that ends with one of the city's names ("Is it Bombay?", "Is the
    city Mumbai?") is a guess.

    ## Action Space
    ``Text(max_length=256)``, printable. A question is invalid if it is empty, longer than 40
    words, or starts with none of Is, Does, Can, Do, Are, Could (yes/no) and What, Which,
    Where, How, Who, Why, When, Tell, Describe, Name, List, Explain (open): it is answered
    "No.", costs −1 and sets ``info["invalid_action"]``. A valid question that matches no rule
    is answered "No." (an open one "I don't know.") with ``info["unparsed"] = True``. A
    non-``str`` action raises ``ValueError``.

    ## Observation Space
    ``Text(max_length=16384)``: the transcript ``Questions:`` then, per question, the question
    line and the answer line (``obs_mode="transcript"``), or only the latest answer
    (``obs_mode="last"``).

    ## Rewards
    −1 for every question that is not the correct guess, 0 for the correct guess: returns in
    [−20, 0].

    ## Starting State
    A city drawn uniformly from the 100, or ``options={"city": name}`` (a name or variant).

    ## Episode End
    Terminated on the correct guess (answered "Yes.", ``info["success"] = True``) or after 20
    questions (the game is lost).

    ## Arguments
    ``list_questions`` (``bool``: every ``info`` then lists, as ``legal_actions``, the 512
    phrasings of the knowledge base, which the behaviour policy asks and the parser answers,
    so that an agent can decode over them), ``obs_mode`` (``"transcript"`` or ``"last"``),
    ``render_mode`` (``None`` or ``"ansi"``).
    """

    observation_max_length = 16384
    score_id = "LMRL/GuessMyCity-v0"
    evaluation_episodes = 100
    knowledge = staticmethod(load_cities)


class GuessMyCityBehaviour(QuestionBehaviour):
    """The dataset behaviour of Guess My City: LMRL's mixture with open questions.

    Weights and noise are tuned so that the dataset's success rate lands near LMRL's: over the
    default 10,000 episodes (seed 0) success 0.54 and mean return −14.5 (LMRL: 0.53, −18.8; its
    questioners rarely guessed before the last few questions, ours guess once sure).
    """

    knowledge = staticmethod(load_cities)
    policy = "guess_my_city_questioner_mixture"
    default_episodes = 10_000
    lmrl_success = 0.53
    style_weights = {"random": 0.4, "greedy": 0.3, "early": 0.3}
    epsilon = 0.5
    guess_at = 3
    early_questions = 2
    misread_probability = 0.15
    open_probability = 0.125
