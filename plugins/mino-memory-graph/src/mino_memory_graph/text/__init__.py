"""How a text becomes words and a vector (stems, hashing-v1 embeddings, the rebuild's worker)."""
