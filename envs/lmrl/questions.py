"""The shared machinery of LMRL-Gym's two question games, Twenty Questions and Guess My City.

In LMRL-Gym (Abdulhai et al., ICML 2025; arXiv 2311.18232) the agent asks questions about a
hidden object or city and a language model fine-tuned on GPT-3.5 conversations answers them;
reward is −1 per question until the agent names the target (0 for that question), within 20
questions. Here a rule-based simulator answers from a knowledge base (``data/objects.yaml``,
``data/cities.yaml``), and everything the two games share is written once in this module:

- **Question rules** (LMRL's): a question is invalid (answered "No.", flagged, still −1) if it is
  empty, longer than 40 words, or does not start with Is, Does, Can, Do, Are or Could; a game
  with open questions (Guess My City) also accepts What, Which, Where, How, Who, Why, When,
  Tell, Describe, Name, List and Explain, and "Can you tell ...".
- **Parsing** (:class:`QuestionParser`): words are lower-cased and plurals folded onto the
  knowledge base's vocabulary. A question is a *guess* when, after its last "is/are/be", it
  ends with a name variant of an item and no relation word (a preposition such as "in" or
  "of", or "made", "used", ...) stands between, so "Is it a kind of dog?" names the dog and "Is
  it made of paper?" does not (LMRL finds the noun with NLTK part-of-speech tags instead).
  Otherwise keyword phrases from the knowledge base name attributes: a phrase matches when all
  its words occur, longer phrases first; several attributes are joined by "and" (or by "or"
  when the question says "or"), and "not" ("Is it not ...", "Does it not ...") flips the
  answer. A leading contraction is a confirmation, not a negation: "Isn't it alive?" is "Is it
  alive?". A question that names nothing is answered "No." (an open one "I don't know.") with
  ``info["unparsed"] = True``.
- **The greedy questioner** (:class:`GreedyQuestioner`): asks the yes/no question whose answer
  has the highest entropy over the items still consistent with the answers so far, and guesses
  once at most three remain (guessing then costs no more in expectation than splitting
  further); its choices are memoised per candidate set, so each process computes the tree once.
  The oracle of both games (:mod:`omnigym.agents.lmrl.questions`) plays it as it is; the
  behaviour policy with noise.
- **The behaviour policy** (:class:`QuestionBehaviour`): LMRL's dataset mixture of
  random-attribute, noisy greedy information-gain and early-guessing questioners,
  plus open questions where the game has them.

Departures from LMRL-Gym: rule-based answers instead of a language model; the question budget
running out is ``terminated`` (the game is lost), not ``truncated``; a correct guess is
answered "Yes." and ends the episode.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar

import numpy as np

from omnigym.envs.lmrl.text_task import ScriptedBehaviour, TextTaskEnv, Turn

OPENING = "Questions:"
YES, NO, DONT_KNOW = "Yes.", "No.", "I don't know."
MAX_QUESTIONS = 20
MAX_WORDS = 40


def _word_set(text: str) -> frozenset[str]:
    return frozenset(text.split())


YES_NO_STARTS = _word_set("is does can do are could")
OPEN_STARTS = _word_set("what which where how who why when tell describe name list explain")
OPEN_VERBS = _word_set("tell describe explain know say give name list")
"""After "Can/Could/Do you", these make a question open ("Can you tell me about the food?")."""

STOPWORDS = _word_set(
    "a an the of in on at to for with from than into onto by as it its is are be do does can "
    "could you your there they them their this that these those and or like usually"
)
"""Words dropped from keyword phrases: they name no attribute."""
GENERIC = _word_set("object thing item kind type sort answer word city place something")
"""Words that stand for the target itself ("Is the object a ...", "Is the city ...")."""
FILLERS = _word_set("please maybe perhaps possibly then exactly right now too also")
COPULAS = _word_set("is are am be was were")
RELATIONS = _word_set(
    "in on at by for from with without into onto inside outside near under over than like "
    "about to as around through behind above below between beside of made used found worn "
    "eaten part use uses have has contain contains"
)
"""Words that, between "is" and a name, make the name something other than the guess."""
NAMING_OF = _word_set("kind type sort piece pair set pack bottle form variety species thinking")
"""Words after which "of" still names the guess ("a kind of dog")."""
NEGATORS = _word_set("not never no nor neither")
IRREGULAR_PLURALS = {
    "people": "person",
    "children": "child",
    "feet": "foot",
    "teeth": "tooth",
    "knives": "knife",
    "leaves": "leaf",
    "men": "man",
    "women": "woman",
    "mice": "mouse",
    "geese": "goose",
    "shelves": "shelf",
    "wolves": "wolf",
}

_GRAMMAR = STOPWORDS | COPULAS | RELATIONS | NEGATORS | FILLERS
"""Words never folded onto the vocabulary ("its" is not the plural of "it")."""
_WORD = re.compile(r"[a-z0-9]+")
_VOWELS = frozenset("aeiou")


def words(text: str) -> list[str]:
    """Lower-case word tokens of ``text``; "n't" becomes "not" except on the first word."""
    tokens: list[str] = []
    for position, raw in enumerate(text.lower().replace("\u2019", "'").split()):
        negative = "n't" in raw
        if negative:
            raw = raw.replace("can't", "can").replace("won't", "will").replace("n't", "")
        tokens.extend(_WORD.findall(raw.replace("'s", " is").replace("'re", " are")))
        if negative and position > 0:
            tokens.append("not")
    return tokens


def plurals(word: str) -> set[str]:
    """The regular plural (and third-person) forms of ``word``."""
    forms = {word + "s"}
    if word.endswith("y") and len(word) > 1 and word[-2] not in _VOWELS:
        forms.add(word[:-1] + "ies")
    if word.endswith(("s", "x", "z", "ch", "sh", "o")):
        forms.add(word + "es")
    if word.endswith("f"):
        forms.add(word[:-1] + "ves")
    if word.endswith("fe"):
        forms.add(word[:-2] + "ves")
    return forms


def indefinite_article(noun: str) -> str:
    return "an" if noun[:1].lower() in _VOWELS else "a"


# -- knowledge bases ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Attribute:
    """A yes/no property: the questions that ask about it and the phrases that name it."""

    name: str
    questions: tuple[str, ...]
    keywords: tuple[str, ...]
    negative: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpenRoute:
    """An open-question topic: its keywords, phrasings, and each item's answer."""

    name: str
    questions: tuple[str, ...]
    keywords: tuple[str, ...]
    answers: tuple[str, ...]


@dataclass(frozen=True, eq=False)
class KnowledgeBase:
    """Items with name variants and a boolean attribute matrix, as read from a data file.

    ``kind`` is the item's word ("object", "city"), also the reset option that pins the target;
    ``guesses[i]`` are questions that name item ``i`` (the first is the oracle's); ``values`` is
    ``bool[items, attributes]``; ``routes`` are the open-question topics (none for 20Q).
    """

    kind: str
    items: tuple[str, ...]
    categories: tuple[str, ...]
    variants: tuple[tuple[str, ...], ...]
    guesses: tuple[tuple[str, ...], ...]
    attributes: tuple[Attribute, ...]
    values: np.ndarray
    routes: tuple[OpenRoute, ...] = ()
    index: dict[str, int] = field(init=False)

    def __post_init__(self) -> None:
        self.values.setflags(write=False)
        names = {name.lower(): i for i, names in enumerate(self.variants) for name in names}
        object.__setattr__(self, "index", names)

    def lookup(self, name: Any) -> int | None:
        """The item named ``name`` (its name or a variant, any case), or None."""
        return self.index.get(name.lower()) if isinstance(name, str) else None


# -- parsing -----------------------------------------------------------------------------------

INVALID, GUESS, ATTRIBUTES, OPEN, UNPARSED = "invalid", "guess", "attributes", "open", "unparsed"


@dataclass(frozen=True)
class Parse:
    """What a question asks: ``kind`` is one of invalid, guess, attributes, open, unparsed."""

    kind: str
    item: int = -1
    terms: tuple[tuple[int, bool], ...] = ()
    any_of: bool = False
    negated: bool = False
    route: int = -1
    open_form: bool = False

    def answer(self, row: np.ndarray) -> bool:
        """The yes/no answer of an attribute question for the item whose values are ``row``."""
        truths = [bool(row[attribute]) == polarity for attribute, polarity in self.terms]
        return (any(truths) if self.any_of else all(truths)) != self.negated


_INVALID = Parse(INVALID)


@dataclass(frozen=True)
class _Phrase:
    words: frozenset[str]
    target: int
    polarity: bool


class QuestionParser:
    """Turns a question into a :class:`Parse` against one knowledge base (see module doc).

    Parses are cached per question text, so a repeated question costs a dictionary look-up.
    """

    def __init__(self, kb: KnowledgeBase) -> None:
        self.kb = kb
        self.starts = YES_NO_STARTS | (OPEN_STARTS if kb.routes else frozenset())
        phrases = [p for a in kb.attributes for p in (*a.keywords, *a.negative)]
        phrases += [p for route in kb.routes for p in route.keywords]
        phrases += [name for names in kb.variants for name in names]
        self._forms = self._vocabulary([*phrases, *GENERIC])
        self._attribute_phrases = [
            self._phrase(text, index, polarity)
            for index, attribute in enumerate(kb.attributes)
            for texts, polarity in ((attribute.keywords, True), (attribute.negative, False))
            for text in texts
        ]
        self._route_phrases = [
            self._phrase(text, index, True)
            for index, route in enumerate(kb.routes)
            for text in route.keywords
        ]
        self._attribute_index = self._by_word(self._attribute_phrases)
        self._route_index = self._by_word(self._route_phrases)
        names: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        for item, variants in enumerate(kb.variants):
            for variant in variants:
                tokens = tuple(self.canonical(t) for t in words(variant))
                names.setdefault(tokens[-1], []).append((tokens, item))
        self._names = {
            last: sorted(found, key=lambda v: -len(v[0])) for last, found in names.items()
        }
        self._cache: dict[str, Parse] = {}

    @staticmethod
    def _vocabulary(phrases: Iterable[str]) -> dict[str, str]:
        bases = sorted({IRREGULAR_PLURALS.get(t, t) for phrase in phrases for t in words(phrase)})
        forms = {plural: base for base in bases for plural in plurals(base)}
        # A word that is also another word's plural ("sports", "pants") folds onto the singular.
        for base in bases:
            forms.setdefault(base, base)
        return forms

    def canonical(self, token: str) -> str:
        """``token`` folded onto the vocabulary: "knives" → "knife", "wheels" → "wheel"."""
        if token in _GRAMMAR:
            return token
        token = IRREGULAR_PLURALS.get(token, token)
        return self._forms.get(token, token)

    def _phrase(self, text: str, target: int, polarity: bool) -> _Phrase:
        tokens = frozenset(self.canonical(t) for t in words(text) if t not in STOPWORDS)
        if not tokens:
            raise ValueError(f"keyword phrase {text!r} has only stop words")
        return _Phrase(tokens, target, polarity)

    @staticmethod
    def _by_word(phrases: list[_Phrase]) -> dict[str, tuple[int, ...]]:
        index: dict[str, list[int]] = {}
        for number, phrase in enumerate(phrases):
            for token in phrase.words:
                index.setdefault(token, []).append(number)
        return {token: tuple(numbers) for token, numbers in index.items()}

    def parse(self, question: str) -> Parse:
        """The :class:`Parse` of ``question`` (cached)."""
        parse = self._cache.get(question)
        if parse is None:
            if len(self._cache) > 200_000:
                self._cache.clear()
            parse = self._cache[question] = self._parse(question)
        return parse

    def _parse(self, question: str) -> Parse:
        if not question.strip() or len(question.split()) > MAX_WORDS:
            return _INVALID
        tokens = [self.canonical(t) for t in words(question)]
        if not tokens or tokens[0] not in self.starts:
            return _INVALID
        item = self._guessed_item(tokens)
        if item is not None:
            return Parse(GUESS, item=item)
        if self.kb.routes and self._is_open(tokens):
            matched = self._match(tokens, self._route_phrases, self._route_index)
            if not matched:
                return Parse(UNPARSED, open_form=True)
            return Parse(OPEN, route=matched[0].target)
        matched = self._match(tokens, self._attribute_phrases, self._attribute_index)
        if not matched:
            return Parse(UNPARSED)
        terms = tuple(dict.fromkeys((p.target, p.polarity) for p in matched))
        return Parse(
            ATTRIBUTES,
            terms=terms,
            any_of="or" in tokens,
            negated=any(t in NEGATORS for t in tokens),
        )

    @staticmethod
    def _is_open(tokens: list[str]) -> bool:
        return tokens[0] in OPEN_STARTS or (
            len(tokens) > 2 and tokens[1] == "you" and tokens[2] in OPEN_VERBS
        )

    def _guessed_item(self, tokens: list[str]) -> int | None:
        end = len(tokens)
        while end and tokens[end - 1] in FILLERS:
            end -= 1
        found = self._named_at_end(tokens, end)
        if found is None:
            while end and tokens[end - 1] in FILLERS | GENERIC:
                end -= 1
            found = self._named_at_end(tokens, end)
        return found

    def _named_at_end(self, tokens: list[str], end: int) -> int | None:
        if not end:
            return None
        for name, item in self._names.get(tokens[end - 1], ()):
            start = end - len(name)
            if start >= 0 and tuple(tokens[start:end]) == name:
                return item if self._named_as_the_target(tokens, start) else None
        return None

    @staticmethod
    def _named_as_the_target(tokens: list[str], start: int) -> bool:
        copulas = [i for i in range(start) if tokens[i] in COPULAS]
        if not copulas:
            return False
        for i in range(copulas[-1] + 1, start):
            if tokens[i] in RELATIONS and not (tokens[i] == "of" and tokens[i - 1] in NAMING_OF):
                return False
        return True

    @staticmethod
    def _match(
        tokens: list[str], phrases: list[_Phrase], index: dict[str, tuple[int, ...]]
    ) -> list[_Phrase]:
        """The phrases named by ``tokens``: longest first, then tightest, then earliest; a
        phrase that reuses a word of a chosen one is dropped."""
        first: dict[str, int] = {}
        for position, token in enumerate(tokens):
            first.setdefault(token, position)
        ranked = []
        for number in sorted({n for token in first for n in index.get(token, ())}):
            phrase = phrases[number]
            if all(word in first for word in phrase.words):
                positions = [first[word] for word in phrase.words]
                span = max(positions) - min(positions)
                ranked.append((-len(phrase.words), span, min(positions), number))
        chosen, used = [], set()
        for *_, number in sorted(ranked):
            phrase = phrases[number]
            if not phrase.words & used:
                used |= phrase.words
                chosen.append(phrase)
        return chosen


@cache
def knowledge_questions(kb: KnowledgeBase) -> tuple[str, ...]:
    """Every phrasing the knowledge base holds, once each: the questions of its attributes and
    open topics and the guesses of its items (what the behaviour policies ask, and what the
    parser answers); the ``legal_actions`` of ``list_questions=True``."""
    phrasings = [
        *(q for attribute in kb.attributes for q in attribute.questions),
        *(q for route in kb.routes for q in route.questions),
        *(q for guesses in kb.guesses for q in guesses),
    ]
    return tuple(dict.fromkeys(phrasings))


@cache
def parser_for(kb: KnowledgeBase) -> QuestionParser:
    """The (process-wide) parser of ``kb``."""
    return QuestionParser(kb)


# -- the environment ---------------------------------------------------------------------------


class QuestionGameEnv(TextTaskEnv):
    """Rules shared by Twenty Questions and Guess My City; see the subclasses' docstrings."""

    min_return = -float(MAX_QUESTIONS)
    knowledge: ClassVar[Callable[[], KnowledgeBase]]

    @classmethod
    def evaluation_runs(cls) -> list[tuple[int, dict[str, Any]]]:
        """One oracle episode per item, pinned by the reset option (the oracle is
        deterministic, so this is its exact mean over a uniform target)."""
        kb = cls.knowledge()
        return [(seed, {kb.kind: name}) for seed, name in enumerate(kb.items)]

    def __init__(
        self,
        list_questions: bool = False,
        obs_mode: str = "transcript",
        render_mode: str | None = None,
    ) -> None:
        if not isinstance(list_questions, bool):
            raise ValueError(f"list_questions must be a bool, got {list_questions!r}")
        self.list_questions = list_questions
        super().__init__(obs_mode=obs_mode, render_mode=render_mode)
        self.kb = self.knowledge()
        self.parser = parser_for(self.kb)
        self._target = 0
        self._questions = self._guesses = self._unparsed_questions = self._open_questions = 0
        self._unparsed = False

    @property
    def target(self) -> str:
        """The hidden item's name (simulator state: behaviour policies may read it, oracles
        may not)."""
        return self.kb.items[self._target]

    def _begin(self, options: dict[str, Any]) -> str:
        kind = self.kb.kind
        if kind in options:
            target = self.kb.lookup(options[kind])
            if target is None:
                raise ValueError(
                    f"options[{kind!r}] must name one of the {len(self.kb.items)} items of the "
                    f"knowledge base, got {options[kind]!r}"
                )
            self._target = target
        else:
            self._target = int(self.np_random.integers(len(self.kb.items)))
        self._questions = self._guesses = self._unparsed_questions = self._open_questions = 0
        self._unparsed = False
        return OPENING

    def _play(self, action: str) -> Turn:
        self._questions += 1
        last = self._questions >= MAX_QUESTIONS
        parse = self.parser.parse(action)
        self._unparsed = parse.kind == UNPARSED
        if parse.kind == INVALID:
            return Turn(message=NO, reward=-1.0, terminated=last, invalid=True)
        if parse.kind == GUESS:
            self._guesses += 1
            if parse.item == self._target:
                return Turn(message=YES, reward=0.0, terminated=True, success=True)
            return Turn(message=NO, reward=-1.0, terminated=last)
        if parse.kind == OPEN:
            self._open_questions += 1
            message = self.kb.routes[parse.route].answers[self._target]
        elif parse.kind == ATTRIBUTES:
            message = YES if parse.answer(self.kb.values[self._target]) else NO
        else:
            self._unparsed_questions += 1
            message = DONT_KNOW if parse.open_form else NO
        return Turn(message=message, reward=-1.0, terminated=last)

    def _info(self, invalid: bool) -> dict[str, Any]:
        info = super()._info(invalid)
        info["unparsed"] = self._unparsed
        return info

    def _legal_actions(self) -> tuple[str, ...] | None:
        return knowledge_questions(self.kb) if self.list_questions else None

    def _metrics(self) -> dict[str, float]:
        metrics = {
            "guesses": float(self._guesses),
            "unparsed_questions": float(self._unparsed_questions),
        }
        if self.kb.routes:
            metrics["open_questions"] = float(self._open_questions)
        return metrics


# -- the greedy information-gain questioner ----------------------------------------------------

Move = tuple[str, int]
"""What a questioner does next: ("attribute", column), ("guess", item) or ("open", route)."""
Candidates = tuple[int, ...]


def split_entropy(values: np.ndarray, candidates: Candidates) -> np.ndarray:
    """Per attribute, the entropy (bits) of its yes/no answer over ``candidates``."""
    p = values[list(candidates)].mean(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        h = -(p * np.log2(p) + (1.0 - p) * np.log2(1.0 - p))
    return np.nan_to_num(h)


class GreedyQuestioner:
    """Greedy information gain over one knowledge base, with the tree memoised per process."""

    def __init__(self, kb: KnowledgeBase, guess_at: int) -> None:
        self.values = kb.values
        self.guess_at = guess_at
        self._moves: dict[Candidates, Move] = {}
        self._after: dict[tuple[Candidates, Move, bool], Candidates] = {}

    def best(self, candidates: Candidates) -> Move:
        """The most informative attribute question, or a guess at the first candidate once at
        most ``guess_at`` remain (or nothing splits them)."""
        move = self._moves.get(candidates)
        if move is None:
            move = ("guess", candidates[0])
            if len(candidates) > self.guess_at:
                entropy = split_entropy(self.values, candidates)
                column = int(np.argmax(entropy))
                if entropy[column] > 0.0:
                    move = ("attribute", column)
            self._moves[candidates] = move
        return move

    def narrow(self, candidates: Candidates, move: Move, yes: bool) -> Candidates:
        """The candidates consistent with answer ``yes`` to a yes/no ``move``."""
        key = (candidates, move, yes)
        after = self._after.get(key)
        if after is None:
            kind, index = move
            if kind == "guess":
                after = tuple(c for c in candidates if c != index)
            else:
                column = self.values[:, index]
                after = tuple(c for c in candidates if bool(column[c]) == yes)
            self._after[key] = after
        return after


@cache
def greedy_questioner(kb: KnowledgeBase, guess_at: int = 3) -> GreedyQuestioner:
    """The process-wide greedy questioner of ``kb``."""
    return GreedyQuestioner(kb, guess_at)


# -- the behaviour policy (dataset mixture) ----------------------------------------------------


class QuestionBehaviour(ScriptedBehaviour):
    """LMRL's dataset mixture of questioners; each episode draws one style.

    - ``random``: asks a uniformly random attribute it has not asked yet (an open question
      instead with probability ``open_probability``), guesses only when one candidate is left
      or at the last question;
    - ``greedy``: the oracle's greedy information-gain questioner, but with probability
      ``epsilon`` a question is a random one as above; guesses a random candidate once at most
      ``guess_at`` remain;
    - ``early``: asks ``early_questions`` greedy questions (a number drawn uniformly from 1 to
      that), then only guesses, each time a random candidate it has not guessed yet.

    Every questioner keeps the candidates consistent with the answers it has read (it knows the
    public knowledge base, including each item's answer to each open question), but misreads
    each answer with probability ``misread_probability``: a yes/no answer is taken the wrong
    way round, an open answer is ignored. An answer that would leave no candidate is ignored,
    except a wrong guess at the last one, after which the questioner starts over from every
    item it has not guessed. It words each question with a random phrasing from the knowledge
    base and reads no simulator state.
    """

    knowledge: ClassVar[Callable[[], KnowledgeBase]]
    style_weights: ClassVar[dict[str, float]]
    epsilon: ClassVar[float]
    guess_at: ClassVar[int]
    early_questions: ClassVar[int]
    misread_probability: ClassVar[float]
    open_probability: ClassVar[float] = 0.0

    def __init__(self, env: Any = None) -> None:
        super().__init__(env)
        self.kb = self.knowledge()
        self._questioner = greedy_questioner(self.kb)
        self._styles = list(self.style_weights)
        weights = np.array([self.style_weights[s] for s in self._styles], dtype=np.float64)
        self._weights = weights / weights.sum()
        self.style = self._styles[0]
        self._candidates: Candidates = ()
        self._asked: set[Move] = set()
        self._move: Move = ("guess", 0)
        self._greedy_left = 0

    def parameters(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "style": self.style,
            "style_weights": dict(self.style_weights),
            "epsilon": self.epsilon,
            "guess_at": self.guess_at,
            "early_questions": self.early_questions,
            "misread_probability": self.misread_probability,
            "open_probability": self.open_probability,
        }

    def act(self, observation: str, info: dict[str, Any]) -> str:
        if info["turn"] == 0:
            self._start_episode()
        else:
            self._read_answer(info["last_message"])
        self._move = self._next_move(info["turn"])
        self._asked.add(self._move)
        return self._word(self._move)

    def _start_episode(self) -> None:
        self.style = self._styles[int(self.rng.choice(len(self._styles), p=self._weights))]
        self._candidates = tuple(range(len(self.kb.items)))
        self._asked = set()
        self._greedy_left = int(self.rng.integers(1, self.early_questions + 1))

    def _read_answer(self, message: str) -> None:
        kind, index = self._move
        misread = kind != "guess" and self.rng.random() < self.misread_probability
        if kind == "open":
            answers = self.kb.routes[index].answers
            left = () if misread else tuple(c for c in self._candidates if answers[c] == message)
        else:
            yes = (message == YES) != misread
            left = self._questioner.narrow(self._candidates, self._move, yes)
        if not left and kind == "guess":
            # Its last candidate was wrong (an answer was misread): start over.
            left = tuple(c for c in range(len(self.kb.items)) if ("guess", c) not in self._asked)
        self._candidates = left or self._candidates

    def _next_move(self, turn: int) -> Move:
        candidates = self._candidates
        if self.style == "early":
            if self._greedy_left > 0 and len(candidates) > 1:
                self._greedy_left -= 1
                return self._questioner.best(candidates)
            return self._random_guess()
        if self.style == "random":
            if len(candidates) == 1 or turn == MAX_QUESTIONS - 1:
                return self._random_guess()
            return self._random_question()
        if len(candidates) <= self.guess_at:
            return self._random_guess()
        if self.rng.random() < self.epsilon:
            return self._random_question()
        return self._questioner.best(candidates)

    def _random_guess(self) -> Move:
        # A wrong guess has already removed its item from the candidates.
        return ("guess", self._candidates[int(self.rng.integers(len(self._candidates)))])

    def _random_question(self) -> Move:
        if self.kb.routes and self.rng.random() < self.open_probability:
            routes = [r for r in range(len(self.kb.routes)) if ("open", r) not in self._asked]
            if routes:
                return ("open", routes[int(self.rng.integers(len(routes)))])
        unasked = [a for a in range(len(self.kb.attributes)) if ("attribute", a) not in self._asked]
        return ("attribute", unasked[int(self.rng.integers(len(unasked)))])

    def _word(self, move: Move) -> str:
        kind, index = move
        if kind == "guess":
            phrasings = self.kb.guesses[index]
        elif kind == "open":
            phrasings = self.kb.routes[index].questions
        else:
            phrasings = self.kb.attributes[index].questions
        return phrasings[int(self.rng.integers(len(phrasings)))]


def join_words(values: Iterable[str]) -> str:
    """``"a, b and c"``."""
    values = list(values)
    return values[0] if len(values) == 1 else f"{', '.join(values[:-1])} and {values[-1]}"
