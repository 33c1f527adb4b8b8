"""Files: the servotool-csv format, output and state folders."""
