from hakari.backends.cpu import choose_wait_policy
from hakari.cli import app

choose_wait_policy()  # before any command imports torch (docs/results/threads.md)

app(prog_name="hakari")
