"""The user's op files and their folders' helper modules (ops/folder_imports.py), named
`cudabench.ops.user.<file>_<hash>` and `cudabench.ops.user._folder_<hash>._ref`.

A process that an op's code starts (a multiprocessing Pool with spawn or forkserver)
imports this package to unpickle a function of an op file or of a helper by its name: it
learns the starting process's op files from the environment, so those names are found.
"""

from cudabench.ops.folder_imports import adopt_inherited

adopt_inherited()
