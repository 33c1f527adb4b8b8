"""Hiwonder-style STM32 board with bus servos (function 5): frame protocol, pyserial client, pty simulator."""
