"""mino-tools-fs: project file tools and a sandboxed Bash for mino.

The hook implementations are in :mod:`mino_tools_fs.plugin`; each tool lives in the
module named for what it does (``files``, ``edits``, ``bash``).
"""
__version__ = "0.1.0"
