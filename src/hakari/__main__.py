from hakari.backends.cpu import prefer_passive_wait
from hakari.cli import app

prefer_passive_wait()  # before any command imports torch (docs/results/threads.md)

app(prog_name="hakari")
