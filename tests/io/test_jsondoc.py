"""JSON documents: JSON-safe values, parts encoded ahead spliced in, compact and indented forms alike."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from servotool.io.jsondoc import JsonText, compact, encode, json_safe, with_member


def test_values_are_made_json_safe():
    numbers = [np.float64(1.5), np.int64(3), (math.inf, -math.inf)]
    doc = {"a": math.nan, "b": numbers, 4: Path("/x"), "c": None}
    assert json_safe(doc) == {"a": None, "b": [1.5, 3, [None, None]], "4": "/x", "c": None}
    assert json.loads(encode(doc)) == json_safe(doc)


def test_parts_encoded_ahead_read_as_the_values_they_encode():
    files = [{"file": f"f{k}.csv", "L": k / 3, "se": math.nan, "notes": ["a,b", '"q"']} for k in range(5)]
    doc = {"files": files, "problems": [{"file": "\0json:0\0", "reason": "looks like a slot"}]}
    ahead = {**doc, "files": [with_member(compact(f), "plot", None) for f in files]}
    plain = {**doc, "files": [{**f, "plot": None} for f in files]}
    assert encode(ahead) == encode(plain)
    assert encode(ahead, indent=2) == encode(plain, indent=2)
    assert json.loads(encode(ahead)) == json_safe(plain)


def test_a_member_is_added_at_the_end_of_an_object():
    assert with_member(JsonText("{}"), "plot", "p.png") == JsonText('{"plot":"p.png"}')
    assert with_member(compact({"a": 1}), "plot", None) == JsonText('{"a":1,"plot":null}')
    assert list(with_member({"a": 1}, "plot", None)) == ["a", "plot"]
