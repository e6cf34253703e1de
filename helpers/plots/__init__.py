"""Figures: builders that take plain data (tensors, dicts, DataFrames) and return a Figure.

A dashboard's builder has an ``update_<builder>(fig, state)`` twin that shows a new state on a
figure the builder made, by setting its artists' data, so that a widget keeps one figure
(:mod:`helpers.widgets.core`); the builder lays the figure out once and the update keeps it.

A builder never calls ``plt.show()``: a notebook cell or a widget callback shows the
figure, and tests read the artists' data (line ydata, axis limits, titles) instead of
pixels. Figures are small (``DPI`` dots per inch) so stored notebooks stay small.

The shared sizes and colours are in :mod:`helpers.plots.core`; each notebook's builders
are in a module named for what they draw. Everything is importable from here.
"""

from helpers.plots.blocks import block_diagrams_figure, block_steps
from helpers.plots.bn_vs_ln import (
    batch_noise_figure,
    batch_size_figure,
    other_samples_figure,
    pooling_figure,
    update_other_samples_figure,
)
from helpers.plots.core import DPI, HIGHLIGHT, OTHER, find_line
from helpers.plots.formula import DRIFT_PANELS, drift_figure, gamma_beta_fit_figure
from helpers.plots.geometry import (
    GEOMETRY_VIEWS,
    ln_geometry_figure,
    ln_geometry_views_figure,
    update_ln_geometry_figure,
)
from helpers.plots.memory_and_speed import (
    bandwidth_figure,
    saved_bytes_figure,
    stability_figure,
    update_stability_figure,
)
from helpers.plots.norm_family import (
    block_grid,
    norm_family_figure,
    norm_family_panels_figure,
    update_norm_family_figure,
)
from helpers.plots.norm_free import NORM_FREE_COLOURS, norm_free_curves_figure, s_shape_figure
from helpers.plots.placement import (
    layer_histograms_figure,
    stored_runs_figure,
    update_layer_histograms_figure,
    update_stored_runs_figure,
)
from helpers.plots.small_batches import NORM_COLOURS, class_examples_figure, small_batch_figure
from helpers.plots.training_speed import (
    ARM_COLOURS,
    evidence_figure,
    tuning_figure,
    update_evidence_figure,
)
from helpers.plots.units import dependency_figure

__all__ = [
    "ARM_COLOURS",
    "block_diagrams_figure",
    "block_steps",
    "DPI",
    "GEOMETRY_VIEWS",
    "HIGHLIGHT",
    "NORM_COLOURS",
    "NORM_FREE_COLOURS",
    "OTHER",
    "bandwidth_figure",
    "batch_noise_figure",
    "batch_size_figure",
    "block_grid",
    "class_examples_figure",
    "dependency_figure",
    "DRIFT_PANELS",
    "drift_figure",
    "evidence_figure",
    "find_line",
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
    "stability_figure",
    "stored_runs_figure",
    "tuning_figure",
    "update_evidence_figure",
    "update_layer_histograms_figure",
    "update_ln_geometry_figure",
    "update_norm_family_figure",
    "update_other_samples_figure",
    "update_stability_figure",
    "update_stored_runs_figure",
]
