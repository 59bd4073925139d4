"""Search and scoring over the state: routing, the Mnemo scorer, hybrid-v1, results."""
