"""Helpers every stage shares, one definition each.

Modules: `atomic.py` (the one way a file is written: whole or not at all), `infiles.py`
(the one way a file hakari was given is opened: a regular file, never a FIFO or device to
wait on), `checks.py` (the one validation layer for option values: `HakariInputError`
naming the option), `jsonl.py` (the one JSON Lines reader, and user JSONL fields by dotted
path), `outputs.py` (what a command may write, checked before any work), `records.py` (the
pydantic base of the records kept in JSON files), `redact.py` (the one redaction filter: no
credential printed or written), `regex.py` (user regexes on untrusted text in linear time,
RE2), `unicode.py` (text UTF-8 cannot encode: lone surrogates), `spreadsheet.py` (the one
rule for text cells of every CSV hakari writes: no spreadsheet formula).
"""
