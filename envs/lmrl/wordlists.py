"""Build the Wordle word lists committed in ``data/``, from Debian's SCOWL word lists.

Needs Debian's word lists (as root: ``apt-get install -y wamerican wamerican-small``); run
``python -m omnigym.envs.lmrl.wordlists``. It writes

- ``wordle_guesses.txt``: every 5-letter, lowercase, ASCII-alphabetic word of
  ``/usr/share/dict/american-english`` (SCOWL sizes up to 50) plus the answers;
- ``wordle_answers.txt``: 400 words drawn with ``numpy.random.default_rng(SEED)`` from the
  5-letter lowercase words of ``/usr/share/dict/american-english-small`` (SCOWL sizes up to 35,
  the common words), leaving out likely inflections as the official Wordle answer list does:
  words ending in ``s`` (plurals, third-person verbs) unless they end in ``ss``, ``us`` or ``is``,
  and words ending in ``ed`` (past tenses).

LMRL-Gym (Abdulhai et al., ICML 2025) uses a 431-word subset of the official answer list, which
is not freely licensed; SCOWL is (notice in ``SCOWL-COPYRIGHT.txt``, copied from
``/usr/share/doc/wamerican/copyright``).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

SEED = 2025
ANSWER_COUNT = 400
FULL_LIST = Path("/usr/share/dict/american-english")
SMALL_LIST = Path("/usr/share/dict/american-english-small")
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


def main() -> None:
    candidates = [word for word in five_letter_words(SMALL_LIST) if not looks_inflected(word)]
    rng = np.random.default_rng(SEED)
    picked = rng.choice(len(candidates), size=ANSWER_COUNT, replace=False)
    answers = sorted(candidates[index] for index in picked)
    guesses = sorted(set(five_letter_words(FULL_LIST)) | set(answers))
    (DATA / "wordle_answers.txt").write_text("\n".join(answers) + "\n", encoding="ascii")
    (DATA / "wordle_guesses.txt").write_text("\n".join(guesses) + "\n", encoding="ascii")
    print(f"{len(answers)} answers from {len(candidates)} candidates, {len(guesses)} guesses")


if __name__ == "__main__":
    main()
