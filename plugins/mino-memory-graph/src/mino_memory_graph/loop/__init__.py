"""The memory in a turn: episodes, the recall block, steer, reflection, guard, consolidation, the tools."""
