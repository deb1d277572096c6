"""Sphinx configuration: MyST Markdown pages, the API from the docstrings (autodoc)."""

from sb3_reinforce.version import __version__

project = "sb3-reinforce"
author = "sb3-reinforce contributors"
copyright = "2026, sb3-reinforce contributors"  # noqa: A001 (Sphinx's name)
release = __version__
version = __version__

extensions = ["myst_parser", "sphinx.ext.autodoc", "sphinx.ext.viewcode"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
exclude_patterns = ["_build"]
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]
autodoc_member_order = "bysource"
autodoc_typehints = "description"
# The docs build offline: links to SB3's and Gymnasium's docs are plain URLs, not intersphinx.
nitpicky = False
html_theme = "alabaster"
html_title = f"sb3-reinforce {__version__}"
