"""Sphinx configuration of the sparsecc user guide (MyST Markdown pages; built with -W in CI by
test/python/test_docs.py)."""

project = "sparsecc"
author = "the sparsecc authors"
extensions = ["myst_parser"]
source_suffix = {".md": "markdown"}
master_doc = "index"
exclude_patterns = ["_build"]
html_theme = "alabaster"
myst_heading_anchors = 3
