"""helpers.lessons.norm_in_models: the table of which norm well-known models use is complete and sourced."""

import re

from helpers.lessons.norm_in_models import NORM_IN_MODELS


def test_every_row_is_filled_in_and_cites_a_source_with_its_year():
    assert list(NORM_IN_MODELS.columns) == ["model", "domain", "norm", "statistics over", "where",
                                            "why (as its paper says)", "source"]
    assert NORM_IN_MODELS.notna().all().all() and (NORM_IN_MODELS.map(len) > 0).all().all()
    for model, source in zip(NORM_IN_MODELS["model"], NORM_IN_MODELS["source"], strict=True):
        year = re.search(r"\((\d{4})\)", model)[1]
        assert year in source, (model, source)


def test_the_table_names_every_norm_of_the_family_and_the_norm_free_alternative():
    norms = " ".join(NORM_IN_MODELS["norm"])
    for name in ("BatchNorm", "LayerNorm", "InstanceNorm", "GroupNorm", "RMSNorm", "QK-norm", "Dynamic Tanh"):
        assert name in norms, name
    assert NORM_IN_MODELS["model"].is_unique
