"""Sphinx configuration: MyST Markdown pages with math, the API from the docstrings (autodoc), Furo's theme."""

from sphinx.application import Sphinx

from sb3_reinforce.version import __version__

project = "sb3-reinforce"
author = "sb3-reinforce contributors"
copyright = "2026, sb3-reinforce contributors"
release = __version__
version = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.viewcode", "sphinx.ext.mathjax"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
# $...$ and $$...$$ are rendered by MathJax (loaded by the reader's browser; the build itself stays offline).
myst_enable_extensions = ["colon_fence", "dollarmath", "amsmath"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# Types only for the documented parameters: an argument only SB3 passes (_init_setup_model) stays out.
autodoc_typehints_description_target = "documented"
# The docs build offline: links to SB3's and Gymnasium's docs are plain URLs, not intersphinx.
nitpicky = False
# Furo: a maintained theme whose tables and code blocks scroll sideways instead of spilling past the column.
html_theme = "furo"
html_title = f"sb3-reinforce {__version__}"
html_static_path = ["_static"]
html_css_files = ["custom.css"]


def _drop_private_parameters(
    app: Sphinx,
    what: str,
    name: str,
    obj: object,
    options: object,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str, str | None] | None:
    """Hide constructor arguments that only SB3's own loading passes (``_init_setup_model``) from signatures."""
    if not signature:
        return None
    parameters = [part for part in signature.strip("()").split(", ") if part and not part.startswith("_")]
    return f"({', '.join(parameters)})", return_annotation


def setup(app: Sphinx) -> None:
    app.connect("autodoc-process-signature", _drop_private_parameters)
