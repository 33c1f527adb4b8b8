"""Files: the servotool-csv format and its fleet table, capture publishing, device locks, campaign and limits
YAML (line-numbered, comment-preserving), the user config, output and state folders."""
