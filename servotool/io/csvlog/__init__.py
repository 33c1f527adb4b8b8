"""servotool-csv v1: the timestamped recording every run writes, and its reader.

Layout (README, "The CSV format"): comment header lines `# key: value` (servotool-csv, created, tool,
command, device, any extra keys such as realtime, then config and units as one-line JSON), one column header
line, one row per event in time order, and a closing `# end: complete` or `# end: interrupted: <reason>`.

Guarantees: every row is flushed to the OS as it is written, so a crash loses at most the row being written
(QueuedCsvLogWriter, for a stream that must never wait for the disk: a thread writes the rows in batches at
least every 50 ms, so a crash loses at most that much, and close() writes every row before the end line); a
file without its end line reads back as interrupted; a file that is not servotool-csv is refused with one
error that names it.

The modules: header (format, metadata, reading the header), writer, rows (what both body readers share),
arrow_reader (with pyarrow), plain_reader (without), reader (read_csv, read_columns, read_meta).
The reader's switches (HAVE_ARROW, THREADED_BYTES) live in arrow_reader, where they are read.
"""

from servotool.io.csvlog.arrow_reader import ArrowColumns
from servotool.io.csvlog.header import (
    FORMAT_NAME,
    FORMAT_VERSION,
    MAX_BAD_ROWS_LISTED,
    MAX_HEADER_LINE_BYTES,
    TAIL_BYTES,
    BadRow,
    CsvFormatError,
    CsvMeta,
    NotServotoolCsv,
    is_recording,
)
from servotool.io.csvlog.reader import Select, read_columns, read_csv, read_meta
from servotool.io.csvlog.writer import (
    CsvLogWriter,
    QueuedCsvLogWriter,
    RecordingBehind,
    command_line,
    device_slug,
    run_file_name,
    unique_path,
)

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MAX_BAD_ROWS_LISTED",
    "MAX_HEADER_LINE_BYTES",
    "TAIL_BYTES",
    "ArrowColumns",
    "BadRow",
    "CsvFormatError",
    "CsvLogWriter",
    "CsvMeta",
    "NotServotoolCsv",
    "QueuedCsvLogWriter",
    "RecordingBehind",
    "Select",
    "command_line",
    "device_slug",
    "is_recording",
    "read_columns",
    "read_csv",
    "read_meta",
    "run_file_name",
    "unique_path",
]
