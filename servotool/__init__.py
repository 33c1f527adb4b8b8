"""servotool: measure and explain what a robot controller does with the setpoints it is streamed."""

__version__ = "0.1.0"
