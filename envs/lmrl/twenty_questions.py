"""LMRL-Gym's Twenty Questions with a rule-based answerer and its dataset behaviour.

Follows the Twenty Questions task of LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232):
the agent asks yes/no questions about a hidden object drawn from 158 objects in 17 categories
and pays −1 per question until it names the object, within 20 questions. The question rules,
parser, greedy questioner and behaviour mixture are shared with Guess My City in
``questions.py``; this module only reads the knowledge base (``data/objects.yaml``) and names
the classes.

Departures from LMRL-Gym: the answerer is rule-based over a knowledge base of 72 boolean
attributes per object (LMRL uses a fine-tuned language model; about 40 were planned, more
were needed to give every object a unique, truthful attribute vector); in the Nature
category Sea and Lake are replaced by Flower and Desert; the guess rule matches the end of the
question instead of NLTK noun tags; running out of questions is ``terminated``.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import numpy as np
import yaml

from omnigym.envs.lmrl.questions import (
    Attribute,
    KnowledgeBase,
    QuestionBehaviour,
    QuestionGameEnv,
    indefinite_article,
)

OBJECTS_PATH = Path(__file__).parent / "data" / "objects.yaml"
GUESS_TEMPLATES = ("Is it {name}?", "Is the object {name}?", "Could it be {name}?")


def _spoken(name: str, article: str) -> str:
    words = [w if w.isupper() else w.lower() for w in name.split()]
    return " ".join([article, *words]) if article else " ".join(words)


@cache
def load_objects(path: Path = OBJECTS_PATH) -> KnowledgeBase:
    """The objects knowledge base (cached per path)."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    attributes = tuple(
        Attribute(
            name=name,
            questions=tuple(spec["questions"]),
            keywords=tuple(spec["keywords"]),
            negative=tuple(spec.get("negative", ())),
        )
        for name, spec in data["attributes"].items()
    )
    column = {attribute.name: i for i, attribute in enumerate(attributes)}
    items, categories, variants, guesses, rows = [], [], [], [], []
    for category, spec in data["categories"].items():
        for name, entry in spec["objects"].items():
            true = set(spec["attributes"]) | set(entry.get("also", ()))
            true -= set(entry.get("except", ()))
            unknown = sorted(true - set(column))
            if unknown:
                raise ValueError(f"{path}: {name} has unknown attributes {unknown}")
            row = np.zeros(len(attributes), dtype=bool)
            row[[column[a] for a in true]] = True
            article = entry.get("article", indefinite_article(name))
            items.append(name)
            categories.append(category)
            variants.append((name, *entry.get("variants", ())))
            guesses.append(tuple(t.format(name=_spoken(name, article)) for t in GUESS_TEMPLATES))
            rows.append(row)
    return KnowledgeBase(
        kind="object",
        items=tuple(items),
        categories=tuple(categories),
        variants=tuple(variants),
        guesses=tuple(guesses),
        attributes=attributes,
        values=np.array(rows),
    )


class TwentyQuestionsEnv(QuestionGameEnv):
    """Name the hidden object by asking yes/no questions, in at most 20 questions.

    ## Description
    LMRL-Gym's Twenty Questions (Abdulhai et al., ICML 2025). A hidden object is drawn from 158
    objects in 17 categories (``data/objects.yaml``: Sports, Animals, Fruits, Vehicles, Clothes,
    Electronics, Musical Instruments, Furniture, Office Supplies, Vegetables, Art, Kitchen
    Tools, Nature, Toys, Jewelry, Garden Supplies, Tools). Each question is answered "Yes." or
    "No." from the object's 72 boolean attributes, found through keyword phrases and their
    synonyms ("Is it made of metal?", "Is it bigger than a breadbox?", "Is it not alive?", "Is
    it a kind of fruit?"). A question whose words end with one of the object's names ("Is it an
    apple?", "Is the object a pair of scissors?", "Is it a kind of dog?") is a guess.

    ## Action Space
    ``Text(max_length=256)``, printable. A question is invalid if it is empty, longer than 40
    words, or does not start with Is, Does, Can, Do, Are or Could: it is answered "No.", costs
    −1 and sets ``info["invalid_action"]``. A valid question that names no attribute and no
    object is answered "No." with ``info["unparsed"] = True``. A non-``str`` action raises
    ``ValueError``.

    ## Observation Space
    ``Text(max_length=8192)``: the transcript ``Questions:`` then, per question, the question
    line and the answer line (``obs_mode="transcript"``), or only the latest answer
    (``obs_mode="last"``).

    ## Rewards
    −1 for every question that is not the correct guess, 0 for the correct guess: returns in
    [−20, 0].

    ## Starting State
    An object drawn uniformly from the 158, or ``options={"object": name}`` (a name or variant).

    ## Episode End
    Terminated on the correct guess (answered "Yes.", ``info["success"] = True``) or after 20
    questions (the game is lost).

    ## Arguments
    ``list_questions`` (``bool``: every ``info`` then lists, as ``legal_actions``, the 621
    phrasings of the knowledge base, which the behaviour policy asks and the parser answers,
    so that an agent can decode over them), ``obs_mode`` (``"transcript"`` or ``"last"``),
    ``render_mode`` (``None`` or ``"ansi"``).
    """

    observation_max_length = 8192
    score_id = "LMRL/TwentyQuestions-v0"
    evaluation_episodes = 158
    knowledge = staticmethod(load_objects)


class TwentyQuestionsBehaviour(QuestionBehaviour):
    """The dataset behaviour of Twenty Questions: LMRL's mixture of questioners.

    Weights and noise are tuned so that the dataset lands on LMRL's statistics: over the
    default 10,000 episodes (seed 0) success 0.32 and mean return −17.4 (LMRL: 0.31, −17.3).
    """

    knowledge = staticmethod(load_objects)
    policy = "twenty_questions_questioner_mixture"
    default_episodes = 10_000
    lmrl_success = 0.31
    style_weights = {"random": 0.4, "greedy": 0.3, "early": 0.3}
    epsilon = 0.5
    guess_at = 3
    early_questions = 2
    misread_probability = 0.09
