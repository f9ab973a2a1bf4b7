#!/usr/bin/env python3
"""Python's unicodedata NFC, the reference for the tokenizer's own (unicode_nfc_test.cpp).

    nfc_oracle.py CASES OUT

CASES has one hex-encoded UTF-8 text per line; OUT gets the hex of each one's NFC, a line each.
"""
import sys
import unicodedata

with open(sys.argv[1]) as cases, open(sys.argv[2], "w") as out:
    for line in cases:
        text = bytes.fromhex(line.strip()).decode("utf-8")
        out.write(unicodedata.normalize("NFC", text).encode("utf-8").hex() + "\n")
