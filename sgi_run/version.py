"""The package's version: the one place a release sets it (CHANGELOG.md), read by the wheel's metadata (pyproject's
``[tool.hatch.version]``) and by every module that records it, none of which need import the package's API for it."""
__version__ = "0.1.0"
