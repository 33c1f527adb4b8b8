"""Orchestration in time: the streaming loop, ramp and step trials, limit sweeps, servo moves, replays.

A run takes a device, a Clock and (where it records) a CSV writer, and reports progress through callbacks.
It never prints and never reads the keyboard: the command line feeds it.
"""
