"""The servo flight recorder core: bounded telemetry rings, hardware-error latch tracking, capture assembly.

Pure: fed telemetry frames, it returns what to publish; files are written by io/, devices are read by runs/.
"""
