"""Figures: builders that take plain data (tensors, dicts, DataFrames) and return a Figure.

A dashboard's builder has an ``update_<builder>(fig, state)`` twin that shows a new state on a
figure the builder made, by setting its artists' data, so that a widget keeps one figure
(:mod:`helpers.widgets.core`); the builder lays the figure out once and the update keeps it.

A builder never calls ``plt.show()``: a notebook cell or a widget callback shows the
figure, and tests read the artists' data (line ydata, axis limits, titles) instead of
pixels. Figures are small (``DPI`` dots per inch) so stored notebooks stay small.

The shared sizes and colours are in :mod:`helpers.plots.core`; each notebook's builders
are in a module named for what they draw. What the notebooks use is importable from here.
"""

from helpers.plots.bn_vs_ln import (
    batch_noise_figure,
    batch_size_figure,
    other_samples_figure,
    pooling_figure,
    update_other_samples_figure,
)
from helpers.plots.formula import drift_figure, gamma_beta_fit_figure
from helpers.plots.geometry import (
    ln_geometry_figure,
    ln_geometry_views_figure,
    update_ln_geometry_figure,
)
from helpers.plots.memory_and_speed import bandwidth_figure, saved_bytes_figure
from helpers.plots.norm_family import (
    norm_family_figure,
    norm_family_panels_figure,
    update_norm_family_figure,
)
from helpers.plots.norm_free import norm_free_curves_figure, s_shape_figure
from helpers.plots.placement import (
    layer_histograms_figure,
    stored_runs_figure,
    update_layer_histograms_figure,
    update_stored_runs_figure,
)
from helpers.plots.small_batches import class_examples_figure, small_batch_figure
from helpers.plots.training_speed import (
    ARM_COLOURS,
    evidence_figure,
    tuning_figure,
    update_evidence_figure,
)
from helpers.plots.units import dependency_figure

__all__ = [
    "ARM_COLOURS",
    "bandwidth_figure",
    "batch_noise_figure",
    "batch_size_figure",
    "class_examples_figure",
    "dependency_figure",
    "drift_figure",
    "evidence_figure",
    "gamma_beta_fit_figure",
    "layer_histograms_figure",
    "ln_geometry_figure",
    "ln_geometry_views_figure",
    "norm_family_figure",
    "norm_family_panels_figure",
    "norm_free_curves_figure",
    "saved_bytes_figure",
    "other_samples_figure",
    "s_shape_figure",
    "pooling_figure",
    "small_batch_figure",
    "stored_runs_figure",
    "tuning_figure",
    "update_evidence_figure",
    "update_layer_histograms_figure",
    "update_ln_geometry_figure",
    "update_norm_family_figure",
    "update_other_samples_figure",
    "update_stored_runs_figure",
]
