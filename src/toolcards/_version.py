"""The package's version: the one place it is written (the build reads it from here, and
``toolcards.__version__`` without importing ``importlib.metadata``)."""

__version__ = "0.3.0.dev0"
