"""Command-line front end (typer + rich). No logic lives here: each command calls runs/ or analysis/;
render.py holds the shared verdicts and tables, live.py opening a device, progress and the exit rule."""
