"""The raw-step confirmation is typed on a terminal, never read from a pipe."""

import os
import subprocess
import sys

import pytest

from servotool.cli.confirm import NotConfirmed, NoTerminal, confirm_typed


def _pty_with_answer(answer: bytes):
    master, slave = os.openpty()
    os.write(master, answer)
    return master, slave, os.ttyname(slave)


def test_typed_on_a_terminal_goes_ahead():
    master, slave, name = _pty_with_answer(b"RAW 10 J1\n")
    try:
        confirm_typed("danger", "RAW 10 J1", tty=name)
        assert b"RAW 10 J1" in os.read(master, 4096)  # the prompt went to the terminal
    finally:
        os.close(master)
        os.close(slave)


def test_wrong_answer_on_a_terminal_is_refused():
    master, slave, name = _pty_with_answer(b"yes\n")
    try:
        with pytest.raises(NotConfirmed):
            confirm_typed("danger", "RAW 10 J1", tty=name)
    finally:
        os.close(master)
        os.close(slave)


def test_a_file_is_not_a_terminal(tmp_path):
    f = tmp_path / "answer"
    f.write_text("RAW 10 J1\n")
    with pytest.raises(NoTerminal):
        confirm_typed("danger", "RAW 10 J1", tty=f)


def test_piped_answer_without_a_terminal_is_refused():
    code = (
        "from servotool.cli.confirm import confirm_typed, NoTerminal\n"
        "try:\n    confirm_typed('danger', 'RAW 10 J1')\nexcept NoTerminal:\n    print('refused')\n"
        "else:\n    print('went ahead')\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        input="RAW 10 J1\n",
        capture_output=True,
        text=True,
        start_new_session=True,
        timeout=60,
    )
    assert out.stdout.strip() == "refused", out.stderr


def test_the_prompt_is_folded_between_words_at_80_columns():
    import fcntl
    import struct
    import termios

    master, slave, name = _pty_with_answer(b"RAW 10 J1\n")
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    url = "fake://a-rather-long-host-name.example.org:12345/with/a/path?and=parameters&more=of-them"
    warning = f"RAW steps on a real arm ({url}): the controller may run away for 14-35x the step. " * 2
    try:
        confirm_typed(warning.strip(), "RAW 10 J1", tty=name)
        shown = os.read(master, 8192).decode().replace("\r", "")
    finally:
        os.close(master)
        os.close(slave)
    lines = [line for line in shown.split("\n") if line and not line.startswith("RAW 10 J1")]
    words = set(warning.split())
    for line in lines[:-1]:  # the warning's lines; the last is the question
        assert len(line) <= 80 or line.strip() in words, line
        assert all(w in words for w in line.split()), line  # no word cut in two
    assert any(url in line for line in lines)  # the URL whole on its line
