"""The analysis pipeline stages and their Ray actors."""
