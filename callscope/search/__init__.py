"""Search across calls: the query syntax, the words each engine indexes, the entries of an analysed call, the
marked words of a hit and the segment vectors meaning search compares (the catalog's queries: catalog/search.py)."""
