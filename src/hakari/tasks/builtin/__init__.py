"""The built-in task files (YAML, one per task or family); no code."""
