"""helpers.experiments.text_corpus: the shipped corpus is the one its hash names, its held-out topics follow
the stated rule, batches are seeded and never cut from held-out text, and the unigram level is the
entropy of what the held-out windows predict."""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import torch

from helpers.experiments import text_corpus as tc

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "helpers" / "data"


# ------------------------------------------------------------------ the corpus and its split


def test_the_shipped_corpus_has_the_recorded_hash_and_its_licence_beside_it():
    raw = gzip.decompress((DATA / tc.CORPUS_FILE).read_bytes())
    assert hashlib.sha256(raw).hexdigest() == tc.CORPUS_SHA256
    docs = tc.documents()
    assert docs == json.loads(raw.decode("utf-8"))
    assert list(docs) == sorted(docs) and len(docs) == 79
    assert sum(map(len, docs.values())) == 464_970  # CPython 3.11.7's pydoc_data.topics
    assert docs["assert"].startswith('The "assert" statement')
    licence = (DATA / "pydoc_topics_LICENSE.txt").read_text(encoding="utf-8")
    assert "PYTHON SOFTWARE FOUNDATION LICENSE VERSION 2" in licence and "ZERO-CLAUSE BSD LICENSE" in licence
    assert "pydoc_topics.json.gz" in licence


def test_other_bytes_are_refused(monkeypatch, tmp_path):
    (tmp_path / "data").mkdir()
    text = json.dumps({"a": "changed text"}).encode()
    (tmp_path / "data" / tc.CORPUS_FILE).write_bytes(gzip.compress(text))
    monkeypatch.setattr(tc.importlib.resources, "files", lambda package: tmp_path)
    tc.documents.cache_clear()
    try:
        with pytest.raises(ValueError, match=f"SHA-256 {hashlib.sha256(text).hexdigest()}, not the corpus's"):
            tc.documents()
    finally:
        tc.documents.cache_clear()


def test_the_heldout_topics_are_every_tenth_from_the_seventh_and_about_a_tenth_of_the_text():
    names = sorted(tc.documents())
    held = tc.heldout_topics()
    assert held == tuple(names[i] for i in range(6, len(names), 10)) and len(held) == 8
    sizes = {k: len(v) for k, v in tc.documents().items()}
    shares = [sum(sizes[k] for k in names[i::10]) / sum(sizes.values()) for i in range(10)]
    # the stated offset is the one whose share is nearest a tenth
    assert int(np.argmin(np.abs(np.array(shares) - 0.1))) == tc.HELDOUT_FIRST
    assert 0.09 < shares[tc.HELDOUT_FIRST] < 0.12


def test_the_vocabulary_is_the_training_characters_after_the_unknown_symbol():
    vocab = tc.vocabulary()
    held = set(tc.heldout_topics())
    train_chars = set("".join(t for k, t in tc.documents().items() if k not in held))
    assert vocab[0] == tc.UNKNOWN and tc.UNKNOWN not in train_chars
    assert set(vocab[1:]) == train_chars and list(vocab[1:]) == sorted(train_chars) and len(vocab) == len(set(vocab))
    codes = tc.encode("def f(x):\n    return x\N{SNOWMAN}")
    assert codes.dtype == torch.int64 and codes[-1] == 0  # a character no training topic has
    assert "".join(vocab[i] for i in codes[:-1]) == "def f(x):\n    return x"


# ------------------------------------------------------------------ batches and held-out windows


def _decode(row) -> str:
    vocab = tc.vocabulary()
    return "".join(vocab[i] for i in row)


def test_a_batch_is_seeded_and_cut_from_one_training_topic():
    task = tc.text_source(24, 8)
    assert task.seq_len == 24 and task.vocab == len(tc.vocabulary())
    a = task.draw(50, torch.Generator().manual_seed(3))
    b = task.draw(50, torch.Generator().manual_seed(3))
    c = task.draw(50, torch.Generator().manual_seed(4))
    assert a.shape == (50, 25) and a.dtype == torch.int64
    assert torch.equal(a, b) and not torch.equal(a, c)
    held = set(tc.heldout_topics())
    training = [t for k, t in tc.documents().items() if k not in held]
    for row in a:
        text = _decode(row)
        assert any(text in t for t in training), text  # inside one topic: no window spans two


def test_no_batch_ever_draws_heldout_text():
    # Every window a draw can cut starts where a whole window fits inside a training topic: the
    # starts, mapped back to the text, never reach a held-out character.
    length = 65
    codes, bounds = tc._split(False)
    starts = tc._starts(False, length).numpy()
    topic = np.searchsorted(bounds, starts, side="right") - 1
    assert (starts + length <= bounds[topic + 1]).all()
    assert len(starts) == sum(b - a - length + 1 for a, b in zip(bounds[:-1], bounds[1:], strict=True))
    held = set(tc.heldout_topics())
    train_text = "".join(t for k, t in tc.documents().items() if k not in held)
    assert torch.equal(codes, tc.encode(train_text))
    # and many draws: no held-out window of 30 characters appears in them
    task = tc.text_source(64, 8)
    drawn = {_decode(row) for row in task.draw(2000, torch.Generator().manual_seed(0))}
    heldout_text = "".join(t for k, t in tc.documents().items() if k in held)
    probes = {heldout_text[i:i + 30] for i in range(0, len(heldout_text) - 30, 997)}
    probes = {p for p in probes if p not in train_text}  # windows the held-out topics alone have
    assert len(probes) > 20
    assert not any(p in d for p in probes for d in drawn)


def test_the_heldout_windows_are_fixed_evenly_spaced_and_held_out():
    task = tc.text_source(64, 16)
    again = tc.text_source.__wrapped__(64, 16)  # built anew, not the cached one
    assert torch.equal(task.heldout, again.heldout) and task.heldout.shape == (16, 65)
    held = set(tc.heldout_topics())
    heldout_text = [t for k, t in tc.documents().items() if k in held]
    for row in task.heldout:
        assert any(_decode(row) in t for t in heldout_text)
    codes, bounds = tc._split(True)
    assert torch.equal(task.heldout[0], codes[:65])  # the first window starts the first held-out topic
    assert torch.equal(task.heldout[-1], codes[-65:])  # the last ends the last


def test_the_unigram_level_is_the_entropy_of_the_predicted_characters():
    heldout = tc.text_source(64, 64).heldout
    counts = Counter(heldout[:, 1:].flatten().tolist())
    n = sum(counts.values())
    expected = -sum(c / n * math.log2(c / n) for c in counts.values())
    assert tc.unigram_level(heldout) == pytest.approx(expected, rel=1e-12)
    # no context-free prediction scores less: the training text's frequencies score more
    codes, _ = tc._split(False)
    q = torch.bincount(codes, minlength=len(tc.vocabulary())).double() + 1
    q = q / q.sum()
    cross = float(-q[heldout[:, 1:].flatten()].log2().mean())
    assert cross > tc.unigram_level(heldout)
    assert tc.unigram_level(torch.zeros(3, 5, dtype=torch.int64)) == 0.0
