"""`callscope backup` and `callscope restore`: one archive of a whole service (the catalog as portable rows, the
custom resources as YAML, the embedded Secrets, the objects the catalog names) and the way back into an empty one.

archive.py is the file format, rows.py the catalog's rows on either dialect, take.py the backup, restore.py the
restore and its consistency check. docs/operations.md, "Backup and restore", says how operators use them.
"""
