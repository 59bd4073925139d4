"""The data: the twelve operations, the graph they fold into, errors, and the filter every recalled text passes."""
