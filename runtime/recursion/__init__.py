"""Recursive queries (``LetRec``): the loop over (transaction, round) times."""
