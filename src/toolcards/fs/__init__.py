"""The file system every domain stands on: where trees live, atomic writes, tree usage.

Below the domains and beside the core: the workspace, the sandbox, the store and the
adapters import it; it imports only the core's lookup and the errors, and no core module
imports it, so :mod:`toolcards.core` stays the card contract and the pipeline.

* :mod:`toolcards.fs._locations`: the workspaces root, the trees in it, toolcards' own
  internal directory.
* :mod:`toolcards.fs._atomic_write`: replacing a file so a reader sees old or new, never a mix.
* :mod:`toolcards.fs._tree_usage`: how much space a tree uses, cheaply enough for every change.
"""

__all__: list[str] = []
