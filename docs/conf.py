"""Sphinx configuration of the rubrictools documentation (build: README's docs command)."""

from __future__ import annotations

import importlib.util
import os

import rubrictools

# Offline builds: the executed pages' kernels inherit these. litellm reads its bundled cost map,
# and tiktoken (Inspect AI's mock model counts tokens with it, guides/inspect.md) reads the
# encodings litellm ships instead of downloading them.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
_litellm = importlib.util.find_spec("litellm")
if _litellm is not None and _litellm.submodule_search_locations:
    _where = next(iter(_litellm.submodule_search_locations))
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", os.path.join(_where, "litellm_core_utils", "tokenizers"))

project = "rubrictools"
author = "the rubrictools authors"
release = getattr(rubrictools, "__version__", "")
extensions = [
    "myst_nb",  # Markdown pages and the notebooks, executed at build time (offline: scripted judges)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.napoleon",  # the numpy-style docstrings
    "sphinx.ext.viewcode",
]
source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "notebooks/templates", "notebooks/offline_export.json", "**/.ipynb_checkpoints"]
autosummary_generate = True
templates_path = ["_templates"]  # a class page: its docstring and its own documented members
autodoc_typehints = "none"  # the signatures show the types; the docstrings say what they mean
# no default members: a module page lists its own; a class page (the template) shows its documented methods
napoleon_google_docstring = False
napoleon_numpy_docstring = True
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3
nb_execution_mode = "cache"  # each notebook runs once, then again only when it changes
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_mime_priority_overrides = [
    # lower is preferred: a chart's SVG first (no JavaScript, no network), then HTML: a widget's static
    # snapshot (what notebooks/offline_export.json shows) over its live view, which needs a kernel
    ("html", "image/svg+xml", 1),
    ("html", "text/html", 2),
    ("html", "application/vnd.jupyter.widget-view+json", 3),
]
suppress_warnings = ["mystnb.unknown_mime_type"]
html_theme = "pydata_sphinx_theme"
html_title = "rubrictools"
html_static_path = ["_static"]
html_css_files = ["rubrictools.css"]
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2, "header_links_before_dropdown": 4}
