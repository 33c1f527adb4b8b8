"""Orchestration in time: the arm-run skeleton (arm_run.py) with its ramp and step jobs and the streaming
loop, limit sweeps, servo moves, the record loop, campaigns and their reports, offline replays; the settings
checks, the one-owner rule and the stop signals every run goes through.

A run takes a device, a Clock and (where it records) a CSV writer, and reports progress through callbacks.
It never prints and never reads the keyboard: the command line feeds it.
"""
