"""The seeded synthetic world of ``Methods/ProxyRAG-v0``: entities, facts, passages, questions.

Everything that varies lives in ``world.yaml`` beside this module (entity kinds, relations with
their paraphrase, question and roadmap templates, two-hop chains, distractor modifiers and
sizes); this module only draws from it. One ``seed`` fixes the whole world:

- **entities**: invented names (a first name and a surname for people, one-word place names,
  ``<Name> Systems`` companies, ``<Name> Institute`` universities), every name word used once,
  so no name is part of another;
- **facts**: each person was born in a city, works for a company and studied at a university;
  each company is headquartered in a city and was founded by a person; each university has its
  campus in a city; each city is in a country; each country has a capital (one of its cities).
  The first ``known`` share of each kind (the popular ones) have their facts in the reader's
  memory;
- **passages** (about 3,000): each fact in one wording, half of them also in a second; plus,
  for each fact on average, a distractor about someone or something next to its subject ("the
  sister of Anna Kalovos was born in Ranvel"), written in the plain wording;
- **questions**: 6,000 training and 1,000 test questions, 45 % of them two-hop bridge questions
  ("In which country was Anna Kalovos born?"); test questions ask about facts (a two-hop one:
  its first fact) held out from the training questions.

``ood=True`` writes the same facts and questions with the held-out templates (``*_ood`` in the
YAML): the same world in wording the proxy never saw.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import yaml

SPLITS = ("train", "test")
STOPWORDS = frozenset(
    ["a", "an", "and", "are", "as", "at", "be", "by", "did", "do", "does", "for", "from", "has",
     "in", "is", "it", "its", "of", "on", "that", "the", "to", "was", "what", "where", "which",
     "who", "with"]
)  # fmt: skip
KINDS = ("person", "city", "country", "company", "university")


def words(text: str) -> list[str]:
    """The lower-case words of ``text`` that are not stopwords, in order (what BM25 indexes
    and what the rule reader counts as overlap)."""
    return [word for word in re.findall(r"[a-z0-9]+", text.lower()) if word not in STOPWORDS]


@functools.lru_cache(maxsize=200_000)
def content_words(text: str) -> frozenset[str]:
    """The set of :func:`words` of ``text``."""
    return frozenset(words(text))


@functools.cache
def world_rules() -> dict[str, Any]:
    """The contents of ``world.yaml``."""
    text = resources.files(__package__).joinpath("world.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


@dataclass(frozen=True)
class Question:
    """One question: its text, the subject it asks about, the relation(s) it follows (one, or
    two for a bridge question), the bridge entity (two-hop) and the gold answer. ``known``:
    the reader's memory holds every fact the question needs."""

    text: str
    subject: str
    relations: tuple[str, ...]
    answer: str
    bridge: str | None
    known: bool

    @property
    def hops(self) -> int:
        return len(self.relations)


@dataclass(frozen=True)
class World:
    """A drawn world (see the module docstring). ``facts`` maps (subject, relation) to the
    object; ``known`` holds the (subject, relation) pairs the reader remembers; ``passages`` is
    the retrieval corpus; ``questions`` maps a split to its questions; ``names`` lists every
    entity name."""

    seed: int
    ood: bool
    facts: dict[tuple[str, str], str]
    known: frozenset[tuple[str, str]]
    passages: tuple[str, ...]
    questions: dict[str, tuple[Question, ...]]
    names: tuple[str, ...]

    def plan(self, question: Question) -> list[str]:
        """The roadmap of ``question``: its sub-questions, the second of a bridge question
        with ``#1`` standing for the first one's answer."""
        rules = world_rules()["relations"]
        if question.hops == 1:
            return [question.text]
        first, second = question.relations
        return [
            rules[first]["plan"].format(s=question.subject),
            rules[second]["plan"].format(s="#1"),
        ]

    def sub_question(self, relation: str, subject: str) -> str:
        """The roadmap's wording of ``relation`` asked about ``subject``."""
        return world_rules()["relations"][relation]["plan"].format(s=subject)

    @functools.cached_property
    def name_pattern(self) -> re.Pattern:
        """Finds entity names in a text (longest names first)."""
        names = sorted(self.names, key=len, reverse=True)
        return re.compile(r"\b(" + "|".join(re.escape(name) for name in names) + r")\b")

    def mentions(self, text: str) -> tuple[str, ...]:
        """The entity names in ``text``, in order of appearance."""
        found = self._mentions.get(text)
        if found is None:
            found = self._mentions[text] = tuple(self.name_pattern.findall(text))
        return found

    @functools.cached_property
    def _mentions(self) -> dict[str, tuple[str, ...]]:
        return {}


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def _names(rng: np.random.Generator, rules: dict[str, Any]) -> dict[str, list[str]]:
    """Every entity's name; each invented word is used once."""
    syllables = rules["syllables"]
    counts = {kind: rules["entities"][kind]["count"] for kind in KINDS}
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < sum(counts.values()):
        size = 2 if rng.random() < 0.6 else 3
        word = "".join(syllables[i] for i in rng.integers(len(syllables), size=size)).capitalize()
        if word not in seen:
            seen.add(word)
            words.append(word)
    stems = iter(words)
    first = rules["first_names"]
    suffixes, forms = rules["company_suffixes"], rules["university_forms"]
    return {
        "person": [
            f"{first[rng.integers(len(first))]} {next(stems)}" for _ in range(counts["person"])
        ],
        "city": [next(stems) for _ in range(counts["city"])],
        "country": [next(stems) for _ in range(counts["country"])],
        "company": [
            f"{next(stems)} {suffixes[rng.integers(len(suffixes))]}"
            for _ in range(counts["company"])
        ],
        "university": [
            forms[rng.integers(len(forms))].format(next(stems)) for _ in range(counts["university"])
        ],
    }


def _facts(rng: np.random.Generator, names: dict[str, list[str]]) -> dict[tuple[str, str], str]:
    """Each entity's facts (module docstring); every country gets at least one city, and its
    capital is one of its cities."""

    def pick(kind: str) -> str:
        return names[kind][rng.integers(len(names[kind]))]

    facts: dict[tuple[str, str], str] = {}
    countries = names["country"]
    for index, city in enumerate(names["city"]):
        country = countries[index] if index < len(countries) else pick("country")
        facts[(city, "in_country")] = country
    for country in countries:
        cities = [city for city in names["city"] if facts[(city, "in_country")] == country]
        facts[(country, "capital")] = cities[rng.integers(len(cities))]
    for person in names["person"]:
        facts[(person, "born_in")] = pick("city")
        facts[(person, "works_for")] = pick("company")
        facts[(person, "studied_at")] = pick("university")
    for company in names["company"]:
        facts[(company, "headquartered_in")] = pick("city")
        facts[(company, "founded_by")] = pick("person")
    for university in names["university"]:
        facts[(university, "campus_in")] = pick("city")
    return facts


def _known(names: dict[str, list[str]], facts: dict, rules: dict) -> frozenset:
    """The facts whose subject is among the first ``known`` share of its kind."""
    popular = set()
    for kind in KINDS:
        count = round(rules["entities"][kind]["known"] * len(names[kind]))
        popular.update(names[kind][:count])
    return frozenset(key for key in facts if key[0] in popular)


def _passages(
    rng: np.random.Generator, facts: dict, kinds: dict[str, str], rules: dict, ood: bool
) -> list[str]:
    """Each fact in one or two wordings, and the distractors (module docstring), shuffled."""
    relations, modifiers = rules["relations"], rules["modifiers"]
    sizes = rules["corpus"]
    suffix = "_ood" if ood else ""
    passages = []
    for (subject, relation), obj in facts.items():
        templates = relations[relation]["passages" + suffix]
        order = rng.permutation(len(templates))
        copies = 2 if rng.random() < sizes["paraphrase"] and len(templates) > 1 else 1
        for index in order[:copies]:
            passages.append(_capitalised(templates[index].format(s=subject, o=obj)))
        # Distractors: a Poisson count around the mean, each about a neighbour of the subject
        # with another object of the same kind, in the relation's plain (first) wording.
        plain = relations[relation]["passages" + suffix][0]
        neighbours = modifiers[kinds[subject] + suffix]
        objects = [name for name, kind in kinds.items() if kind == kinds[obj] and name != obj]
        for _ in range(rng.poisson(sizes["distractors"])):
            neighbour = neighbours[rng.integers(len(neighbours))].format(s=subject)
            other = objects[rng.integers(len(objects))]
            passages.append(_capitalised(plain.format(s=neighbour, o=other)))
    return [passages[i] for i in rng.permutation(len(passages))]


def _questions(
    rng: np.random.Generator, facts: dict, known: frozenset, rules: dict, ood: bool
) -> dict[str, tuple[Question, ...]]:
    """The training and test questions; a test question asks about a held-out fact."""
    relations, chains = rules["relations"], rules["chains"]
    suffix = "_ood" if ood else ""
    single = sorted(relations)
    by_relation: dict[str, dict[str, list[str]]] = {split: {} for split in SPLITS}
    for relation in single:
        subjects = sorted(subject for subject, name in facts if name == relation)
        order = rng.permutation(len(subjects))
        cut = max(1, round(rules["corpus"]["test_facts"] * len(subjects)))
        by_relation["test"][relation] = [subjects[i] for i in sorted(order[:cut])]
        by_relation["train"][relation] = [subjects[i] for i in sorted(order[cut:])]
    questions = {}
    for split in SPLITS:
        drawn = []
        for _ in range(rules["questions"][split]):
            two_hop = rng.random() < rules["questions"]["two_hop"]
            chain = chains[rng.integers(len(chains))] if two_hop else None
            path = tuple(chain["relations"]) if chain else (single[rng.integers(len(single))],)
            subjects = by_relation[split][path[0]]
            subject = subjects[rng.integers(len(subjects))]
            templates = (chain or relations[path[0]])["questions" + suffix]
            # One uniform draw per template choice, so that the ood world (other template
            # counts) asks the same questions.
            template = templates[int(rng.random() * len(templates))]
            first = facts[(subject, path[0])]
            answer = facts[(first, path[1])] if chain else first
            needed = [(subject, path[0])] + ([(first, path[1])] if chain else [])
            drawn.append(
                Question(
                    text=template.format(s=subject),
                    subject=subject,
                    relations=path,
                    answer=answer,
                    bridge=first if chain else None,
                    known=all(key in known for key in needed),
                )
            )
        questions[split] = tuple(drawn)
    return questions


@functools.lru_cache(maxsize=4)
def build_world(seed: int = 0, ood: bool = False) -> World:
    """The world of ``seed`` (cached per process); ``ood`` words it with the held-out
    templates. Structure (entities, facts, questions asked) and wording draw from separate
    streams, so both wordings hold the same world."""
    rules = world_rules()
    structure, wording = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    names = _names(structure, rules)
    facts = _facts(structure, names)
    known = _known(names, facts, rules)
    kinds = {name: kind for kind in KINDS for name in names[kind]}
    questions = _questions(structure, facts, known, rules, ood)
    passages = _passages(wording, facts, kinds, rules, ood)
    return World(
        seed=seed,
        ood=ood,
        facts=facts,
        known=known,
        passages=tuple(passages),
        questions=questions,
        names=tuple(kinds),
    )
