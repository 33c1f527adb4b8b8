"""Franka arms (FR3, FER) through libfranka's research interface: wire codec, reflex names, model limits."""
