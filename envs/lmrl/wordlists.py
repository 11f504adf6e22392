"""Build the Wordle word lists committed in ``data/``, from Debian's SCOWL word lists.

Needs three of Debian's word-list packages, all built from the one SCOWL release (source package
``scowl`` 2020.12.07; as root: ``apt-get install -y wamerican-small wamerican wamerican-huge``);
run ``python -m omnigym.envs.lmrl.wordlists``. Nothing is sampled except the small vocabulary's
400 answers (``numpy.random.default_rng(SEED)``), so the output depends on the packages alone.

SCOWL (Spell Checker Oriented Word Lists, Kevin Atkinson) sorts English words into size levels by
how common they are: levels up to 35 are the common words found in most dictionaries, 50 adds
words in at least 5 of 12 dictionaries, 80 the Scrabble-style lists (ENABLE, UKACD). The packages
ship the levels cumulatively: ``american-english-small`` up to 35, ``american-english`` up to
60, ``american-english-huge`` up to 80. A word list here is the sorted set of 5-letter,
lowercase, ASCII-alphabetic words of such a file.

``vocabulary="standard"`` (the default of ``LMRL/Wordle-v0``):

- ``wordle_answers.txt``: every word of the size-35 list (the commonness criterion) that does
  not look inflected, as the official Wordle answer list leaves out inflections: words ending in
  ``s`` (plurals, third-person verbs) unless they end in ``ss``, ``us`` or ``is``, and words
  ending in ``ed`` (past tenses); 2,129 words;
- ``wordle_guesses.txt``: the size-80 list plus the answers; 11,406 words.

``vocabulary="small"`` (the first lists of the task): ``wordle_answers_small.txt``, 400 of the
same answer candidates drawn with the seed, and ``wordle_guesses_small.txt``, the size-60 list
plus those answers (4,667 words).

LMRL-Gym (Abdulhai et al., ICML 2025) uses a 431-word subset of the official answer list, which
is not freely licensed; SCOWL is (its notice, which the licence asks to keep with the lists, is
``data/SCOWL-COPYRIGHT.txt``, copied from ``/usr/share/doc/wamerican/copyright``; the three
packages ship the same file).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

SEED = 2025
SMALL_ANSWER_COUNT = 400
DICTIONARIES = Path("/usr/share/dict")
COMMON_LIST = DICTIONARIES / "american-english-small"  # SCOWL sizes up to 35
MEDIUM_LIST = DICTIONARIES / "american-english"  # up to 60
LARGE_LIST = DICTIONARIES / "american-english-huge"  # up to 80
DATA = Path(__file__).resolve().parent / "data"
_FIVE_LETTERS = re.compile(r"[a-z]{5}")


def five_letter_words(path: Path) -> list[str]:
    """Sorted unique 5-letter lowercase ASCII words of a dictionary file."""
    words = path.read_text(encoding="utf-8").split("\n")
    return sorted({word for word in words if _FIVE_LETTERS.fullmatch(word)})


def looks_inflected(word: str) -> bool:
    """True for likely plurals, third-person verbs and past tenses."""
    if word.endswith("s"):
        return not word.endswith(("ss", "us", "is"))
    return word.endswith("ed")


def vocabularies() -> dict[str, tuple[list[str], list[str]]]:
    """``{vocabulary: (answers, guesses)}`` from the installed dictionaries (module docstring)."""
    candidates = [word for word in five_letter_words(COMMON_LIST) if not looks_inflected(word)]
    picked = np.random.default_rng(SEED).choice(
        len(candidates), size=SMALL_ANSWER_COUNT, replace=False
    )
    small = sorted(candidates[index] for index in picked)
    return {
        "standard": (candidates, sorted(set(five_letter_words(LARGE_LIST)) | set(candidates))),
        "small": (small, sorted(set(five_letter_words(MEDIUM_LIST)) | set(small))),
    }


def list_files(vocabulary: str) -> tuple[Path, Path]:
    """The ``(answers, guesses)`` files of a vocabulary."""
    suffix = "" if vocabulary == "standard" else f"_{vocabulary}"
    return DATA / f"wordle_answers{suffix}.txt", DATA / f"wordle_guesses{suffix}.txt"


def main() -> None:
    for vocabulary, lists in vocabularies().items():
        for path, words in zip(list_files(vocabulary), lists, strict=True):
            path.write_text("\n".join(words) + "\n", encoding="ascii")
        print(f"{vocabulary}: {len(lists[0])} answers, {len(lists[1])} guesses")


if __name__ == "__main__":
    main()
