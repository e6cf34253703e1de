"""Real English prose for a character-level language model: the topics of the Python Language
Reference, shipped with the package so that every machine trains on the same bytes.

Why this text. The copy tasks the other Transformer experiments use are synthetic; a claim made on
language needs language. The text must be the same on every machine with the set's pins and must
never be downloaded at run time. Two candidates ship with the pins already: the standard library's
``pydoc_data.topics`` (the reference's prose on each statement, operator and type, 79 topics,
464,970 characters under CPython 3.11.7) and the docstrings of torch's public API. The topics are
chosen: they are written as prose for people, where torch's docstrings are mostly argument lists,
reStructuredText markup, LaTeX and code. Their text changes between Python patch releases (466,019
characters under 3.11.2), so it is not read from the running Python but from a copy made once under
3.11.7 and shipped as package data, ``helpers/data/pydoc_topics.json.gz`` (one JSON object ``{topic:
text}``, sorted keys, UTF-8), with the PSF licence it comes under beside it
(``pydoc_topics_LICENSE.txt``). :data:`CORPUS_SHA256` is the SHA-256 of the uncompressed JSON:
:func:`documents` refuses any other bytes.

- :func:`documents`: the topics; :func:`heldout_topics`: the held-out ones, every
  :data:`HELDOUT_EVERY`-th topic of the sorted list from the one at :data:`HELDOUT_FIRST` (8 topics,
  11.4% of the characters). The offset is the one of the ten whose share of the characters is
  nearest 10% (from 2.3% to 18.2%), read from the topics' lengths alone, before any model was
  trained.
- :func:`vocabulary`: the characters of the training topics, sorted, after :data:`UNKNOWN` (index 0),
  which stands for any character they lack.
- :func:`text_source`: the :class:`~helpers.experiments.small_transformer.Task` of next-character
  prediction: minibatches of ``context + 1`` characters cut from training topics at starts drawn by a
  seed's generator (uniform over every window that lies inside one topic, so every training
  character can be seen and no window spans two topics), and a fixed set of held-out windows, evenly
  spaced over the held-out topics (no generator: the same for every run).
- :func:`unigram_level`: the held-out loss of the best model that ignores the context, in bits per
  character: the level of a model that learned only how often each character occurs.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.resources
import json
import math

import numpy as np
import torch

from helpers.experiments.small_transformer import Task

#: The shipped corpus (package data of ``helpers``) and the SHA-256 of its uncompressed bytes.
CORPUS_FILE = "pydoc_topics.json.gz"
CORPUS_SHA256 = "4717ccc51e2e7bd1eed2feddb0bcb5a7da19a1a923fd2f258cf81e4285e31683"

#: The held-out topics: every ``HELDOUT_EVERY``-th of the sorted names, from index ``HELDOUT_FIRST``.
HELDOUT_EVERY, HELDOUT_FIRST = 10, 6

#: The vocabulary's symbol for a character no training topic has; index 0.
UNKNOWN = "\ufffd"


@functools.cache
def documents() -> dict[str, str]:
    """The corpus: ``{topic: text}``, topics sorted. Raises ``ValueError`` where the shipped file is
    not the one whose SHA-256 is :data:`CORPUS_SHA256`."""
    raw = gzip.decompress((importlib.resources.files("helpers") / "data" / CORPUS_FILE).read_bytes())
    digest = hashlib.sha256(raw).hexdigest()
    if digest != CORPUS_SHA256:
        raise ValueError(f"helpers/data/{CORPUS_FILE} has SHA-256 {digest}, not the corpus's {CORPUS_SHA256}")
    return json.loads(raw)


def heldout_topics() -> tuple[str, ...]:
    """The held-out topics: ``sorted(topics)[HELDOUT_FIRST::HELDOUT_EVERY]``."""
    return tuple(sorted(documents())[HELDOUT_FIRST::HELDOUT_EVERY])


@functools.cache
def vocabulary() -> str:
    """:data:`UNKNOWN`, then every character of the training topics in code-point order; a token is
    an index into this string."""
    held = set(heldout_topics())
    return UNKNOWN + "".join(sorted(set("".join(t for k, t in documents().items() if k not in held))))


def encode(text: str) -> torch.Tensor:
    """``text`` as token ids, int64 ``(len(text),)``; a character outside :func:`vocabulary` is 0."""
    index = {c: i for i, c in enumerate(vocabulary())}
    return torch.tensor([index.get(c, 0) for c in text], dtype=torch.int64)


@functools.cache
def _split(heldout: bool) -> tuple[torch.Tensor, np.ndarray]:
    """The training (or held-out) topics encoded end to end, in sorted order, and the offset where each
    starts, with the total length last: ``(codes, bounds)``."""
    held = set(heldout_topics())
    texts = [t for k, t in documents().items() if (k in held) == heldout]
    return encode("".join(texts)), np.cumsum([0, *map(len, texts)])


def _starts(heldout: bool, length: int) -> torch.Tensor:
    """Every offset at which a window of ``length`` characters lies inside one topic."""
    _, bounds = _split(heldout)
    return torch.from_numpy(np.concatenate([np.arange(a, b - length + 1)
                                            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]))


def _windows(codes: torch.Tensor, starts: torch.Tensor, length: int) -> torch.Tensor:
    """The windows of ``codes`` at ``starts``: ``(len(starts), length)``."""
    return codes[starts[:, None] + torch.arange(length)]


@functools.cache
def text_source(context: int, heldout_size: int) -> Task:
    """Next-character prediction on the corpus: a model reads ``context`` characters and predicts each
    next one.

    ``draw(batch, generator)`` cuts ``batch`` windows of ``context + 1`` characters from the training
    topics, their starts drawn uniformly (one ``torch.randint`` from ``generator``) over every window
    inside one topic; ``heldout`` is ``heldout_size`` windows of the held-out topics at evenly spaced
    starts among theirs, the first and last included.

    Returns:
        A :class:`~helpers.experiments.small_transformer.Task`: ``len(vocabulary())`` tokens,
        ``context`` positions.
    """
    codes, length = _split(False)[0], context + 1
    starts = _starts(False, length)

    def draw(batch: int, generator: torch.Generator) -> torch.Tensor:
        return _windows(codes, starts[torch.randint(len(starts), (batch,), generator=generator)], length)

    held = _starts(True, length)
    picked = held[np.linspace(0, len(held) - 1, heldout_size).round().astype(np.int64)]
    return Task(len(vocabulary()), context, draw, _windows(_split(True)[0], picked, length))


def unigram_level(heldout: torch.Tensor) -> float:
    """The lowest loss, in bits per character, that a model ignoring the context can score on the
    held-out windows ``heldout`` ``(size, context + 1)``: the entropy of the characters it predicts
    there (every position but the first), ``-sum p log2 p`` over their frequencies ``p``. Predicting
    those frequencies scores it; any other context-free prediction scores more (Gibbs' inequality)."""
    counts = torch.bincount(heldout[:, 1:].flatten()).double()
    p = counts[counts > 0] / counts.sum()
    return float(-(p * p.log()).sum() / math.log(2))
