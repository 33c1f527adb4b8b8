"""Offline work on recorded files: analyze and shape."""
