"""The personal data detector: plain Python, no Django, so an agent or a benchmark can run it
alone. ``pii`` finds and masks, ``person_names`` finds names, ``not_personal`` tells a role
mailbox or a public resolver (level "info") from a person's value."""
