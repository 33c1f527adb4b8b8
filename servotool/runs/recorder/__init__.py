"""The flight recorder's loop and the telemetry sources it reads."""
