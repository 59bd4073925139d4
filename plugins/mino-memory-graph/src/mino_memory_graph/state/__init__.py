"""What is derived from the journal: the SQLite index, the partial graph read from it, the cache."""
