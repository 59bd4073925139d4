"""mino-memory-files: the user memory as one Markdown file per memory.

Modules: ``names`` (the rules for names, types and fields), ``store`` (reading the folder,
the skip rules, rendering the index), ``writer`` (the atomic save), ``tools``
(memory_view, memory_save), ``commands`` (``mino memory ...``), ``plugin`` (the hooks).
"""
__version__ = "0.1.0"
