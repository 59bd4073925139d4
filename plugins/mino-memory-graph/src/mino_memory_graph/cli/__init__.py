"""The mino memory commands: listing, purge, repair, the shared journal's commands."""
