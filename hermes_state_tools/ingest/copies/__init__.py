"""Aligning and merging the copies of one session: the files met for it, and what the database holds of it."""
