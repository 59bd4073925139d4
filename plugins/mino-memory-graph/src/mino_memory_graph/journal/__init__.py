"""Where the operations live: the journal file and the shared PostgreSQL journal (its table, checks, copies)."""
