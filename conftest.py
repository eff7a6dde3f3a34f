"""Repository-wide pytest setup: tests never reach the network (there is none in CI).

Without these, a hub lookup that cannot succeed retries for minutes before failing.
"""

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
