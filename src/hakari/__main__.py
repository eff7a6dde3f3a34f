from hakari.cli import app

app(prog_name="hakari")
