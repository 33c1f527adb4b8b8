"""Pure math on recordings: lag fits, step metrics, sweep stall detection, offline shaper replays."""
