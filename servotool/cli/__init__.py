"""Command-line front end (typer + rich). No logic lives here: each command calls runs/ or analysis/."""
